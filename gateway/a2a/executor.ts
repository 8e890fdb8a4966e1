/**
 * A kind of Session as an A2A agent executor (`@a2a-js/sdk`'s AgentExecutor): the SDK's
 * DefaultRequestHandler calls it for `SendMessage` / `SendStreamingMessage`, and it turns each A2A
 * message into one Session input and that input's events into A2A task events.
 *
 * - contextId is the Session id (the SDK makes a fresh UUID when the client names none, so a new
 *   context is a new Session); one task per input.
 * - The message's text parts are the input's text, sent with the `submit` update as the caller's
 *   principal; the task is `submitted`, then `working` once the Session recorded it.
 * - `agent.delta` events are the `reply` artifact, streamed (append); `turn.finished` replaces it with
 *   the whole reply and ends the task: `completed` (replied), `canceled` (interrupted), `rejected`
 *   (the agent did not act on the input), `failed` (anything else, with the reason).
 * - `approval.waiting` makes the task `input-required`: its status message names the call and the
 *   approval id, with a data part `{approval: {...}}`. The call is answered either through the
 *   gateway's approve/reject endpoints (or the inbox), or by a follow-up A2A message on the same task
 *   with a data part `{"approval": {"approved": true|false, "note"?}}` from a principal with the
 *   `approve` permission. Any follow-up message on the task resumes it: from the Session's events
 *   it goes on to its end, or says again that it waits.
 * - `tasks/cancel` sends the Session the `interrupt` command.
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type Part } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
  type User,
} from '@a2a-js/sdk/server';
import type { SessionClient } from '../../client/index.js';
import type { EventFeed, EventKind, SessionEvent } from '../../contract/events.js';
import { SessionId } from '../../contract/messages.js';
import type { TurnOutcome } from '../../contract/state.js';
import { may, type Principal } from '../auth.js';
import type { A2aAgentConfig } from './config.js';

/** The SDK's User for a gateway principal: what the executor acts as. */
export class PrincipalUser implements User {
  constructor(readonly principal: Principal) {}
  get isAuthenticated(): boolean {
    return this.principal.anonymous !== true;
  }
  get userName(): string {
    return this.principal.name;
  }
}

/** Where a task stands in its Session: the input it is, and the call it waits on. */
interface TaskPlace {
  sessionId: string;
  seq: number;
  waiting: { approvalId: string; argumentsHash: string; text: string; call: Record<string, unknown> } | null;
  /** The last of its events the task has shown (a follow-up goes on after it). */
  after: string;
  /** An execute call is following the Session's events for it now. */
  following: boolean;
}

export interface SessionExecutorOptions {
  client: SessionClient;
  agent: A2aAgentConfig;
  feed?: EventFeed;
  /** Longest wait for a turn's end while a stream is open (default 15 minutes). */
  turnTimeoutMs?: number;
}

const textPart = (value: string): Part => ({
  content: { $case: 'text', value },
  mediaType: 'text/plain',
  filename: '',
  metadata: {},
});
const dataPart = (value: Record<string, unknown>): Part => ({
  content: { $case: 'data', value },
  mediaType: 'application/json',
  filename: '',
  metadata: {},
});

/** One Session kind, served over A2A. */
export class SessionAgentExecutor implements AgentExecutor {
  /** Tasks this gateway started, by task id (as long-lived as the SDK's in-memory task store). */
  private readonly places = new Map<string, TaskPlace>();

  constructor(private readonly options: SessionExecutorOptions) {}

