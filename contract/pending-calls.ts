/**
 * The tool calls a turn keeps waiting, as the agent loop, the control plane and the views all see
 * them: which calls wait for a person's decision or an external result, the approval id and
 * arguments hash an approval binds to (both published in `snapshot().pendingApprovals` and the
 * `tool.approval_requested` event, and named by clients), and finishing a call. One definition here,
 * so the workflow's agent loop, the control plane that answers calls and the read models agree.
 *
 * Pure module: safe to import from workflow code.
 */
import { sha256Hex } from './control-signature.js';
import { APPROVAL_CONTEXT_CHARS } from './events.js';
import type { ActiveTurn, PendingCall, SessionState, ToolResource } from './state.js';
import { clip } from './text.js';
import { clipToolOutput, type ApprovalReason, type ToolCallStatus } from './transcript.js';

/** The calls of the current step that wait for (or may already receive) a person's decision. */
export function approvableCalls(turn: ActiveTurn | null): PendingCall[] {
  return (turn?.step?.calls ?? []).filter(
    (c) =>
      c.requiresApproval &&
      c.argumentError === null &&
      c.policy?.effect !== 'deny' &&
      (c.state === 'new' || c.state === 'waiting-approval'),
  );
}

/** The calls of the current step that wait for a person's decision now: the only ones an approval can answer. */
export function waitingApprovals(turn: ActiveTurn | null): PendingCall[] {
  return approvableCalls(turn).filter((c) => c.state === 'waiting-approval');
}

/** The external calls of the current step that wait for (or may already receive) a `toolResult`. */
export function externalCalls(turn: ActiveTurn | null): PendingCall[] {
  return (turn?.step?.calls ?? []).filter(
    (c) =>
      c.execution === 'external' &&
      c.argumentError === null &&
      (c.state === 'waiting-result' || c.state === 'approved' || (c.state === 'new' && !c.requiresApproval)),
  );
}

/** Longest model call id an approval id carries verbatim; a longer one is replaced by its digest. */
const APPROVAL_CALL_ID_CHARS = 64;

/**
 * The id of the approval a call waits for: the input's seq, the model step and the model's call id
 * (`7:2:call_1`). Models reuse call ids across turns and steps, so the call id alone would let an
 * approval meant for one call answer another; this id names exactly one call in the Session's life.
 */
export function approvalIdOf(turn: ActiveTurn, call: { callId: string }): string {
  const callId = call.callId.length <= APPROVAL_CALL_ID_CHARS ? call.callId : `#${sha256Hex(call.callId).slice(0, 32)}`;
  return `${turn.seq}:${turn.steps}:${callId}`;
}

/**
 * The id a tool result names its external call by (`resultId`): the same `<seq>:<step>:<callId>` as
 * an approval id, for the same reason.
 */
export function resultIdOf(turn: ActiveTurn, call: { callId: string }): string {
  return approvalIdOf(turn, call);
}

/**
 * SHA-256 of the call's arguments as the model wrote them (hex). An approval that carries it
 * answers only a call with exactly these arguments.
 */
export function argumentsHashOf(call: { arguments: string }): string {
  return sha256Hex(call.arguments);
}

/**
 * Why the call waits: the policy rule that asked for approval (a rule's `approve`; an `allow` that
 * could not lift the toolset's flag leaves the flag as the reason), else a user-scope `memory_save`,
 * else the toolset's `requiresApproval`.
 */
export function approvalReasonOf(call: PendingCall): ApprovalReason {
  const rule = call.policy && call.policy.effect !== 'allow' ? call.policy : null;
  const source = rule ? 'policy' : call.toolset === null && call.tool === 'memory_save' ? 'user-memory' : 'toolset';
  return {
    source,
    rule: rule?.rule ?? null,
    reason: rule?.reason ?? null,
    toolset: call.toolset,
    riskTags: call.riskTags ?? [],
  };
}

/** What the approval inbox shows beside a waiting call: why it waits, the user's message, the agent's words. */
export function approvalContextOf(
  state: Pick<SessionState, 'history' | 'transcript'>,
  turn: ActiveTurn,
  call: PendingCall,
): { why: ApprovalReason; userMessage: string | null; agentText: string | null } {
  const bound = state.history.find((h) => h.seq === turn.seq);
  const said = state.transcript.find((t) => t.kind === 'user' && t.seq === turn.seq);
  const userMessage = bound?.text ?? (said?.kind === 'user' ? said.text : null);
  const agentText = turn.step?.text ?? null;
  return {
    why: approvalReasonOf(call),
    userMessage: userMessage === null ? null : clip(userMessage, APPROVAL_CONTEXT_CHARS),
    agentText: agentText === null || agentText.trim() === '' ? null : clip(agentText, APPROVAL_CONTEXT_CHARS),
  };
}

/** Records a call's result (clipped and marked when long) and the resources it named; the call is done. */
export function finishCall(
  call: PendingCall,
  status: ToolCallStatus,
  output: string,
  resources: ToolResource[] = [],
): void {
  call.state = 'done';
  call.result = status;
  call.output = clipToolOutput(output);
  if (resources.length > 0) call.resources = resources;
}
