/**
 * How approvals, external tool results and the `result` update meet the agent turn in progress.
 * Approvals and tool results have their own signals: they never become task inputs, and a message
 * is never taken for an approval.
 */
import { condition, patched } from '@temporalio/workflow';
import type { ControlKind } from '../../contract/control-signals.js';
import type { ControlResult } from './commands.js';
import { recordRejection } from '../ledger/intake.js';
import { recordApprovalResolved } from '../ledger/metrics.js';
import { ApprovalInput, ToolResultInput } from '../../contract/messages.js';
import { ResultRequest, type TurnResult } from '../../contract/queries.js';
import type { SessionState, TurnOutcome } from '../../contract/state.js';
import { awaitsSubSessionReply } from '../children/sub-sessions.js';
import { emit, emitCallFinished } from '../ledger/events.js';
import { applyApproval, applyToolResult, clipReason, pendingRecordCalls } from '../agent/tool-calls.js';

/**
 * Applies an approval or a tool result to the turn; one that matches no waiting call is a recorded
 * rejection, and its control event says it was refused. `boundApprovals` is false only for
 * Sessions whose history predates approval ids (approvals then named the model's call id).
 * Returns why it was refused, or null when it applied (or was no approval or tool result).
 */
export function applyToTurn(
  state: SessionState,
  kind: ControlKind,
  result: ControlResult,
  now: number,
  boundApprovals = true,
): string | null {
  if (kind !== 'approval' && kind !== 'toolResult') return null;
  if (result.kind === 'rejected') return result.reason;
  if (result.kind === 'duplicate') {
    const id = result.id.slice(kind.length + 1);
    const reason = `${kind} ${id} was already applied; a repeated delivery changes nothing`;
    recordRejection(state, { at: now, via: kind, messageId: id, reason }, 'unknown-id');
    return reason;
  }
  let why: string | null;
  if (kind === 'approval') {
    const approval = ApprovalInput.parse(result.payload);
    const applied = applyApproval(state, approval, now, boundApprovals);
    why = 'refused' in applied ? applied.refused : null;
    if ('answered' in applied) {
      const call = applied.answered;
      recordApprovalResolved(call.tool, approval.approved);
      const answer = {
        callId: call.callId,
        tool: call.tool,
        approvalId: approval.approvalId,
        by: call.approval?.by ?? null,
        note: call.approval?.note ?? null,
      };
      if (approval.approved) {
        emit(state, {
          kind: 'tool.approved',
          ...answer,
          arguments: call.arguments,
          originalArguments: call.originalArguments,
        });
      } else {
        emit(state, { kind: 'tool.rejected', ...answer });
        emitCallFinished(state, call);
      }
    }
  } else {
    const applied = applyToolResult(state, ToolResultInput.parse(result.payload));
    why = 'refused' in applied ? applied.refused : null;
    if ('answered' in applied) emitCallFinished(state, applied.answered);
  }
  if (why !== null) {
    recordRejection(state, { at: now, via: kind, messageId: result.event.id, reason: why }, 'unknown-id');
    if (boundApprovals) result.event.summary = clipReason(`refused: ${why}`);
  }
  return why;
}

/**
 * The input's state as the `result` update reports it now. With `now` (workflow time), an input
 * routed to a sub-session stays `pending` until the sub-session's reply is in its record, or
 * `settings.subSessionReplyWaitMs` after the hand-over.
 */
export function resultOf(state: SessionState, seq: number, now: number | null = null): TurnResult {
  const done = [...state.decisions].reverse().find((d) => d.seq === seq);
  if (done && now !== null && awaitsSubSessionReply(state, done, now)) {
    return { seq, status: 'pending', outcome: done.agent?.outcome ?? null, record: done };
  }
  if (done) return { seq, status: 'done', outcome: done.agent?.outcome ?? null, record: done };
  const turn = state.turn;
  if (turn?.seq === seq) {
    const waiting = turn.step?.calls.find((c) => c.state === 'waiting-approval' || c.state === 'waiting-result');
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

/**
 * Waits, bounded, until the input's turn ends or waits for someone, then reports it. Push-based:
 * the caller's update returns as soon as the workflow gets there. Bounded so continue-as-new, which
 * waits for all handlers, is never held up for long.
 */
export async function awaitResult(state: SessionState, raw: unknown): Promise<TurnResult> {
  const request = ResultRequest.parse(raw);
  // Sessions recorded before sub-sessions answered back report a routed input done at once.
  const answers = patched('sub-session-answers');
  const now = () => (answers ? Date.now() : null);
  const settled = () => {
    const status = resultOf(state, request.seq, now()).status;
    return status === 'done' || status === 'waiting' || status === 'unknown';
  };
  await condition(settled, request.timeoutMs);
  return resultOf(state, request.seq, now());
}
