/**
 * The Session's public message surface, defined once and imported by the workflow and client/.
 * Names are wire contract: change them only with a migration note.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { CONTROL_SIGNALS, type ControlKind } from './control-signals.js';
import type { EventsPage } from './events.js';
import type { ApprovalResult, SessionStart, Recorded, SubSessionReplyResult, ToolResultAnswer } from './messages.js';
import {
  RESULT_WAIT_MAX_MS,
  type GoalsResult,
  type LimitArgument,
  type SessionView,
  type TurnResult,
} from './queries.js';
import type { BoundInput, Capabilities, DecisionRecord, OutOfScopeRequest, SessionState } from './state.js';

export const WORKFLOW_TYPE = 'session';
export const DEFAULT_TASK_QUEUE = 'sessions';

/** The workflow argument: the public start argument, plus state carried across continue-as-new. */
export type SessionInput = SessionStart & { carried?: unknown };

/** What a Session returns when it closes. */
export interface SessionResult {
  sessionId: string;
  status: SessionState['status'];
  lastSeq: number;
  runs: number;
}

/** The signature of workflow type `session`, for typed client handles (clients never import workflows/). */
export type SessionWorkflow = (input: SessionInput) => Promise<SessionResult>;

/** The only task input. Payload: MessageInput. Invalid payloads are recorded as rejections. */
export const messageSignal = defineSignal<[unknown]>('message');
/** Same payload as `message`; returns `{ seq, duplicate }` once recorded. Its validator rejects bad input. */
export const submitUpdate = defineUpdate<Recorded, [unknown]>('submit');
/**
 * Waits (at most RESULT_WAIT_MAX_MS) until the input with this seq has its decision and its agent turn has ended,
 * or the turn waits for an approval or an external tool result; returns the decision record. Payload:
 * ResultRequest `{ seq, timeoutMs? }`.
 */
export const resultUpdate = defineUpdate<TurnResult, [unknown]>('result');

/**
 * A sub-session's reply to an input its parent handed over; sent by the sub-session's worker, never
 * by users. Payload: SubSessionReply. A bypass input: recorded, never judged or queued as a task.
 */
export const subSessionReplyUpdate = defineUpdate<SubSessionReplyResult, [unknown]>('subSessionReply');

/**
 * The `approval` signal's payload as an update: applied the same way, in order with the other control
 * signals, and answers once applied, or fails with the reason it answered nothing (a refused argument
 * edit, a bad signature, no such waiting call). Clients use it for approvals that edit arguments.
 */
export const approveUpdate = defineUpdate<ApprovalResult, [unknown]>('approve');

/**
 * The `toolResult` signal's payload as an update: applied the same way, in order with the other
 * control signals; answers once the result reached the waiting call, or fails (`ToolResultRefused`)
 * with why it answered nothing (no call waits for it, a bad signature, already answered). Bad input is
 * refused by its validator before it reaches history. Clients send tool results with it.
 */
export const answerToolUpdate = defineUpdate<ToolResultAnswer, [unknown]>('answerTool');

export const approvalSignal = defineSignal<[unknown]>('approval');
export const toolResultSignal = defineSignal<[unknown]>('toolResult');
export const notificationSignal = defineSignal<[unknown]>('notification');
export const commandSignal = defineSignal<[unknown]>('command');
/** The signal definition of each non-task input (see control-signals.ts for schemas and ids). */
export const CONTROL_SIGNAL_DEFINITIONS = {
  approval: approvalSignal,
  toolResult: toolResultSignal,
  notification: notificationSignal,
  command: commandSignal,
} as const satisfies Record<ControlKind, unknown>;

export const goalsQuery = defineQuery<GoalsResult>('goals');
export const capabilitiesQuery = defineQuery<Capabilities>('capabilities');
export const decisionsQuery = defineQuery<DecisionRecord[], [LimitArgument?]>('decisions');
export const snapshotQuery = defineQuery<SessionView>('snapshot');
export const historyQuery = defineQuery<BoundInput[], [LimitArgument?]>('history');
export const outOfScopeQuery = defineQuery<OutOfScopeRequest[]>('outOfScope');
/** The durable events after an id (contract/events.ts). Argument: EventsRequest `{ after?, limit? }`. */
export const eventsQuery = defineQuery<EventsPage, [unknown?]>('events');

/** Shown by the Temporal Web UI next to each handler, so its forms explain themselves. */
export const DESCRIPTIONS = {
  message:
    'Task input. {"messageId": string, "text": string, "resources"?: [{"uri", "title"?, "mimeType"?}], "from"?: {"kind": "user"|"session", "id"?}}. De-duplicated by messageId; invalid payloads are recorded as rejections.',
  submit:
    'Same payload as the message signal; returns {"seq", "duplicate"} once the input is recorded. Bad input is rejected before it reaches history.',
  approval: CONTROL_SIGNALS.approval.description,
  toolResult: CONTROL_SIGNALS.toolResult.description,
  notification: CONTROL_SIGNALS.notification.description,
  command: CONTROL_SIGNALS.command.description,
  subSessionReply:
    'A sub-session\'s reply to an input this Session handed over (sent by the sub-session\'s worker): {"sessionId", "seq", "parentSeq", "messageId", "reason", "outcome", "reply", "why", "signature"?}. Under signed control only with its worker\'s signature. Recorded as a fact; de-duplicated by (sessionId, seq).',
  approve:
    'The approval signal as an update: same payload (plus "arguments"?: string, a JSON object that replaces the model\'s, checked against the tool\'s schema and the approval policy first); returns {"approvalId", "approved"} once applied, or fails with why it answered nothing (the call keeps waiting).',
  answerTool:
    'The toolResult signal as an update: same payload {"callId", "resultId"?, "output", "isError"?}; returns {"callId"} once the result reached the waiting call, or fails with why it answered nothing.',
  result: `Waits (at most ${RESULT_WAIT_MAX_MS / 1000} s) for the input {"seq": number, "timeoutMs"?: number} to be decided and its agent turn to end or wait for an approval or a tool result; returns {"seq", "status", "outcome", "record"}.`,
  goals:
    'Session-wide and current-phase goals, task statements with the message they were stated from: {"session": Goal|null, "phase": Goal|null, "history": [GoalChange] (the newest 10)}.',
  capabilities: 'Loaded skills, toolsets and memories with id, name and source, and the capability revision.',
  decisions: 'Recent decision records, newest last. Optional argument {"limit": number}.',
  snapshot:
    'Everything an operator needs at a glance: stage, status, queue, seq, counts, goals, capabilities, last decision.',
  history:
    'Recent bound inputs (raw message as recorded, decision, agent reply), newest last. Optional {"limit": number}.',
  outOfScope: 'Out-of-scope requests preserved for responsibility routing, with their routing status.',
  events:
    'Durable events after an id, oldest first: {"after"?: "<seq>.<ordinal>", "limit"?: number} → {"events", "gap", "lastId", "more"}.',
} as const;
