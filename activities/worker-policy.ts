/**
 * The worker's policy as the workflow asks for it: caps on Session settings and whether control
 * signals must be signed. Run as local activities, so the answers are markers in history: a replay
 * never asks again, and a worker whose configuration changed later never changes a past decision.
 */
import type { PolicyActivities } from '../contract/activity-contract.js';
import { DEFAULT_WORKER_POLICY, WorkerPolicy } from '../contract/worker-policy.js';

/** The worker configuration the policy activities answer from. */
export interface PolicyConfig {
  caps?: Partial<WorkerPolicy['caps']>;
  allowedAgentTaskQueues?: string[];
}

export function createPolicyActivities(config: PolicyConfig = {}): PolicyActivities {
  const policy = WorkerPolicy.parse({
    ...DEFAULT_WORKER_POLICY,
    caps: { ...DEFAULT_WORKER_POLICY.caps, ...config.caps },
    allowedAgentTaskQueues: config.allowedAgentTaskQueues ?? [],
  });
  return {
    workerPolicy: () => Promise.resolve(policy),
  };
}
