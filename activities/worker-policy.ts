/**
 * The worker's policy as the workflow asks for it: caps on Session settings, whether control must be
 * signed, and the check of a signature's MAC. Run as local activities, so the answers are markers in
 * history: a replay never asks again, and keys rotated later never change a past verdict. Keys stay
 * in this process; the workflow learns key ids and verdicts only.
 */
import { timingSafeEqual } from 'node:crypto';
import type { PolicyActivities } from '../contract/activity-contract.js';
import { controlMac, signingInput, type ControlKey } from '../contract/control-signature.js';
import type { Budget } from '../contract/usage.js';
import { DEFAULT_WORKER_POLICY, WorkerPolicy } from '../contract/worker-policy.js';

/** The worker configuration the policy activities answer from. */
export interface PolicyConfig {
  caps?: Partial<WorkerPolicy['caps']>;
  allowedAgentTaskQueues?: string[];
  /** Control keys (HARNESS_CONTROL_KEYS): any given turns signed control on. */
  controlKeys?: ControlKey[];
  /** The most any Session may spend (HARNESS_BUDGET_MAX_*). */
  budgetMax?: Budget;
  /** False forbids speculative agent steps (HARNESS_SPECULATIVE_AGENT_STEP=off). */
  speculativeAgentStep?: boolean;
}

export function createPolicyActivities(config: PolicyConfig = {}): PolicyActivities {
  const keys = config.controlKeys ?? [];
  const policy = WorkerPolicy.parse({
    ...DEFAULT_WORKER_POLICY,
    caps: { ...DEFAULT_WORKER_POLICY.caps, ...config.caps },
    allowedAgentTaskQueues: config.allowedAgentTaskQueues ?? [],
    signedControl: keys.length > 0,
    keyIds: keys.map((k) => k.id),
    budgetMax: config.budgetMax ?? {},
    speculativeAgentStep: config.speculativeAgentStep ?? true,
  });
  return {
    workerPolicy: () => Promise.resolve(policy),
    verifyControl: ({ kind, sessionId, payload, signature }) => {
      const key = keys.find((k) => k.id === signature.keyId);
      if (!key)
        return Promise.resolve({ valid: false, reason: `key "${signature.keyId}" is not configured on this worker` });
      const expected = Buffer.from(controlMac(key.secret, signingInput(kind, sessionId, signature.expiresAt, payload)));
      const given = Buffer.from(signature.mac);
      const valid = given.length === expected.length && timingSafeEqual(given, expected);
      return Promise.resolve({
        valid,
        reason: valid ? null : 'the MAC does not match (another Session, an altered payload or another key)',
      });
    },
  };
}