  execute = async (request: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const principal = principalOf(request);
    const { taskId, contextId } = request;
    const message = request.userMessage;
    const place = this.places.get(taskId);
    if (request.task && place) {
      // A follow-up on a task that waits: answer the call if it says how, then go on from the events.
      bus.publish(
        AgentEvent.task({ ...request.task, status: status(TaskState.TASK_STATE_WORKING, taskId, contextId) }),
      );
      const answer = approvalOf(message);
      if (!answer && place.waiting && (await this.stillWaiting(place))) {
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: status(TaskState.TASK_STATE_INPUT_REQUIRED, taskId, contextId, place.waiting.text, {
              approval: place.waiting.call,
            }),
            metadata: { seq: place.seq },
          }),
        );
        return;
      }
      if (answer && place.waiting) {
        if (!may(principal, 'approve')) {
          throw new Error(`${principal.name} does not have the "approve" permission`);
        }
        const as = this.options.client.as(principal.name);
        const { approvalId, argumentsHash } = place.waiting;
        const options = { argumentsHash, ...(answer.note ? { note: answer.note } : {}) };
        await (answer.approved
          ? as.approve(place.sessionId, approvalId, options)
          : as.reject(place.sessionId, approvalId, options));
      }
      await this.follow(taskId, contextId, place, bus);
      return;
    }
    if (request.task) throw new Error(`task ${taskId} was not started by this gateway (it keeps tasks in memory)`);
    const sessionId = SessionId.safeParse(contextId);
    if (!sessionId.success) {
      throw new Error(`contextId is the Session id: ${sessionId.error.issues[0]?.message ?? 'invalid'}`);
    }
    const text = textOf(message);
    if (!text) throw new Error('the message has no text part: a Session input is text');
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: status(TaskState.TASK_STATE_SUBMITTED, taskId, contextId),
        history: [message],
        artifacts: [],
        metadata: { sessionId: contextId },
      }),
    );
    const { agent } = this.options;
    const submitted = await this.options.client.submit(
      contextId,
      {
        messageId: message.messageId,
        text,
        ...(principal.anonymous ? {} : { from: { kind: 'user' as const, id: principal.name } }),
      },
      agent.goal ? { start: { goals: { session: agent.goal } } } : {},
    );
    const next: TaskPlace = {
      sessionId: contextId,
      seq: submitted.seq,
      waiting: null,
      after: `${submitted.seq - 1}.${Number.MAX_SAFE_INTEGER}`,
      following: false,
    };
    this.places.set(taskId, next);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: status(TaskState.TASK_STATE_WORKING, taskId, contextId),
        metadata: { seq: submitted.seq, duplicate: submitted.duplicate },
      }),
    );
    await this.follow(taskId, contextId, next, bus);
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const place = this.places.get(taskId);
    if (!place) throw new Error(`task ${taskId} is not known to this gateway`);
    await this.options.client.command(place.sessionId, { name: 'interrupt' });
    // A follower sees the turn end as `interrupted` and says so; a task nobody follows (waiting for
    // input, its stream closed) is canceled here.
    if (!place.following) {
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: place.sessionId,
          status: status(TaskState.TASK_STATE_CANCELED, taskId, place.sessionId, 'Interrupted on request.'),
          metadata: {},
        }),
      );
    }
  };

  /** Whether the call the task waits on still waits (it may have been answered in the inbox). */
  private async stillWaiting(place: TaskPlace): Promise<boolean> {
    const view = await this.options.client.snapshot(place.sessionId);
    return view.pendingApprovals.some((call) => call.approvalId === place.waiting?.approvalId);
  }

  /** Follows input `place.seq`'s events until its turn ends or waits for an approval. */
  private async follow(taskId: string, contextId: string, place: TaskPlace, bus: ExecutionEventBus): Promise<void> {
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), this.options.turnTimeoutMs ?? 15 * 60_000);
    place.following = true;
    const update = (state: TaskState, text?: string, data?: Record<string, unknown>) =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: status(state, taskId, contextId, text, data),
          metadata: { seq: place.seq },
        }),
      );
    const reply = (text: string, append: boolean, lastChunk: boolean) =>
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: 'reply',
            name: 'reply',
            description: "The agent's reply",
            parts: [textPart(text)],
            metadata: {},
            extensions: [],
          },
          append,
          lastChunk,
          metadata: {},
        }),
      );
    // The newest attempt of each step whose text was streamed; a retried attempt restarts the artifact.
    const attempts = new Map<number, number>();
    let streamed = false;
    try {
      const events = this.options.client.events(place.sessionId, {
        after: place.after,
        signal: stop.signal,
        ...(this.options.feed ? { feed: this.options.feed } : {}),
      });
      for await (const event of events) {
        if (event.kind === 'session.closed') {
          update(TaskState.TASK_STATE_FAILED, `The Session closed: ${event.reason}`);
          return;
        }
        // A merged input's events carry the seq of the turn it joined.
        if (event.kind === 'input.merged' && event.mergedSeq === place.seq) {
          update(
            TaskState.TASK_STATE_COMPLETED,
            `Joined the running turn of input #${event.into}; its reply answers this message too.`,
          );
          return;
        }
        if (event.seq !== place.seq) continue;
        if (event.kind !== 'agent.delta') place.after = event.id;
        switch (event.kind) {
          case 'agent.delta': {
            if (event.speculative) break;
            const attempt = event.attempt ?? 1;
            const before = attempts.get(event.step);
            if (before !== undefined && attempt < before) break;
            const restart = before !== undefined && attempt > before;
            attempts.set(event.step, attempt);
            reply(event.text, streamed && !restart, false);
            streamed = true;
            break;
          }
          case 'approval.waiting': {
            const call = {
              approvalId: event.approvalId,
              callId: event.callId,
              tool: event.tool,
              arguments: event.arguments,
              argumentsHash: event.argumentsHash,
            };
            const text = waitingText(place.sessionId, event);
            place.waiting = { approvalId: event.approvalId, argumentsHash: event.argumentsHash, text, call };
            update(TaskState.TASK_STATE_INPUT_REQUIRED, text, { approval: call });
            return;
          }
          case 'tool.approved':
          case 'tool.rejected':
            if (place.waiting?.approvalId === event.approvalId) place.waiting = null;
            break;
          case 'turn.finished': {
            place.waiting = null;
            const [state, text] = ending(event);
            if (state === TaskState.TASK_STATE_COMPLETED) reply(text, false, true);
            update(state, text);
            return;
          }
          default:
            break;
        }
      }
      update(
        TaskState.TASK_STATE_FAILED,
        stop.signal.aborted ? 'No end of the turn within the wait; the Session goes on.' : 'The event stream ended.',
      );
    } finally {
      place.following = false;
      clearTimeout(timer);
      stop.abort();
    }
  }
}

