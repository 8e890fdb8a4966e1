/**
 * Task phases: opening a new one (a new-phase decision, a first task, a `set-goals` command) and
 * offering the one that ended to the compaction role.
 */
import {
  LIMITS,
  STAGE,
  keepLast,
  type DecisionRecord,
  type Goal,
  type Phase,
  type SessionState,
} from '../../contract/state.js';
import { patched } from '@temporalio/workflow';
import { HANDOFF_BYTES } from '../../contract/handoff.js';
import { clipBytes } from '../../contract/text.js';
import { fallbackSummary, phaseRecord } from './handoff.js';
import type { SessionContext } from '../stages/session-context.js';
import { runStage, type StageShow } from '../stages/stage-runner.js';

/** Ends `phase` before input `seq`, if it has not ended yet. */
export function endPhase(phase: Phase, seq: number): void {
  if (phase.endedAtSeq === null) phase.endedAtSeq = Math.max(phase.startedAtSeq, seq - 1);
}

/** Ends the current phase (if any) with the given compaction state and starts a new one with `goal`. */
export function openPhase(state: SessionState, goal: Goal, endedAs: 'open' | 'skipped'): void {
  const previous = state.phases.at(-1);
  if (previous && previous.endedAtSeq === null) {
    endPhase(previous, goal.setAtSeq);
    previous.compaction = endedAs === 'skipped' ? 'skipped' : previous.compaction;
  }
  state.goals.phase = goal;
  state.phases.push({
    index: previous ? previous.index + 1 : 0,
    goal,
    startedAtSeq: goal.setAtSeq,
    endedAtSeq: null,
    compaction: 'open',
    summary: null,
  });
  keepLast(state.phases, LIMITS.phases);
}

/**
 * Offers the finished phase's whole record to the compaction role for its hand-off summary; when the
 * role fails, the phase keeps the deterministic hand-off of the same record (marked `failed`).
 * Sessions recorded before hand-offs replay the old request, made of the user's inputs alone.
 */
export async function compactPhase(
  ctx: SessionContext,
  phaseIndex: number,
  record: DecisionRecord,
  beside = false,
): Promise<void> {
  const { state, activities } = ctx;
  const phase = state.phases.find((p) => p.index === phaseIndex);
  if (!phase) return;
  if (patched('phase-handoff')) {
    const request = phaseRecord(state, phase);
    // Beside other stages it reports its start and end as events but leaves the current stage to them.
    const show: StageShow = beside ? quietShow(ctx.show) : ctx.show;
    const result = await runStage(record, STAGE.compact, show, () => activities.compact(request), { reserve: beside });
    if (result.ok) {
      phase.compaction = 'compacted';
      phase.summary = clipBytes(result.value.summary, HANDOFF_BYTES);
    } else {
      phase.compaction = 'failed';
      phase.summary = fallbackSummary(request);
      record.fallbacks.push(`compaction: ${result.reason}; the phase keeps a hand-off built from its record`);
    }
    return;
  }
  const inputs = state.history.filter((h) => h.phaseIndex === phaseIndex).map((h) => h.text);
  const result = await runStage(record, STAGE.compact, ctx.show, () =>
    activities.compact({ phaseGoal: phase.goal.text, inputs }),
  );
  if (result.ok) {
    phase.compaction = 'compacted';
    phase.summary = result.value.summary.slice(0, LIMITS.replyChars);
  } else {
    phase.compaction = 'failed';
    record.fallbacks.push(`compaction: ${result.reason}; phase kept uncompacted`);
  }
}

/**
 * Starts compacting the phase that just ended, beside the new phase's environment preparation. The
 * request is built from the record at once, so what runs meanwhile cannot change it. The returned
 * function waits for the hand-off (the new phase's agent needs it), showing the compaction stage while
 * it is still running.
 */
export function compactBeside(ctx: SessionContext, phaseIndex: number, record: DecisionRecord): () => Promise<void> {
  let done = false;
  const running = compactPhase(ctx, phaseIndex, record, true).finally(() => {
    done = true;
  });
  // Awaited later; only a cancellation can reject it, and that must not count as unhandled meanwhile.
  running.catch(() => undefined);
  return async () => {
    if (!done) ctx.show(STAGE.compact);
    await running;
  };
}

/** A StageShow that reports stage events without moving the current stage. */
function quietShow(show: StageShow): StageShow {
  const quiet: StageShow = () => undefined;
  if (show.started) quiet.started = show.started;
  if (show.finished) quiet.finished = show.finished;
  return quiet;
}
