/**
 * The `result` update: an input's state as it stands now, and a bounded wait until its turn ends or
 * waits for someone. Push-based: the caller's update returns as soon as the workflow gets there.
 */
import { condition, patched } from '@temporalio/workflow';
import { ResultRequest, type TurnResult } from '../../contract/queries.js';
import type { ActiveTurn, SessionState, TurnOutcome } from '../../contract/state.js';
import { awaitsSubSessionReply } from '../children/sub-sessions.js';
import { awaitsCollaboration } from '../children/collaboration.js';
import { pendingRecordCalls } from '../agent/tool-calls.js';

/**
 * The input's state as the `result` update reports it now. With `now` (workflow time), an input
 * routed to a sub-session stays `pending` until the sub-session's reply is in its record, or
 * `settings.subSessionReplyWaitMs` after the hand-over; so does an input whose collaborating
 * sub-session has not answered yet, or whose follow-up turn runs (children/collaboration.ts).
 */
export function resultOf(state: SessionState, seq: number, now: number | null = null): TurnResult {
  const done = [...state.decisions].reverse().find((d) => d.seq === seq);
  const turn = state.turn;
  const awaited =
    done && now !== null && (awaitsSubSessionReply(state, done, now) || awaitsCollaboration(state, done, now));
  // While it waits, a follow-up turn that waits for someone is reported like any turn that waits.
  const followUpWaits = turn?.seq === seq && turn.followUp === true && waitingCall(turn) !== undefined;
  if (done && awaited && !followUpWaits) {
    return { seq, status: 'pending', outcome: done.agent?.outcome ?? null, record: done };
  }
  if (done && !awaited) return { seq, status: 'done', outcome: done.agent?.outcome ?? null, record: done };
  if (turn?.seq === seq) {
    const waiting = waitingCall(turn);
    if (waiting) {
      const outcome: TurnOutcome = waiting.state === 'waiting-approval' ? 'waiting-approval' : 'waiting-tool';
      const agent = turn.record.agent
        ? { ...turn.record.agent, outcome, reason: null, steps: turn.steps, toolCalls: pendingRecordCalls(turn) }
        : null;
      return { seq, status: 'waiting', outcome, record: { ...turn.record, agent } };
    }
    return { seq, status: 'pending', outcome: null, record: null };
  }
  if (seq < state.nextSeq) return { seq, status: 'pending', outcome: null, record: null };
  return { seq, status: 'unknown', outcome: null, record: null };
}

function waitingCall(turn: ActiveTurn) {
  return turn.step?.calls.find((c) => c.state === 'waiting-approval' || c.state === 'waiting-result');
}

/**
 * Waits, bounded, until the input's turn ends or waits for someone, then reports it. Push-based:
 * the caller's update returns as soon as the workflow gets there. Bounded so continue-as-new, which
 * waits for all handlers, is never held up for long.
 */
export async function awaitResult(
  state: SessionState,
  raw: unknown,
  controlSettled: () => boolean = () => true,
): Promise<TurnResult> {
  const request = ResultRequest.parse(raw);
  // Sessions recorded before sub-sessions answered back report a routed input done at once.
  const answers = patched('sub-session-answers');
  const now = () => (answers ? Date.now() : null);
  const settled = () => {
    const status = resultOf(state, request.seq, now()).status;
    return status === 'done' || status === 'waiting' || status === 'unknown';
  };
  // Control items sent before this update (an approval, a tool result) are applied first, so the
  // answer reflects them; the same bound covers both waits.
  await condition(() => controlSettled() && settled(), request.timeoutMs);
  return resultOf(state, request.seq, now());
}
