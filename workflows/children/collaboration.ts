/**
 * Sub-sessions that collaborate. A `session_create_sub` call says what its answer is for: `collaborate`
 * (the default) or `notify`. In `collaborate`, the sub-session's reply is a bypass input that runs a
 * follow-up turn of the parent's agent for the same input, with the reply in its transcript; the
 * follow-up's record replaces the input's record, so a caller waiting on that input (the `result`
 * update, bounded by `subSessionReplyWaitMs`) gets the answer that used the reply. A reply that comes
 * after the parent has bound a newer input is recorded with a note and not acted on. A sub-session
 * that itself delegates holds its own answer to its parent until its follow-up has run.
 *
 * All of it is state: a follow-up is an `ActiveTurn` with `followUp`, which the main loop resumes as
 * it resumes a carried turn, so it survives worker restarts and continue-as-new like any turn.
 */
import { enforceBudget } from '../../contract/budget.js';
import { SubSessionReply } from '../../contract/messages.js';
import { type Delegation, type DecisionRecord, type DelegationMode, type SessionState } from '../../contract/state.js';
import { emit } from '../ledger/events.js';
import type { SessionContext } from '../stages/session-context.js';
import { answerOf, answerParent } from './sub-sessions.js';

/** Records a `session_create_sub` hand-over on the delegating turn's record. */
export function recordDelegation(
  record: DecisionRecord,
  delegation: { callId: string; sessionId: string; childSeq: number | null; mode: DelegationMode; at: number },
): void {
  (record.delegations ??= []).push({ ...delegation, status: 'waiting', reply: null, note: null });
}

/** The record an input has now: its running turn's, or the one in `decisions`. */
function recordOf(state: SessionState, seq: number): DecisionRecord | undefined {
  if (state.turn?.seq === seq) return state.turn.record;
  return [...state.decisions].reverse().find((d) => d.seq === seq);
}

/** Whether the record still expects a collaborating sub-session's answer to act on. */
function unsettled(delegation: Delegation): boolean {
  return delegation.mode === 'collaborate' && (delegation.status === 'waiting' || delegation.status === 'answered');
}

/**
 * A delegated reply the parent has just taken (`applySubSessionReply` accepted it): marks its delegation,
 * and starts a follow-up turn at once when the Session is between turns on that same input. A
 * turn still running for it takes the follow-up when it ends (`afterTurn`). Delegations made before
 * `collaborating-subsessions` have no entry: nothing changes for them.
 */
export function takeDelegatedReply(state: SessionState, raw: unknown, now: number): void {
  const parsed = SubSessionReply.safeParse(raw);
  if (!parsed.success) return;
  const reply = parsed.data;
  if (reply.parentSeq === null || reply.reason !== 'delegated') return;
  const record = recordOf(state, reply.parentSeq);
  const delegation = record?.delegations?.find(
    (d) =>
      d.sessionId === reply.sessionId && d.status === 'waiting' && (d.childSeq === null || d.childSeq === reply.seq),
  );
  if (!delegation) return;
  delegation.reply = answerOf(reply, now);
  if (delegation.mode === 'notify') {
    delegation.status = 'recorded';
  } else if (state.boundSeq > reply.parentSeq) {
    delegation.status = 'moved-on';
    delegation.note = `the reply came after this Session moved on to input #${state.boundSeq}: recorded, not acted on`;
  } else {
    delegation.status = 'answered';
    beginFollowUp(state, reply.parentSeq);
  }
}

/**
 * Starts the follow-up turn of input `seq` when its record has an answered collaborating delegation,
 * no turn runs, and no newer input has been bound. The turn works on a copy of the record (the one
 * in `decisions` stays until the follow-up ends, so the `result` update keeps waiting) and counts its
 * steps on from the input's earlier turns, so the step limit covers them all.
 */
export function beginFollowUp(state: SessionState, seq: number): boolean {
  if (state.turn !== null || state.boundSeq !== seq || state.status === 'closed') return false;
  const record = [...state.decisions].reverse().find((d) => d.seq === seq);
  if (!record?.agent || !record.delegations?.some((d) => d.mode === 'collaborate' && d.status === 'answered')) {
    return false;
  }
  const copy = JSON.parse(JSON.stringify(record)) as DecisionRecord;
  for (const d of copy.delegations ?? [])
    if (d.mode === 'collaborate' && d.status === 'answered') d.status = 'followed-up';
  const agent = copy.agent!;
  agent.earlierReply = agent.reply;
  agent.reply = null;
  // Placeholder until the follow-up ends, as for any turn.
  agent.outcome = 'failed';
  agent.reason = 'the follow-up turn has not ended';
  delete copy.answerHeld;
  const bound = state.history.find((h) => h.seq === seq);
  state.turn = {
    seq,
    record: copy,
    from: bound?.from ?? null,
    steps: agent.steps,
    step: null,
    failing: null,
    interrupted: false,
    followUp: true,
  };
  return true;
}

/** Ends a follow-up turn: its record replaces the input's record in `decisions`. */
export function finishFollowUp(state: SessionState, record: DecisionRecord): void {
  const agent = record.agent;
  emit(state, {
    kind: 'turn.finished',
    outcome: agent?.outcome ?? 'skipped',
    reason: agent?.reason ?? null,
    reply: agent?.reply ?? null,
  });
  let i = state.decisions.length - 1;
  while (i >= 0 && state.decisions[i]!.seq !== record.seq) i--;
  if (i >= 0) state.decisions[i] = record;
  else state.decisions.push(record);
  enforceBudget(state);
}

/**
 * Once a turn of input `seq` has ended (runs with `collaborating-subsessions`): starts its follow-up
 * if an answer came meanwhile; otherwise answers the parent, unless a collaborating delegation still
 * waits, in which case a sub-session holds its answer until its follow-up (or until it moves on).
 */
export async function afterTurn(ctx: SessionContext, seq: number): Promise<void> {
  const { state } = ctx;
  if (beginFollowUp(state, seq)) return;
  const record = [...state.decisions].reverse().find((d) => d.seq === seq);
  if (record?.delegations?.some(unsettled)) {
    if (state.parentSessionId) record.answerHeld = true;
    return;
  }
  if (record) delete record.answerHeld;
  await answerParent(ctx, seq);
}

/**
 * A newer input is about to be bound: answers held for earlier inputs go to the parent now, with the
 * reply they have. Their delegations' answers, when they come, are recorded as after moving on.
 */
export async function releaseHeldAnswers(ctx: SessionContext): Promise<void> {
  for (const record of ctx.state.decisions) {
    if (!record.answerHeld) continue;
    delete record.answerHeld;
    await answerParent(ctx, record.seq);
  }
}

/**
 * Whether the `result` update should still wait on this input for a collaborating sub-session's
 * answer and the follow-up turn it runs: bounded by `subSessionReplyWaitMs` from the hand-over, and
 * only while the input is the newest bound.
 */
export function awaitsCollaboration(state: SessionState, record: DecisionRecord, now: number): boolean {
  // Once a newer input is bound no follow-up will run for this one.
  if (state.boundSeq !== record.seq) return false;
  return (record.delegations ?? []).some(
    (d) => unsettled(d) && now - d.at < state.settings.subSessionReplyWaitMs && state.status !== 'closed',
  );
}
