/**
 * Runs one stage of an input's processing: shows it, times it, and turns any failure into a
 * recorded fallback, so a failing helper model degrades an input and never fails the workflow.
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure, isCancellation } from '@temporalio/workflow';
import { BUDGET } from '../../contract/budget.js';
import type { DecisionRecord, SessionStage, StageRecord } from '../../contract/state.js';
import { clipBytes } from '../../contract/text.js';

export type StageResult<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * Shows a stage in the Web UI's current details (without one, re-renders the current stage); the
 * Session's own also reports each stage run here as it starts and ends, for its event stream.
 */
export interface StageShow {
  (stage?: SessionStage): void;
  started?: (stage: SessionStage, at: number) => void;
  finished?: (stage: StageRecord) => void;
}

/**
 * Runs `fn` as stage `name` of `record`, after `show(name)`. Cancellation passes through. The stage's
 * entry joins `record.stages` when it ends, or, with `reserve`, when it starts (a stage that runs
 * beside others keeps its place in the order the stages began).
 */
export async function runStage<T>(
  record: DecisionRecord,
  name: SessionStage,
  show: StageShow,
  fn: () => Promise<T>,
  options: { reserve?: boolean } = {},
): Promise<StageResult<T>> {
  show(name);
  const startedAt = Date.now();
  show.started?.(name, startedAt);
  const stage: StageRecord = { stage: name, startedAt, endedAt: startedAt, outcome: 'running' };
  if (options.reserve) record.stages.push(stage);
  const end = (outcome: string) => {
    stage.endedAt = Date.now();
    stage.outcome = outcome;
    if (!options.reserve) record.stages.push(stage);
    show.finished?.(stage);
  };
  try {
    const value = await fn();
    end('ok');
    return { ok: true, value };
  } catch (err) {
    if (isCancellation(err)) throw err;
    const reason = clipBytes(describeFailure(err), BUDGET.reason);
    end(`fallback: ${reason}`);
    return { ok: false, reason };
  }
}

/** Records a stage that had nothing to run, with its outcome (`skipStage` for one that did not run). */
export function recordStage(record: DecisionRecord, name: SessionStage, outcome: string): void {
  const now = Date.now();
  record.stages.push({ stage: name, startedAt: now, endedAt: now, outcome });
}

/** Records a stage that did not run, and why. */
export function skipStage(record: DecisionRecord, name: SessionStage, why: string): void {
  recordStage(record, name, `skipped: ${why}`);
}

/** One line saying why an activity failed, for decision records. */
export function describeFailure(err: unknown): string {
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    const retry = err.retryState ? ` [${String(err.retryState)}]` : '';
    if (cause instanceof ApplicationFailure) return `${cause.type ?? 'Error'}: ${cause.message}${retry}`;
    if (cause instanceof TimeoutFailure) return `timeout (${String(cause.timeoutType)})${retry}`;
    return `${cause?.message ?? err.message}${retry}`;
  }
  if (err instanceof ApplicationFailure) return `${err.type ?? 'Error'}: ${err.message}`;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
