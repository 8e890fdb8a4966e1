/**
 * What a worker's configuration imposes on the Sessions it runs: caps on Session settings and
 * whether control signals must be signed. The workflow asks for it once per run through the
 * `workerPolicy` local activity, so the answer is a marker in history and replay never asks again.
 * It carries key ids, never keys.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';
import { Budget } from './usage.js';

/** Upper bounds a worker puts on Session settings (worker/config.ts reads them from HARNESS_MAX_*). */
export const SettingCaps = z.object({
  maxAgentSteps: z.number().int().min(1),
  maxRepeatedFailures: z.number().int().min(1),
  modelAttempts: z.number().int().min(1),
  modelTimeoutMs: z.number().int().min(100),
  agentTimeoutMs: z.number().int().min(100),
  toolTimeoutMs: z.number().int().min(100),
  agentContextBytes: z.number().int().min(4_096),
  /** Longest idle timeout; null: none (a Session may also never close on its own). */
  idleTimeoutMs: z.number().int().min(1_000).nullable(),
});
export type SettingCaps = z.infer<typeof SettingCaps>;

/** The caps a worker applies when its configuration names none. Every default Setting is within them. */
export const DEFAULT_SETTING_CAPS: SettingCaps = {
  maxAgentSteps: 64,
  maxRepeatedFailures: 10,
  modelAttempts: 5,
  modelTimeoutMs: 120_000,
  agentTimeoutMs: 600_000,
  toolTimeoutMs: 600_000,
  agentContextBytes: 1_000_000,
  idleTimeoutMs: null,
};

/** The `workerPolicy` local activity's answer. */
export const WorkerPolicy = z.object({
  caps: SettingCaps,
  /**
   * Task queues besides the Session's own that `settings.agentTaskQueue` may name. A start that names
   * another fails at once (`SettingNotAllowed`); a continued run falls back to its own queue.
   */
  allowedAgentTaskQueues: z.array(z.string()),
  /** True when approvals, tool results, commands and a message's `from` must carry a valid signature. */
  signedControl: z.boolean(),
  /** Ids of the keys that verify signatures (never the keys). */
  keyIds: z.array(z.string()),
  /**
   * The most any Session may spend (`HARNESS_BUDGET_MAX_*`); the agent-step activity refuses a step
   * over it. The workflow needs it to tell whether a speculative step sent before the relevance call's
   * tokens were counted would still have been sent after (workflows/agent/speculation.ts).
   */
  budgetMax: Budget.default({}),
  /** False when the worker forbids speculative agent steps (`HARNESS_SPECULATIVE_AGENT_STEP=off`), whatever a Session set. */
  speculativeAgentStep: z.boolean().default(true),
});
export type WorkerPolicy = z.infer<typeof WorkerPolicy>;

/** The policy of a worker configured with nothing: default caps, no other task queue, unsigned control. */
export const DEFAULT_WORKER_POLICY: WorkerPolicy = {
  caps: DEFAULT_SETTING_CAPS,
  allowedAgentTaskQueues: [],
  signedControl: false,
  keyIds: [],
  budgetMax: {},
  speculativeAgentStep: true,
};

/** One setting the worker's caps changed: what the start asked for and what the Session uses. */
export const SettingClamp = z.object({
  field: z.string(),
  asked: z.union([z.number(), z.string(), z.null()]),
  used: z.union([z.number(), z.string(), z.null()]),
  /** The run whose start applied it (1 for a fresh start). */
  run: z.number().int().positive(),
});
export type SettingClamp = z.infer<typeof SettingClamp>;
