/**
 * Joining a message into the running turn (`whileBusy: merge`). A message sent to merge is queued
 * marked with the turn it asks to join (ledger/intake.ts); at the turn's next step boundary the
 * agent loop judges it here, as any input is judged: relevance against today's goals, then the
 * decision table. One that keeps the task where it is (`continue`, `conflict`, `uncertain`,
 * `degraded`) is bound into the turn: its history entry says `busy.merged`, its decision record
 * ends `merged`, the `input.merged` event names the turn, and the next step's request has it in the
 * transcript. One that would open a new phase or is out of scope stays queued, as `enqueue` would
 * have it, and the task-control loop takes it after the turn.
 *
 * Only the head of the queue is taken, and only while it asks to join this turn: inputs are bound
 * in seq order, and one queued before it waits its turn.
 */
import { STAGE, type ActiveTurn, type Decision, type PendingInput, type SessionState } from '../../contract/state.js';
import { finishRecord, newRecord } from '../ledger/decision-records.js';
import { emit } from '../ledger/events.js';
import { bindNext } from '../ledger/intake.js';
import type { SessionContext } from '../stages/session-context.js';
import { runStage } from '../stages/stage-runner.js';
import { decide } from '../understanding/decide.js';
import { relevanceRequest } from '../understanding/lookahead.js';
import { userItem } from './step-request.js';

/** Decisions that keep the goals and capabilities: a message judged so joins the running turn. */
const JOINS: ReadonlySet<Decision> = new Set<Decision>(['continue', 'conflict', 'uncertain', 'degraded']);

/** Whether the head of the queue asks to join `turn` and has not been judged yet. */
export function waitsToJoin(state: SessionState, turn: ActiveTurn): boolean {
  const busy = state.queue[0]?.busy;
  return busy?.mode === 'merge' && busy.turn === turn.seq && busy.merged === undefined;
}

/** Judges the messages waiting to join `turn`, in order, and binds into it those that may join. */
export async function mergeWaiting(ctx: SessionContext, turn: ActiveTurn): Promise<void> {
  const { state } = ctx;
  while (waitsToJoin(state, turn) && !turn.interrupted) {
    const next = state.queue[0] as PendingInput & { busy: NonNullable<PendingInput['busy']> };
    const { session, phase } = state.goals;
    if (!session || !phase) {
      next.busy.merged = false;
      return;
    }
    const record = newRecord(next);
    const judge = () => ctx.activities.relevance(relevanceRequest(next, phase.text, session.text));
    const ahead = ctx.lookahead?.take(next.seq, phase.text, session.text);
    const result = await runStage(record, STAGE.understand, ctx.show, () => (ahead ? ahead.catch(judge) : judge()));
    const thresholds = state.settings.thresholds;
    const outcome = result.ok
      ? decide({ firstTask: false, relevance: { ok: true, scores: result.value }, thresholds })
      : decide({ firstTask: false, relevance: { ok: false, reason: result.reason }, thresholds });
    // Judged against goals that may have moved meanwhile, or the turn was interrupted: it waits its turn.
    if (!JOINS.has(outcome.decision) || turn.interrupted || state.queue[0] !== next) {
      next.busy.merged = false;
      continue;
    }
    const bound = bindNext(state, Date.now());
    if (!bound) return;
    // The signature has done its work once the input is bound (session.ts does the same); claims
    // were checked on arrival in every run that can merge.
    delete bound.signature;
    bound.busy = { ...next.busy, merged: true };
    bound.decision = outcome.decision;
    state.transcript.push(userItem(bound));
    if (result.ok && Number.isFinite(result.value.phaseRelevance) && Number.isFinite(result.value.sessionRelevance)) {
      record.scores = { phase: result.value.phaseRelevance, session: result.value.sessionRelevance };
    }
    record.decision = outcome.decision;
    record.bands = outcome.bands;
    record.degraded = outcome.degraded;
    const now = Date.now();
    const reason = `joined the running turn of input #${turn.seq} (whileBusy: merge)`;
    record.agent = { outcome: 'merged', reason, startedAt: now, endedAt: now, reply: null, steps: 0, toolCalls: [] };
    emit(state, {
      kind: 'input.merged',
      messageId: bound.messageId,
      mergedSeq: bound.seq,
      into: turn.seq,
      decision: outcome.decision,
    });
    finishRecord(state, record, { announce: false });
  }
}
