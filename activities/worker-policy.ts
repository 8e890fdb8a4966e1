/**
 * The worker's policy as the workflow asks for it: caps on Session settings, whether control must be
 * signed, and the check of a signature's MAC. Run as local activities, so the answers are markers in
 * history: a replay never asks again, and keys rotated later never change a past verdict. Keys stay
 * in this process; the workflow learns key ids and verdicts only.
 */
import { timingSafeEqual } from 'node:crypto';
import type { PolicyActivities } from '../contract/activity-contract.js';
import {
  ControlSignature,
  controlMac,
  signingInput,
  type ControlKey,
  type SignedKind,
} from '../contract/control-signature.js';
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
  /**
   * The longest a signature may still be valid when it is checked (HARNESS_MAX_SIGNATURE_LIFETIME_MS,
   * default one hour): an `expiresAt` further ahead is refused, so a signature never stays usable,
   * nor has to be remembered against replay, for longer than this after it is accepted.
   */
  maxSignatureLifetimeMs?: number;
}

/** How long a signature may still be valid when a worker checks it, unless configured. */
export const DEFAULT_MAX_SIGNATURE_LIFETIME_MS = 3_600_000;

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
  const maxLifetimeMs = config.maxSignatureLifetimeMs ?? DEFAULT_MAX_SIGNATURE_LIFETIME_MS;
  const macMatches = (key: ControlKey, kind: SignedKind, sessionId: string, payload: unknown, s: ControlSignature) => {
    const expected = Buffer.from(controlMac(key.secret, signingInput(kind, sessionId, s.expiresAt, payload)));
    const given = Buffer.from(s.mac);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  const tooLong = (kind: SignedKind, expiresAt: number, at: number) =>
    expiresAt - at > maxLifetimeMs
      ? `${kind} signature is valid until ${dateOf(expiresAt)}, longer than this worker's maximum signature lifetime of ${maxLifetimeMs} ms (HARNESS_MAX_SIGNATURE_LIFETIME_MS)`
      : null;
  const mismatch = 'the MAC does not match (another Session, an altered payload or another key)';
  return {
    workerPolicy: () => Promise.resolve(policy),
    verifyControl: ({ kind, sessionId, payload, signature }) => {
      const key = keys.find((k) => k.id === signature.keyId);
      if (!key)
        return Promise.resolve({ valid: false, reason: `key "${signature.keyId}" is not configured on this worker` });
      // Runs from before `current-control-policy` get the lifetime bound too: a verdict, not workflow code.
      const long = tooLong(kind, signature.expiresAt, Date.now());
      if (long !== null) return Promise.resolve({ valid: false, reason: long });
      const valid = macMatches(key, kind, sessionId, payload, signature);
      return Promise.resolve({ valid, reason: valid ? null : mismatch });
    },
    checkControl: ({ kind, sessionId, payload, signature, at }) => {
      const verdict = (accepted: boolean, keyId: string | null, reason: string | null) =>
        Promise.resolve({ required: keys.length > 0, accepted, keyId, reason });
      // Without keys nothing is signed or checked: a signature sent anyway is ignored, as before.
      if (keys.length === 0) return verdict(true, null, null);
      if (signature === undefined || signature === null) {
        return verdict(false, null, `unsigned ${kind}: this worker accepts only signed control (HARNESS_CONTROL_KEYS)`);
      }
      const parsed = ControlSignature.safeParse(signature);
      if (!parsed.success) return verdict(false, null, `${kind} signature is malformed`);
      const s = parsed.data;
      const key = keys.find((k) => k.id === s.keyId);
      if (!key) {
        return verdict(
          false,
          null,
          `${kind} signed with key "${s.keyId}", which is not one of this worker's control keys`,
        );
      }
      if (s.expiresAt <= at) return verdict(false, null, `${kind} signature expired at ${dateOf(s.expiresAt)}`);
      const long = tooLong(kind, s.expiresAt, at);
      if (long !== null) return verdict(false, null, long);
      if (!macMatches(key, kind, sessionId, payload, s))
        return verdict(false, null, `bad ${kind} signature: ${mismatch}`);
      return verdict(true, key.id, null);
    },
  };
}

/** An epoch-ms instant as ISO text; far-future values that Date cannot show are given as numbers. */
function dateOf(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} (epoch ms)` : date.toISOString();
}
