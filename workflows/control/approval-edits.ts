/**
 * Approvals that edit a waiting call's arguments. The workflow holds neither the tool's schema nor
 * the approval policy, so the worker's `checkApprovalEdit` local activity judges the edit; its verdict
 * is a marker in history, so a replay never asks again. A refused edit answers nothing: the call keeps
 * waiting for another approval (or a corrected edit), and the refusal is recorded with its reason.
 */
import { proxyLocalActivities } from '@temporalio/workflow';
import { ApprovalEditVerdict, type ApprovalEditActivities } from '../../contract/activity-contract.js';
import { ApprovalInput } from '../../contract/messages.js';
import type { SessionState } from '../../contract/state.js';
import { approvedCall, isEdit } from '../agent/tool-calls.js';

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
export async function editRefusal(state: SessionState, raw: unknown, bound: boolean): Promise<string | null> {
  const parsed = ApprovalInput.safeParse(raw);
  // An invalid payload is refused by applyControl with its schema's reason, as without an edit.
  if (!parsed.success) return null;
  const approval = parsed.data;
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
