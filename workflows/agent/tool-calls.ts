/**
 * The tool calls of the agent turn in progress, as pure state transitions: what a call needs next,
 * which calls wait for an approval or an external result (and the approval id the loop announces),
 * and how a finished step is sealed into the transcript as one unit (so a call is never separated
 * from its result). How an approval or a result applies to a call is control/approvals.ts's.
 * Unit-tested without Temporal.
 *
 * Pure module: safe to import from workflow code.
 */
import { sha256Hex } from '../../contract/control-signature.js';
import { BUDGET } from '../../contract/budget.js';
import type { ActiveTurn, AgentToolCall, PendingCall, SessionState, ToolResource } from '../../contract/state.js';
import { clipBytes } from '../../contract/text.js';
import { clipToolOutput, type ResolvedToolCall, type ToolCallStatus } from '../../contract/transcript.js';
import { recordStepArtifacts } from './artifacts.js';

/** Arguments and results as the decision record shows them. */
const RECORD_FIELD_BYTES = 1024;

/** What the turn must do next for a call. */
export type NextAction =
  | { kind: 'finish'; status: ToolCallStatus; output: string }
  | { kind: 'await-approval' }
  | { kind: 'await-result' }
  | { kind: 'run'; via: 'mcp' | 'memory_save' | 'session_create_sub' }
  | { kind: 'done' };

/** Starts a step: the model's calls, in its order, none carried out yet (and the reasoning beside them, if any). */
export function startStep(turn: ActiveTurn, text: string | null, calls: ResolvedToolCall[], reasoning?: string): void {
  turn.step = {
    text,
    ...(reasoning !== undefined ? { reasoning } : {}),
    calls: calls.map((call) => ({
      ...call,
      state: 'new',
      requestedAt: null,
      output: null,
      result: null,
      approval: null,
      originalArguments: null,
      editedBy: null,
    })),
  };
}

/**
 * Decides the next action for one call, from its resolution and where it stands. A call the worker's
 * approval policy denied is finished as an error before anything else (no patch needed: only activity
 * results that carry a `deny` take this path, and no history recorded before policies has one).
 */
export function nextAction(call: PendingCall): NextAction {
  if (call.state === 'done') return { kind: 'done' };
  if (call.policy?.effect === 'deny') return { kind: 'finish', status: 'error', output: deniedOutput(call) };
  if (call.argumentError !== null) {
    return { kind: 'finish', status: 'error', output: `invalid arguments for ${call.tool}: ${call.argumentError}` };
  }
  if (call.execution === 'unknown') {
    return { kind: 'finish', status: 'error', output: `unknown tool ${call.tool}: it is not among the loaded tools` };
  }
  if (call.requiresApproval && (call.state === 'new' || call.state === 'waiting-approval')) {
    return { kind: 'await-approval' };
  }
  if (call.execution === 'external') return { kind: 'await-result' };
  if (call.execution === 'builtin') {
    return { kind: 'run', via: call.tool === 'session_create_sub' ? 'session_create_sub' : 'memory_save' };
  }
  return { kind: 'run', via: 'mcp' };
}

/** The error result a denied call gives the model: the tool, the rule and its reason. */
function deniedOutput(call: PendingCall): string {
  const reason = call.policy?.reason ? `: ${call.policy.reason}` : '';
  return `denied by policy rule ${call.policy?.rule ?? '?'}${reason} (${call.tool} was not run)`;
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
  const callId = call.callId.length <= APPROVAL_CALL_ID_CHARS ? call.callId : `#${digest(call.callId).slice(0, 32)}`;
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
  return digest(call.arguments);
}

function digest(text: string): string {
  return sha256Hex(text);
}

/** Marks every unfinished call of the step as interrupted. */
export function interruptCalls(turn: ActiveTurn): void {
  for (const call of turn.step?.calls ?? []) {
    if (call.state !== 'done') finishCall(call, 'interrupted', 'interrupted before it finished');
  }
}

/** The key the loop guard compares calls by: the same tool with the same arguments. */
export function failureKey(call: { tool: string; arguments: string }): string {
  return `${call.tool}\n${call.arguments}`;
}

/**
 * Seals a finished step into the transcript (assistant message and every result together), adds
 * its calls to the decision record and what they produced to the artifacts, and updates the loop guard. Returns how many times in a row
 * the last failing call has now failed (0 when the step's last call succeeded).
 */
export function sealStep(state: SessionState, turn: ActiveTurn): number {
  const step = turn.step;
  if (!step) return turn.failing?.count ?? 0;
  state.transcript.push({
    kind: 'step',
    seq: turn.seq,
    text: step.text,
    calls: step.calls.map((c) => ({
      callId: c.callId,
      tool: c.tool,
      arguments: c.arguments,
      status: c.result ?? 'interrupted',
      output: editNote(c) + (c.output ?? ''),
    })),
    ...(step.reasoning !== undefined ? { reasoning: step.reasoning } : {}),
  });
  recordStepArtifacts(
    state,
    turn.seq,
    step.calls.map((c) => ({ ...c, status: c.result ?? 'interrupted', output: c.output ?? '' })),
  );
  const agent = turn.record.agent;
  if (agent) agent.toolCalls.push(...step.calls.map(recordCall));
  for (const call of step.calls) {
    if (call.result === 'error') {
      const key = failureKey(call);
      turn.failing = turn.failing?.key === key ? { key, count: turn.failing.count + 1 } : { key, count: 1 };
    } else if (call.result === 'ok') {
      turn.failing = null;
    }
  }
  turn.step = null;
  return turn.failing?.count ?? 0;
}

function recordCall(call: PendingCall): AgentToolCall {
  return {
    callId: call.callId,
    tool: call.tool,
    arguments: clipBytes(call.arguments, RECORD_FIELD_BYTES),
    status: call.result ?? 'pending',
    result: call.output === null ? null : clipBytes(call.output, RECORD_FIELD_BYTES),
    approval: call.approval ?? null,
    policy: call.policy ?? null,
    originalArguments: call.originalArguments === null ? null : clipBytes(call.originalArguments, RECORD_FIELD_BYTES),
    editedBy: call.editedBy,
  };
}

/** How much of each argument set the edit note quotes to the model. */
const EDIT_NOTE_ARGUMENT_BYTES = 2048;

/**
 * What the model reads before an edited call's result: that a person changed the arguments, what it
 * proposed and what ran. The assistant message then shows what ran, and the model is never left to
 * believe its own proposal produced the result.
 */
export function editNote(call: Pick<PendingCall, 'arguments' | 'originalArguments' | 'editedBy'>): string {
  if (call.originalArguments === null) return '';
  const by = call.editedBy ? ` (${call.editedBy})` : '';
  return (
    `[The approver${by} edited this call's arguments before approving it. ` +
    `You proposed: ${clipBytes(call.originalArguments, EDIT_NOTE_ARGUMENT_BYTES)} ` +
    `It ran with: ${clipBytes(call.arguments, EDIT_NOTE_ARGUMENT_BYTES)}]\n`
  );
}

/** The calls of the step in progress as the decision record shows them while the turn waits. */
export function pendingRecordCalls(turn: ActiveTurn): AgentToolCall[] {
  return (turn.step?.calls ?? []).map(recordCall);
}

/** A reason or note as records keep it. */
export function clipReason(text: string): string {
  return clipBytes(text, BUDGET.reason);
}