/**
 * The A2A task state of each turn outcome (docs/contract.md renders this table). `turn.finished`
 * carries only ending outcomes; the two waiting ones are what a task shows while its turn waits.
 */
export const TASK_STATE_OF_OUTCOME: Record<TurnOutcome, TaskState> = {
  replied: TaskState.TASK_STATE_COMPLETED,
  'waiting-approval': TaskState.TASK_STATE_INPUT_REQUIRED,
  // An external tool result comes from a backend, not from the A2A caller: the task keeps working.
  'waiting-tool': TaskState.TASK_STATE_WORKING,
  interrupted: TaskState.TASK_STATE_CANCELED,
  skipped: TaskState.TASK_STATE_REJECTED,
  guarded: TaskState.TASK_STATE_FAILED,
  failed: TaskState.TASK_STATE_FAILED,
  'budget-exceeded': TaskState.TASK_STATE_FAILED,
  // The message joined a running turn (whileBusy: merge); that turn's task carries the reply.
  merged: TaskState.TASK_STATE_COMPLETED,
};

/** What each Session event does to the input's A2A task (docs/contract.md renders this table). */
export const A2A_EVENT_EFFECT: Record<EventKind, string> = {
  'input.bound': 'nothing (the task is `working` from the moment `submit` recorded the input)',
  'input.merged':
    'for the merged message’s task: status `completed`, saying which running turn it joined (that turn’s task carries the reply)',
  decision: 'nothing',
  'stage.started': 'nothing',
  'stage.finished': 'nothing',
  'capabilities.changed': 'nothing',
  'goal.changed': 'nothing',
  'tool.proposed': 'nothing',
  'approval.waiting':
    'status `input-required`; its message has a text part naming the call and a data part `{approval: {approvalId, callId, tool, arguments, argumentsHash}}`; the stream ends',
  'tool.approved': 'nothing (a follow-up message on the task goes on from here)',
  'tool.rejected': 'nothing (a follow-up message on the task goes on from here)',
  'tool.started': 'nothing',
  'tool.finished': 'nothing',
  'agent.delta':
    'artifact `reply`: the text piece, appended (a retried attempt starts it again; speculative pieces are not shown)',
  'turn.finished':
    'artifact `reply` with the whole reply (last chunk) when it replied, then the status of its outcome (below), with the reply or the reason as its message',
  'session.closed': 'status `failed`, the reason as its message',
};

/** The A2A state and text a finished turn ends its task with. */
function ending(event: Extract<SessionEvent, { kind: 'turn.finished' }>): [TaskState, string] {
  const outcome = event.outcome as TurnOutcome;
  const state = TASK_STATE_OF_OUTCOME[outcome] ?? TaskState.TASK_STATE_FAILED;
  if (state === TaskState.TASK_STATE_COMPLETED) return [state, event.reply ?? ''];
  if (state === TaskState.TASK_STATE_FAILED) return [state, `${event.outcome}: ${event.reason ?? 'no reason given'}`];
  return [state, event.reason ?? event.outcome];
}

function waitingText(sessionId: string, event: Extract<SessionEvent, { kind: 'approval.waiting' }>): string {
  return (
    `Waiting for approval of ${event.tool}(${event.arguments}). Answer with a message on this task whose data part is ` +
    `{"approval": {"approved": true}} (or false, with a "note"), or through the gateway: ` +
    `POST /sessions/${sessionId}/approvals/${event.approvalId}/approve (or /reject).`
  );
}

function status(state: TaskState, taskId: string, contextId: string, text?: string, data?: Record<string, unknown>) {
  const parts = [...(text !== undefined ? [textPart(text)] : []), ...(data ? [dataPart(data)] : [])];
  const message: Message | undefined =
    parts.length === 0
      ? undefined
      : {
          messageId: randomUUID(),
          contextId,
          taskId,
          role: Role.ROLE_AGENT,
          parts,
          metadata: {},
          extensions: [],
          referenceTaskIds: [],
        };
  return { state, message, timestamp: new Date().toISOString() };
}

function textOf(message: Message): string {
  return message.parts
    .flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []))
    .join('\n')
    .trim();
}

/** The approval answer a follow-up message carries: a data part `{approval: {approved, note?}}`. */
function approvalOf(message: Message): { approved: boolean; note?: string } | null {
  for (const part of message.parts) {
    if (part.content?.$case !== 'data') continue;
    const answer = (part.content.value as { approval?: unknown } | undefined)?.approval;
    if (typeof answer !== 'object' || answer === null) continue;
    const { approved, note } = answer as { approved?: unknown; note?: unknown };
    if (typeof approved !== 'boolean') throw new Error('approval.approved must be true or false');
    return { approved, ...(typeof note === 'string' && note.trim() ? { note: note.trim() } : {}) };
  }
  return null;
}

function principalOf(request: RequestContext): Principal {
  const user = request.context.user;
  if (!(user instanceof PrincipalUser)) throw new Error('the request has no authenticated principal');
  return user.principal;
}
