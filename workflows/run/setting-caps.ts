/**
 * Server-side limits win: a worker's caps bound every Session setting, whatever the start asked for.
 * Pure functions of SessionState and the worker's policy; the workflow applies them at the start of
 * each run (session.ts), so a worker whose caps tightened also bounds Sessions already running.
 */
import type { SettingCaps, SettingClamp, WorkerPolicy } from '../../contract/worker-policy.js';
import { LIMITS, keepLast, type SessionState } from '../../contract/state.js';
import { idleTimeoutOf } from './lifecycle.js';

/** The numeric settings a cap of the same name bounds from above. */
const NUMERIC_CAPS = [
  'maxAgentSteps',
  'maxRepeatedFailures',
  'modelAttempts',
  'modelTimeoutMs',
  'agentTimeoutMs',
  'toolTimeoutMs',
  'agentContextBytes',
] as const satisfies ReadonlyArray<keyof SettingCaps>;

export type CapResult = { kind: 'applied'; clamps: SettingClamp[] } | { kind: 'refused'; reason: string };

/**
 * Brings `state.settings` within the worker's caps and records each change in `settingsClamped`.
 * An `agentTaskQueue` off the allow-list refuses a fresh start (nothing has run there yet, and the
 * starter learns at once); a continued run whose queue is no longer allowed falls back to its own.
 */
export function applyCaps(
  state: SessionState,
  policy: WorkerPolicy,
  run: { ownQueue: string; fresh: boolean; now: number },
): CapResult {
  const { ownQueue, fresh, now } = run;
  const settings = state.settings;
  const clamps: SettingClamp[] = [];
  const clamp = (field: string, asked: number | string | null, used: number | string | null) =>
    clamps.push({ field, asked, used, run: state.run });

  const queue = settings.agentTaskQueue;
  if (queue !== undefined && queue !== ownQueue && !policy.allowedAgentTaskQueues.includes(queue)) {
    if (fresh) {
      const allowed = [ownQueue, ...policy.allowedAgentTaskQueues].join(', ');
      return {
        kind: 'refused',
        reason: `settings.agentTaskQueue "${queue}" is not allowed by this worker (allowed: ${allowed}; HARNESS_ALLOWED_AGENT_TASK_QUEUES)`,
      };
    }
    delete settings.agentTaskQueue;
    clamp('agentTaskQueue', queue, null);
  }
  for (const field of NUMERIC_CAPS) {
    const cap = policy.caps[field];
    if (settings[field] > cap) {
      clamp(field, settings[field], cap);
      settings[field] = cap;
    }
  }
  const idleCap = policy.caps.idleTimeoutMs;
  if (idleCap !== null) {
    const effective = idleTimeoutOf(state);
    if (effective === null || effective > idleCap) {
      clamp('idleTimeoutMs', settings.idleTimeoutMs ?? null, idleCap);
      settings.idleTimeoutMs = idleCap;
    }
  }
  if (clamps.length > 0) {
    state.settingsClamped.push(...clamps);
    keepLast(state.settingsClamped, LIMITS.settingsClamped);
    state.controlEvents.push({ at: now, kind: 'command', id: 'worker-caps', summary: describeClamps(clamps) });
    keepLast(state.controlEvents, LIMITS.controlEvents);
    state.counts.controlEvents++;
  }
  return { kind: 'applied', clamps };
}

/** One line for a control event: `maxAgentSteps 150 → 64, agentTaskQueue "x" → own queue`. */
export function describeClamps(clamps: SettingClamp[]): string {
  const shown = (v: number | string | null, field: string) =>
    v === null
      ? field === 'agentTaskQueue'
        ? "the Session's own queue"
        : 'unset'
      : typeof v === 'string'
        ? `"${v}"`
        : String(v);
  return `settings capped by the worker: ${clamps.map((c) => `${c.field} ${shown(c.asked, c.field)} → ${shown(c.used, c.field)}`).join(', ')}`;
}
