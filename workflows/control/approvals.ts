/**
 * How approvals and external tool results meet the agent turn in progress: which waiting call an
 * approval binds to (its approval id and arguments hash), the check of an approval that edits the
 * call's arguments, applying the verdict to the call's state, and the records it leaves. Approvals
 * and tool results have their own signals: they never become task inputs, and a message is never
 * taken for an approval. Their payloads arrive parsed once (control-plane.ts, with
 * ledger/control-record.ts's parseControl).
 *
 * Edits: the workflow holds neither the tool's schema nor the approval policy, so the worker's
 * `checkApprovalEdit` local activity judges an edit; its verdict is a marker in history, so a replay
 * never asks again. A refused edit answers nothing: the call keeps waiting for another approval (or
 * a corrected edit), and the refusal is recorded with its reason.
 */
import { proxyLocalActivities } from '@temporalio/workflow';
import { ApprovalEditVerdict, type ApprovalEditActivities } from '../../contract/activity-contract.js';
import { admitControl, recordControlEvent, type ControlResult, type ParsedControl } from '../ledger/control-record.js';
import { recordRejection } from '../ledger/intake.js';
import { recordApprovalResolved } from '../ledger/metrics.js';
import type { ApprovalInput, ToolResultInput } from '../../contract/messages.js';
import type { ApprovalRecord, PendingCall, SessionState } from '../../contract/state.js';
import { emit, emitCallFinished } from '../ledger/events.js';
import { clipReason } from '../../contract/budget.js';
import {
  approvableCalls,
  approvalIdOf,
  argumentsHashOf,
  externalCalls,
  finishCall,
  resultIdOf,
  waitingApprovals,
} from '../../contract/pending-calls.js';

const checker = proxyLocalActivities<ApprovalEditActivities>({
  startToCloseTimeout: '5s',
  retry: { maximumAttempts: 3, initialInterval: '200ms' },
  summary: 'Checking edited arguments',
});

/** Whether a raw approval payload carries `arguments` (before it is parsed): only those take the edit path. */
export function carriesArguments(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && (raw as Record<string, unknown>).arguments !== undefined;
}

/**
 * Why an approval's edit is refused, or null when the approval may be applied as it is (it edits
 * nothing, matches no waiting call, which applying it records, or its edit passed the worker's check).
 */
export async function editRefusal(state: SessionState, item: ParsedControl, bound: boolean): Promise<string | null> {
  // An invalid payload is refused when it is applied, with its schema's reason, as without an edit.
  if (!item.ok) return null;
  const approval = item.payload as ApprovalInput;
  if (!approval.approved && approval.arguments !== undefined) {
    return `rejection ${approval.approvalId} carries arguments; only an approval can edit them`;
  }
  const found = approvedCall(state, approval, bound);
  if ('refused' in found || !isEdit(found.call, approval)) return null;
  const { call } = found;
  try {
    const verdict = ApprovalEditVerdict.parse(
      await checker.checkApprovalEdit({
        sessionId: state.sessionId,
        sessionKind: state.parentSessionId ? 'sub-session' : 'top-level',
        toolsets: state.capabilities.toolsets.map((c) => c.id),
        tool: call.tool,
        toolset: call.toolset,
        arguments: approval.arguments,
      }),
    );
    return verdict.refused === null ? null : `edit of ${approval.approvalId} refused: ${verdict.refused}`;
  } catch (err) {
    // Refused, never run unchecked: the approver may send it again once a worker can check it.
    const why = err instanceof Error ? err.message : String(err);
    return `edit of ${approval.approvalId} could not be checked (${why}); the call still waits`;
  }
}

/** The hash an approval binds to: always of the model's own arguments, also once an edit replaced them. */
function proposedHashOf(call: PendingCall): string {
  return argumentsHashOf({ arguments: call.originalArguments ?? call.arguments });
}

/** Who answered a waiting call, how and why, as the call and its record keep it. */
function approvalRecord(approval: ApprovalInput, at: number): ApprovalRecord {
  const note = approval.note?.trim();
  return {
    approved: approval.approved,
    by: approval.approver ?? null,
    note: note ? clipReason(note) : null,
    at,
  };
}

/**
 * The one call an approval answers, or why it answers none: the call must wait for it, by its own
 * approval id, and (when the approval carries a hash) have exactly the arguments the approver saw,
 * the model's own, so an edit never moves the binding to another call.
 */
function approvedCall(
  state: SessionState,
  approval: ApprovalInput,
  bound = true,
): { call: PendingCall } | { refused: string } {
  const turn = state.turn;
  const call = bound
    ? turn && waitingApprovals(turn).find((c) => approvalIdOf(turn, c) === approval.approvalId)
    : turn &&
      approvableCalls(turn).find(
        (c) => c.callId === approval.approvalId || approvalIdOf(turn, c) === approval.approvalId,
      );
  if (!call) {
    const waiting = turn ? waitingApprovals(turn).map((c) => approvalIdOf(turn, c)) : [];
    const now = waiting.length > 0 ? `waiting now: ${waiting.join(', ')}` : 'no call waits for approval';
    return { refused: `approval ${approval.approvalId} matches no tool call waiting for approval (${now})` };
  }
  if (bound && approval.argumentsHash !== undefined && approval.argumentsHash !== proposedHashOf(call)) {
    const hash = approval.argumentsHash.slice(0, 12);
    return {
      refused: `approval ${approval.approvalId} names arguments (hash ${hash}…) other than the waiting call's; nothing was approved`,
    };
  }
  return { call };
}

