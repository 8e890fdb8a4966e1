/**
 * How approvals and external tool results meet the agent turn in progress: which waiting call an
 * approval binds to, the check of an approval that edits the call's arguments, and applying either
 * to the turn. Approvals and tool results have their own signals: they never become task inputs,
 * and a message is never taken for an approval. Their payloads arrive parsed (control-plane.ts).
 *
 * Edits: the workflow holds neither the tool's schema nor the approval policy, so the worker's
 * `checkApprovalEdit` local activity judges an edit; its verdict is a marker in history, so a replay
 * never asks again. A refused edit answers nothing: the call keeps waiting for another approval (or
 * a corrected edit), and the refusal is recorded with its reason.
 */
import { proxyLocalActivities } from '@temporalio/workflow';
import { ApprovalEditVerdict, type ApprovalEditActivities } from '../../contract/activity-contract.js';
import type { ControlKind } from '../../contract/control-signals.js';
import type { ControlResult, ParsedControl } from './commands.js';
import { recordRejection } from '../ledger/intake.js';
import { recordApprovalResolved } from '../ledger/metrics.js';
import type { ApprovalInput, ToolResultInput } from '../../contract/messages.js';
import type { SessionState } from '../../contract/state.js';
import { emit, emitCallFinished } from '../ledger/events.js';
import { applyApproval, applyToolResult, approvedCall, clipReason, isEdit } from '../agent/tool-calls.js';

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
    // Parsed by its row's schema where it arrived (commands.ts parseControl).
    const approval = result.payload as ApprovalInput;
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
    const applied = applyToolResult(state, result.payload as ToolResultInput);
    why = 'refused' in applied ? applied.refused : null;
    if ('answered' in applied) emitCallFinished(state, applied.answered);
  }
  if (why !== null) {
    recordRejection(state, { at: now, via: kind, messageId: result.event.id, reason: why }, 'unknown-id');
    if (boundApprovals) result.event.summary = clipReason(`refused: ${why}`);
  }
  return why;
}
