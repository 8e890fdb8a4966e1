/**
 * The tool calls of the agent turn in progress, as pure state transitions: what a call needs next,
 * and how a finished step is sealed into the transcript as one unit (so a call is never separated
 * from its result). Which calls wait, the approval id and arguments hash they are answered by, and
 * finishing a call are contract/pending-calls.ts's; how an approval or a result applies to a call is
 * control/approvals.ts's.
 * Unit-tested without Temporal.
 *
 * Pure module: safe to import from workflow code.
 */
import { GOAL_TOOL, isCapabilityTool, type CapabilityTool } from '../../contract/builtin-tools.js';
import { finishCall } from '../../contract/pending-calls.js';
import type { ActiveTurn, AgentToolCall, PendingCall, SessionState } from '../../contract/state.js';
import { clipBytes } from '../../contract/text.js';
import type { ResolvedToolCall, ToolCallStatus } from '../../contract/transcript.js';
import { recordStepArtifacts } from './artifacts.js';

/** Arguments and results as the decision record shows them. */
const RECORD_FIELD_BYTES = 1024;

/** Where a call that runs now is run: an MCP server, or the built-in of that name. */
export type RunVia = 'mcp' | 'memory_save' | 'session_create_sub' | CapabilityTool | typeof GOAL_TOOL;

/** What the turn must do next for a call. */
export type NextAction =
  | { kind: 'finish'; status: ToolCallStatus; output: string }
  | { kind: 'await-approval' }
  | { kind: 'await-result' }
  | { kind: 'run'; via: RunVia }
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
    if (isCapabilityTool(call.tool)) return { kind: 'run', via: call.tool };
    if (call.tool === GOAL_TOOL) return { kind: 'run', via: GOAL_TOOL };
    return { kind: 'run', via: call.tool === 'session_create_sub' ? 'session_create_sub' : 'memory_save' };
  }
  return { kind: 'run', via: 'mcp' };
}

/** The error result a denied call gives the model: the tool, the rule and its reason. */
function deniedOutput(call: PendingCall): string {
  const reason = call.policy?.reason ? `: ${call.policy.reason}` : '';
  return `denied by policy rule ${call.policy?.rule ?? '?'}${reason} (${call.tool} was not run)`;
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