/** Whether an approval replaces the call's arguments: it approves, and carries arguments other than the model's. */
function isEdit(
  call: { arguments: string },
  approval: ApprovalInput,
): approval is ApprovalInput & { arguments: string } {
  return approval.approved && approval.arguments !== undefined && approval.arguments !== call.arguments;
}

/**
 * Applies an approval decision to the one call it answers. Returns the call it answered, or why it
 * answered none, so the caller records a rejection. An approval answers a call only while that call waits
 * for it, by the call's own approval id, and (when it carries one) only if the argument hash
 * matches: a repeated or late delivery, or one meant for another call, changes nothing.
 *
 * `bound` is false only for runs whose history predates approval ids: there the model's call id
 * still names the call, as it did then (and so does the approval id the snapshot shows).
 */
export function applyApproval(
  state: SessionState,
  approval: ApprovalInput,
  at: number,
  bound = true,
): { answered: PendingCall } | { refused: string } {
  const found = approvedCall(state, approval, bound);
  if ('refused' in found) return found;
  const call = found.call;
  call.approval = approvalRecord(approval, at);
  if (approval.approved) {
    call.state = 'approved';
    // Only the session's edit path lets an approval with an edit this far, after the worker checked it.
    if (isEdit(call, approval)) {
      call.originalArguments = call.arguments;
      call.arguments = approval.arguments;
      call.editedBy = approval.approver ?? null;
    }
  } else {
    const note = approval.note?.trim() ? `: ${approval.note.trim()}` : '';
    finishCall(call, 'rejected', `rejected by the user${note}`);
  }
  return { answered: call };
}

/**
 * Applies an external tool's result to the call it names: the call it answered, or why it answered
 * none. A result that carries `resultId` answers only the external call of the current step with that
 * id (and its own call id): models reuse call ids, so one meant for an earlier step finds nothing.
 * One without it is matched by the model's call id, as before, unless `resultIdRequired` (signed
 * control): a signed result that names no call could be replayed onto a later call with the same id.
 */
export function applyToolResult(
  state: SessionState,
  result: ToolResultInput,
  resultIdRequired = false,
): { answered: PendingCall } | { refused: string } {
  const turn = state.turn;
  const name = result.resultId ?? result.callId;
  if (result.resultId === undefined && resultIdRequired) {
    return {
      refused: `tool result ${result.callId} must name the waiting call (resultId "<seq>:<step>:<callId>", as snapshot().pendingToolCalls shows it): this worker accepts only results bound to their call`,
    };
  }
  const call = externalCalls(turn).find(
    (c) =>
      c.callId === result.callId &&
      (result.resultId === undefined || (turn && resultIdOf(turn, c) === result.resultId)),
  );
  if (!call) {
    const waiting = turn ? externalCalls(turn).map((c) => resultIdOf(turn, c)) : [];
    const now = waiting.length > 0 ? ` (waiting now: ${waiting.join(', ')})` : '';
    return { refused: `tool result ${name} matches no tool call waiting for an external result${now}` };
  }
  const output = typeof result.output === 'string' ? result.output : (JSON.stringify(result.output) ?? 'null');
  finishCall(call, result.isError ? 'error' : 'ok', output);
  return { answered: call };
}

/** What applying an approval or a tool result did: its control record, and why it answered nothing (else null). */
export interface TurnOutcome {
  result: ControlResult;
  why: string | null;
}

/** How approvals and tool results bind to calls in this run. */
export interface TurnBinding {
  /** False only for Sessions whose history predates approval ids (approvals then named the model's call id). */
  boundApprovals: boolean;
  /** A tool result must carry `resultId` (signed control, in runs with `bound-control`). */
  resultIdRequired: boolean;
}

/**
 * Applies an approval or a tool result to the turn: the shared record first (a refused payload is a
 * recorded rejection; an admitted one leaves its control event), then the verdict on the one call it
 * answers. One that matches no waiting call is a recorded rejection, and its control event says it
 * was refused.
 */
export function applyToTurn(
  state: SessionState,
  item: ParsedControl & { kind: 'approval' | 'toolResult' },
  now: number,
  binding: TurnBinding = { boundApprovals: true, resultIdRequired: false },
): TurnOutcome {
  const { boundApprovals } = binding;
  const { kind } = item;
  const admitted = admitControl(state, item, now);
  if ('ended' in admitted) {
    const result = admitted.ended;
    if (result.kind === 'rejected') return { result, why: result.reason };
    // Approvals and tool results are never de-duplicated by id (ledger/control-record.ts); kept whole.
    const id = result.id.slice(kind.length + 1);
    const reason = `${kind} ${id} was already applied; a repeated delivery changes nothing`;
    recordRejection(state, { at: now, via: kind, messageId: id, reason }, 'unknown-id');
    return { result, why: reason };
  }
  const event = recordControlEvent(state, kind, admitted.id, admitted.payload, now);
  const result: ControlResult = { kind: 'applied', event, payload: admitted.payload, interruptTurn: false };
  let why: string | null;
  if (kind === 'approval') {
    // Parsed by its row's schema where it arrived (ledger/control-record.ts parseControl).
    const approval = admitted.payload as ApprovalInput;
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
    const applied = applyToolResult(state, admitted.payload as ToolResultInput, binding.resultIdRequired);
    why = 'refused' in applied ? applied.refused : null;
    if ('answered' in applied) emitCallFinished(state, applied.answered);
  }
  if (why !== null) {
    recordRejection(state, { at: now, via: kind, messageId: event.id, reason: why }, 'unknown-id');
    if (boundApprovals) event.summary = clipReason(`refused: ${why}`);
  }
  return { result, why };
}
