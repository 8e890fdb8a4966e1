/**
 * The tool calls of the agent turn in progress, as pure state transitions: what a call needs next,
 * how an approval or an external result applies to it, and how a finished step is sealed into the
 * transcript as one unit (so a call is never separated from its result). Unit-tested without
 * Temporal.
 *
 * Pure module: safe to import from workflow code.
 */
import { BUDGET } from '../contract/budget.js';
import type { ApprovalInput, ToolResultInput } from '../contract/messages.js';
import type { ActiveTurn, AgentToolCall, PendingCall, SessionState } from '../contract/state.js';
import { clipBytes } from '../contract/text.js';
import { clipToolOutput, type ResolvedToolCall, type ToolCallStatus } from '../contract/transcript.js';

/** Arguments and results as the decision record shows them. */
const RECORD_FIELD_BYTES = 1024;

/** What the turn must do next for a call. */
export type NextAction =
  | { kind: 'finish'; status: ToolCallStatus; output: string }
  | { kind: 'await-approval' }
  | { kind: 'await-result' }
  | { kind: 'run'; via: 'mcp' | 'memory_save' | 'session_create_sub' }
  | { kind: 'done' };

/** Starts a step: the model's calls, in its order, none carried out yet. */
export function startStep(turn: ActiveTurn, text: string | null, calls: ResolvedToolCall[]): void {
  turn.step = {
    text,
    calls: calls.map((call) => ({ ...call, state: 'new', requestedAt: null, output: null, result: null })),
  };
}

/** Decides the next action for one call, from its resolution and where it stands. */
export function nextAction(call: PendingCall): NextAction {
  if (call.state === 'done') return { kind: 'done' };
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

/** Records a call's result (clipped and marked when long); the call is done. */
export function finishCall(call: PendingCall, status: ToolCallStatus, output: string): void {
  call.state = 'done';
  call.result = status;
  call.output = clipToolOutput(output);
}

/** The calls of the current step that wait for (or may already receive) a person's decision. */
export function approvableCalls(turn: ActiveTurn | null): PendingCall[] {
  return (turn?.step?.calls ?? []).filter(
    (c) => c.requiresApproval && c.argumentError === null && (c.state === 'new' || c.state === 'waiting-approval'),
  );
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

/**
 * Applies an approval decision to the call it names. Returns null when applied, or why it was not
 * (no such call waits for approval) so the caller records a rejection.
 */
export function applyApproval(state: SessionState, approval: ApprovalInput): string | null {
  const call = approvableCalls(state.turn).find((c) => c.callId === approval.approvalId);
  if (!call) return `approval ${approval.approvalId} matches no tool call waiting for approval`;
  if (approval.approved) {
    call.state = 'approved';
  } else {
    const note = approval.note?.trim() ? `: ${approval.note.trim()}` : '';
    finishCall(call, 'rejected', `rejected by the user${note}`);
  }
  return null;
}

/** Applies an external tool's result to the call it names; null when applied, or why not. */
export function applyToolResult(state: SessionState, result: ToolResultInput): string | null {
  const call = externalCalls(state.turn).find((c) => c.callId === result.callId);
  if (!call) return `tool result ${result.callId} matches no tool call waiting for an external result`;
  const output = typeof result.output === 'string' ? result.output : (JSON.stringify(result.output) ?? 'null');
  finishCall(call, result.isError ? 'error' : 'ok', output);
  return null;
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
 * its calls to the decision record, and updates the loop guard. Returns how many times in a row
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
      output: c.output ?? '',
    })),
  });
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
  };
}

/** The calls of the step in progress as the decision record shows them while the turn waits. */
export function pendingRecordCalls(turn: ActiveTurn): AgentToolCall[] {
  return (turn.step?.calls ?? []).map(recordCall);
}

/** A reason or note as records keep it. */
export function clipReason(text: string): string {
  return clipBytes(text, BUDGET.reason);
}
