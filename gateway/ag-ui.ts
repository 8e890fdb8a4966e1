/**
 * A Session as an AG-UI agent (the event protocol chat front ends consume): `POST /ag-ui` takes AG-UI's
 * RunAgentInput and answers that input's turn as an AG-UI event stream; `GET /sessions/:id/ag-ui`
 * follows a Session's events as AG-UI. Types and input validation are `@ag-ui/core`'s, the stream is
 * `@ag-ui/encoder`'s Server-Sent Events, state deltas are JSON Patch from `fast-json-patch`.
 *
 * - threadId is the Session id; a run is one input's turn (runId: the caller's, or `<session>#<seq>`
 *   when following). The last user message's text is the input, sent as the authenticated principal
 *   through the same SessionClient `submit` as `POST /sessions/:id/messages`; its message id is the
 *   input's messageId, so a repeated run of the same message is the same input (de-duplicated).
 * - A call that waits for approval ends the run with AG-UI's `interrupt` outcome (one interrupt per
 *   call, its id the approvalId). The next run answers it with a `resume` entry (`resolved` with
 *   payload `{approved, note?, arguments?}`, or `cancelled` = rejected), needs the `approve`
 *   permission, and goes on with the same input's turn. The gateway's approve/reject endpoints and the
 *   inbox answer the same calls.
 * - docs/contract.md renders AG_UI_EVENT_MAPPING: what each Session event becomes.
 */
import {
  EventType,
  contentToText,
  type AGUIEvent,
  type Interrupt,
  type JsonPatch,
  type RunAgentInput,
} from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { EventEncoder } from '@ag-ui/encoder';
import jsonPatch from 'fast-json-patch';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidInputError, type MessageDraft, type SessionClient } from '../client/index.js';
import { EVENT_TEXT_BYTES, type EventFeed, type EventKind, type SessionEvent } from '../contract/events.js';
import { SessionId } from '../contract/messages.js';
import type { SessionView } from '../contract/queries.js';
import type { TurnOutcome } from '../contract/state.js';
import { ForbiddenError, may, type Principal } from './auth.js';

/** The AG-UI state of a Session: what STATE_SNAPSHOT carries and STATE_DELTA patches. */
export interface AgUiState {
  sessionId: string;
  stage: string;
  goals: { session: string | null; phase: string | null };
  capabilities: { skills: string[]; toolsets: string[]; memories: string[]; revision: number };
  pendingApprovals: Array<{ approvalId: string; tool: string; arguments: string }>;
}

export function agUiState(view: SessionView): AgUiState {
  return {
    sessionId: view.sessionId,
    stage: view.stage,
    goals: { session: view.goals.session?.text ?? null, phase: view.goals.phase?.text ?? null },
    capabilities: {
      skills: view.capabilities.skills.map((c) => c.id),
      toolsets: view.capabilities.toolsets.map((c) => c.id),
      memories: view.capabilities.memories.map((c) => c.id),
      revision: view.capabilities.revision,
    },
    pendingApprovals: view.pendingApprovals.map((a) => ({
      approvalId: a.approvalId,
      tool: a.tool,
      arguments: a.arguments,
    })),
  };
}

/** What each Session event becomes in AG-UI (docs/contract.md renders this table). */
export const AG_UI_EVENT_MAPPING: Record<EventKind, string> = {
  'input.bound':
    'opens the input’s run: `RUN_STARTED` then `STATE_SNAPSHOT`; on a followed stream also the input as a `user` text message (`TEXT_MESSAGE_START`/`CONTENT`/`END`, its messageId)',
  'input.merged': 'nothing (the merged message is in the running turn’s next step; that run’s end answers it too)',
  decision: '`CUSTOM` `decision` `{seq, decision, scores, degraded}`, then `STATE_DELTA` (goals)',
  'stage.started': '`STATE_DELTA` replacing `/stage`',
  'stage.finished': 'nothing',
  'capabilities.changed': '`STATE_DELTA` of `/capabilities`',
  'goal.changed': '`STATE_DELTA` of `/goals`',
  'tool.proposed':
    '`TOOL_CALL_START` (toolCallId `<seq>:<step>:<callId>`, the tool), `TOOL_CALL_ARGS` (the arguments), `TOOL_CALL_END`',
  'approval.waiting':
    '`CUSTOM` `approval.waiting` `{approvalId, toolCallId, tool, arguments, argumentsHash}`, `STATE_DELTA` of `/pendingApprovals`, then `RUN_FINISHED` with outcome `interrupt` (interrupt id = approvalId, reason `tool_approval`); a run with a `resume` entry for it answers it and goes on',
  'tool.approved': '`CUSTOM` `tool.approved` `{approvalId, toolCallId, by, note, arguments}`',
  'tool.rejected': '`CUSTOM` `tool.rejected` `{approvalId, toolCallId, by, note}`',
  'tool.started': 'nothing',
  'tool.finished': '`TOOL_CALL_RESULT` (role `tool`, the output as content)',
  'agent.delta':
    'the step’s text: `TEXT_MESSAGE_START` (assistant, messageId `<session>:<seq>:<step>`) at its first piece, then `TEXT_MESSAGE_CONTENT`; a retried attempt is a new message; catch-up pieces are shown the same way',
  'turn.finished':
    'ends the text message (completed from the reply when the stream missed its end, or the whole reply when nothing streamed), `STATE_DELTA`, then by outcome: `RUN_FINISHED` (replied, skipped: result `{outcome, reply, reason}`), `RUN_FINISHED` outcome `cancelled` (interrupted), `RUN_ERROR` code = outcome (guarded, failed, budget-exceeded)',
  'session.closed': '`RUN_ERROR` code `session.closed` when a run is open; the stream ends',
};

/** The answer an approval interrupt expects in a resume entry's payload. */
export const APPROVAL_RESPONSE_SCHEMA = {
  type: 'object',
  properties: {
    approved: { type: 'boolean' },
    note: { type: 'string', description: 'Shown to the model with a rejection; recorded either way.' },
    arguments: { type: 'object', description: 'Approve only: run the call with these arguments instead.' },
  },
  required: ['approved'],
} as const;

const OUTCOME_ERRORS: ReadonlySet<string> = new Set<TurnOutcome>(['guarded', 'failed', 'budget-exceeded']);

export interface AgUiRunsOptions {
  sessionId: string;
  emit: (event: AGUIEvent) => void;
  /** The Session's view now, for state snapshots and deltas. */
  snapshot: () => Promise<SessionView>;
  /** The whole reply of an input, when the event's copy was clipped (else null). */
  fullReply: (seq: number) => Promise<string | null>;
  /** Show each input as a user text message (a followed stream; a run's caller has its own message). */
  userMessages: boolean;
  /** The runId of the run for input `seq` (the `n`th run of that input, from 0). */
  runId: (seq: number, n: number) => string;
}

interface OpenText {
  messageId: string;
  step: number;
  attempt: number;
  text: string;
}

interface OpenRun {
  seq: number;
  runId: string;
  text: OpenText | null;
  /** Text the turn streamed since its last tool call (the final step's so far). */
  textSinceTool: string;
}

/**
 * Turns one Session's events (in order, as SessionClient.events yields them) into AG-UI runs: a run
 * opens at the first event of an input and ends when its turn ends or waits for an approval.
 */
export class AgUiRuns {
  private run: OpenRun | null = null;
  private state: AgUiState | null = null;
  private readonly runs = new Map<number, number>();
  /** Newest attempt streamed per `<seq>:<step>`: an older attempt's late pieces are dropped. */
  private readonly attempts = new Map<string, number>();
  /** toolCallId by callId, of input `callsSeq`'s calls. */
  private readonly calls = new Map<string, string>();
  private callsSeq = -1;
  /** The outcome of the last run that ended, or null while one is open or before the first. */
  ended: 'finished' | 'interrupt' | 'error' | null = null;

  constructor(private readonly options: AgUiRunsOptions) {}

  /** Whether a run is open now. */
  get open(): boolean {
    return this.run !== null;
  }

  /** Opens the run of input `seq` (the caller's run names its own runId and input). */
  async start(seq: number, runId?: string, input?: RunAgentInput): Promise<void> {
    const n = this.runs.get(seq) ?? 0;
    this.runs.set(seq, n + 1);
    const id = runId ?? this.options.runId(seq, n);
    this.run = { seq, runId: id, text: null, textSinceTool: '' };
    this.ended = null;
    this.options.emit({
      type: EventType.RUN_STARTED,
      threadId: this.options.sessionId,
      runId: id,
      ...(input ? { input } : {}),
    });
    this.state = agUiState(await this.options.snapshot());
    this.options.emit({ type: EventType.STATE_SNAPSHOT, snapshot: this.state });
  }

  /** Translates one Session event; events of other inputs than the open run's are skipped. */
  async event(event: SessionEvent): Promise<void> {
    if (event.kind === 'session.closed') {
      if (this.run) this.error(`The Session closed: ${event.reason}`, 'session.closed');
      return;
    }
    if (event.seq === 0) return;
    if (!this.run) {
      // A followed stream opens a run at each input's first event (and again after an interrupt).
      if (!this.options.userMessages) return;
      await this.start(event.seq);
    }
    const run = this.run!;
    if (event.seq !== run.seq) {
      if (!this.options.userMessages || event.seq < run.seq) return;
      // The followed stream missed the end of the previous input's run (a gap): close it as it stands.
      this.finish({});
      await this.start(event.seq);
      return this.event(event);
    }
    const emit = this.options.emit;
    switch (event.kind) {
      case 'input.bound':
        if (this.options.userMessages) {
          emit({ type: EventType.TEXT_MESSAGE_START, messageId: event.messageId, role: 'user' });
          if (event.text) {
            emit({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: event.messageId, delta: event.text });
          }
          emit({ type: EventType.TEXT_MESSAGE_END, messageId: event.messageId });
        }
        break;
      case 'agent.delta':
        this.delta(run, event);
        break;
      case 'decision':
        emit(
          custom('decision', {
            seq: event.seq,
            decision: event.decision,
            scores: event.scores,
            degraded: event.degraded,
          }),
        );
        await this.refresh();
        break;
      case 'stage.started':
        this.patch({ ...this.state!, stage: event.stage });
        break;
      case 'capabilities.changed':
      case 'goal.changed':
        await this.refresh();
        break;
      case 'tool.proposed': {
        const parent = run.text?.messageId;
        this.endText(run);
        run.textSinceTool = '';
        const toolCallId = this.remember(event);
        emit({
          type: EventType.TOOL_CALL_START,
          toolCallId,
          toolCallName: event.tool,
          ...(parent ? { parentMessageId: parent } : {}),
        });
        emit({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta: event.arguments });
        emit({ type: EventType.TOOL_CALL_END, toolCallId });
        break;
      }
      case 'approval.waiting': {
        this.endText(run);
        const toolCallId = this.toolCallId(event);
        const call = {
          approvalId: event.approvalId,
          toolCallId,
          callId: event.callId,
          tool: event.tool,
          arguments: event.arguments,
          argumentsHash: event.argumentsHash,
        };
        emit(custom('approval.waiting', call));
        await this.refresh();
        const interrupt: Interrupt = {
          id: event.approvalId,
          reason: 'tool_approval',
          message: `Approve or reject ${event.tool}(${event.arguments}).`,
          toolCallId,
          responseSchema: APPROVAL_RESPONSE_SCHEMA,
          metadata: { tool: event.tool, arguments: event.arguments, argumentsHash: event.argumentsHash },
        };
        this.finish({ outcome: { type: 'interrupt', interrupts: [interrupt] } }, 'interrupt');
        break;
      }
      case 'tool.approved':
        emit(
          custom('tool.approved', {
            approvalId: event.approvalId,
            toolCallId: this.toolCallId(event),
            tool: event.tool,
            by: event.by,
            note: event.note,
            arguments: event.arguments ?? null,
            originalArguments: event.originalArguments,
          }),
        );
        await this.refresh();
        break;
      case 'tool.rejected':
        emit(
          custom('tool.rejected', {
            approvalId: event.approvalId,
            toolCallId: this.toolCallId(event),
            tool: event.tool,
            by: event.by,
            note: event.note,
          }),
        );
        await this.refresh();
        break;
      case 'tool.finished': {
        const toolCallId = this.toolCallId(event);
        emit({
          type: EventType.TOOL_CALL_RESULT,
          messageId: `${toolCallId}:result`,
          toolCallId,
          content: event.output,
          role: 'tool',
        });
        break;
      }
      case 'turn.finished':
        await this.turnFinished(run, event);
        break;
      default:
        break;
    }
  }

  /**
   * Notes a proposed call's toolCallId (`<seq>:<step>:<callId>`, the approval id's form): later events
   * name only the callId. A resumed run notes the calls of the input's earlier runs it skips.
   */
  remember(event: Extract<SessionEvent, { kind: 'tool.proposed' }>): string {
    if (this.callsSeq !== event.seq) this.calls.clear();
    this.callsSeq = event.seq;
    const toolCallId = `${event.seq}:${event.step}:${event.callId}`;
    this.calls.set(event.callId, toolCallId);
    return toolCallId;
  }

  private toolCallId(event: { seq: number; callId: string; approvalId?: string }): string {
    const known = this.callsSeq === event.seq ? this.calls.get(event.callId) : undefined;
    return known ?? event.approvalId ?? `${event.seq}:${event.callId}`;
  }

  /** Ends the open run with an error (a timeout, a failure reading the Session). */
  error(message: string, code: string): void {
    if (!this.run) return;
    this.endText(this.run);
    this.run = null;
    this.ended = 'error';
    this.options.emit({ type: EventType.RUN_ERROR, message, code });
  }

  private delta(run: OpenRun, event: Extract<SessionEvent, { kind: 'agent.delta' }>): void {
    const attempt = event.attempt ?? 1;
    const key = `${event.seq}:${event.step}`;
    const newest = this.attempts.get(key) ?? attempt;
    if (attempt < newest || event.text === '') return;
    this.attempts.set(key, attempt);
    if (run.text && (run.text.step !== event.step || run.text.attempt !== attempt)) {
      if (run.text.step === event.step) run.textSinceTool = '';
      this.endText(run);
    }
    if (!run.text) {
      const messageId = `${this.options.sessionId}:${event.seq}:${event.step}${attempt > 1 ? `:${attempt}` : ''}`;
      run.text = { messageId, step: event.step, attempt, text: '' };
      this.options.emit({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' });
    }
    run.text.text += event.text;
    run.textSinceTool += event.text;
    this.options.emit({
      type: EventType.TEXT_MESSAGE_CONTENT,
      messageId: run.text.messageId,
      delta: event.text,
      ...(event.catchUp ? { metadata: { catchUp: true } } : {}),
    });
  }

  private async turnFinished(run: OpenRun, event: Extract<SessionEvent, { kind: 'turn.finished' }>): Promise<void> {
    let reply = event.reply;
    // The event keeps 2,048 bytes of a reply; the Session's history has all of it.
    if (reply !== null && reply.endsWith('…') && Buffer.byteLength(reply) >= EVENT_TEXT_BYTES - 3) {
      reply = (await this.options.fullReply(event.seq)) ?? reply;
    }
    if (reply) {
      const streamed = run.textSinceTool;
      if (streamed === '') {
        // Nothing streamed (a model that does not stream, deltas lost): the reply as one message.
        const messageId = `${this.options.sessionId}:${event.seq}:reply`;
        this.endText(run);
        this.options.emit({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' });
        this.options.emit({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: reply });
        this.options.emit({ type: EventType.TEXT_MESSAGE_END, messageId });
      } else if (run.text && reply.startsWith(streamed) && reply.length > streamed.length) {
        // The stream missed the end of the text (best effort): complete it from the reply.
        this.options.emit({
          type: EventType.TEXT_MESSAGE_CONTENT,
          messageId: run.text.messageId,
          delta: reply.slice(streamed.length),
        });
      }
    }
    this.endText(run);
    await this.refresh();
    const outcome = event.outcome;
    if (OUTCOME_ERRORS.has(outcome)) {
      this.error(`${outcome}: ${event.reason ?? 'no reason given'}`, outcome);
      return;
    }
    if (outcome === 'interrupted') {
      this.finish({ outcome: { type: 'cancelled' } });
      return;
    }
    this.finish({ result: { outcome, reply: event.reply, reason: event.reason } });
  }

  private finish(fields: Record<string, unknown>, ended: 'finished' | 'interrupt' = 'finished'): void {
    const run = this.run;
    if (!run) return;
    this.endText(run);
    this.run = null;
    this.ended = ended;
    this.options.emit({
      type: EventType.RUN_FINISHED,
      threadId: this.options.sessionId,
      runId: run.runId,
      ...fields,
    });
  }

  private endText(run: OpenRun): void {
    if (!run.text) return;
    this.options.emit({ type: EventType.TEXT_MESSAGE_END, messageId: run.text.messageId });
    run.text = null;
  }

  /** Re-reads the Session's state and sends what changed as a JSON Patch. */
  private async refresh(): Promise<void> {
    const next = agUiState(await this.options.snapshot());
    // The stage comes from the events as they are read; the snapshot's is where the Session is now.
    this.patch(next);
  }

  private patch(next: AgUiState): void {
    const before = this.state;
    this.state = next;
    if (!before) return;
    // `compare` makes only add, remove and replace operations, all of them AG-UI's JsonPatch.
    const delta = jsonPatch.compare(before, next) as JsonPatch;
    if (delta.length > 0) this.options.emit({ type: EventType.STATE_DELTA, delta });
  }
}

const custom = (name: string, value: Record<string, unknown>): AGUIEvent => ({ type: EventType.CUSTOM, name, value });

/** What a RunAgentInput asks: a new input's text (with its message id), or answers to interrupts. */
export type AgUiAsk =
  | { kind: 'message'; sessionId: string; text: string; messageId: string }
  | {
      kind: 'resume';
      sessionId: string;
      answers: Array<{ approvalId: string; approved: boolean; note?: string; arguments?: Record<string, unknown> }>;
    };

/** Checks a RunAgentInput (by `@ag-ui/core`'s schema) and says what it asks; InvalidInputError (400) when it cannot be run. */
export function parseRunInput(body: unknown): { input: RunAgentInput; ask: AgUiAsk } {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ field: i.path.join('.') || '(body)', message: i.message }));
    throw new InvalidInputError(
      `not an AG-UI RunAgentInput: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`,
      issues,
    );
  }
  const input = parsed.data as RunAgentInput;
  const fail = (field: string, message: string): never => {
    throw new InvalidInputError(`${field}: ${message}`, [{ field, message }]);
  };
  const sessionId = SessionId.safeParse(input.threadId);
  if (!sessionId.success) fail('threadId', `the Session id: ${sessionId.error.issues[0]?.message ?? 'invalid'}`);
  if (input.resume && input.resume.length > 0) {
    const answers = input.resume.map((entry, i) => {
      if (entry.status === 'cancelled') return { approvalId: entry.interruptId, approved: false, note: 'cancelled' };
      const payload = (entry.payload ?? {}) as { approved?: unknown; note?: unknown; arguments?: unknown };
      if (typeof payload.approved !== 'boolean') fail(`resume.${i}.payload.approved`, 'must be true or false');
      if (payload.note !== undefined && typeof payload.note !== 'string')
        fail(`resume.${i}.payload.note`, 'must be text');
      const edit = payload.arguments;
      if (edit !== undefined && (typeof edit !== 'object' || edit === null || Array.isArray(edit))) {
        fail(`resume.${i}.payload.arguments`, 'must be a JSON object');
      }
      return {
        approvalId: entry.interruptId,
        approved: payload.approved as boolean,
        ...(typeof payload.note === 'string' && payload.note.trim() ? { note: payload.note.trim() } : {}),
        ...(edit !== undefined ? { arguments: edit as Record<string, unknown> } : {}),
      };
    });
    const seqs = new Set(answers.map((a) => a.approvalId.split(':')[0]));
    if (seqs.size !== 1 || !/^\d+$/.test([...seqs][0] ?? '')) {
      fail('resume', 'answers interrupts of one input (interrupt ids are approval ids `<seq>:<step>:<callId>`)');
    }
    return { input, ask: { kind: 'resume', sessionId: input.threadId, answers } };
  }
  const last = [...input.messages].reverse().find((m) => m.role === 'user');
  if (!last) return fail('messages', 'no user message to send');
  const text = contentToText(last.content).trim();
  if (!text) fail('messages', 'the last user message has no text');
  return { input, ask: { kind: 'message', sessionId: input.threadId, text, messageId: last.id } };
}

export interface AgUiContext {
  client: SessionClient;
  feed?: EventFeed;
  log: (line: string) => void;
  /** The `from` of a message the principal sends (server.ts senderOf). */
  senderOf: (principal: Principal) => MessageDraft['from'];
  /** Comment lines while idle (ms). */
  heartbeatMs: number;
  /** Longest a run stream waits for its turn to end or wait (default 15 minutes). */
  turnTimeoutMs?: number;
}

/** An AG-UI event stream on the response (hijacked): the encoder's content type, heartbeats, `end`. */
function openStream(request: FastifyRequest, reply: FastifyReply, heartbeatMs: number) {
  const encoder = new EventEncoder({ accept: request.headers.accept ?? 'text/event-stream' });
  reply.hijack();
  const res = reply.raw;
  // Always Server-Sent Events: the protobuf encoding is not offered.
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let open = true;
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), heartbeatMs);
  const stop = new AbortController();
  const end = () => {
    if (!open) return;
    open = false;
    clearInterval(heartbeat);
    stop.abort();
    res.end();
  };
  request.raw.on('close', end);
  return {
    signal: stop.signal,
    emit: (event: AGUIEvent) => {
      if (open) res.write(encoder.encodeSSE(event));
    },
    end,
  };
}

function runsFor(client: SessionClient, sessionId: string, emit: (e: AGUIEvent) => void, userMessages: boolean) {
  return new AgUiRuns({
    sessionId,
    emit,
    userMessages,
    snapshot: () => client.snapshot(sessionId),
    fullReply: async (seq) => (await client.history(sessionId)).find((h) => h.seq === seq)?.reply ?? null,
    runId: (seq, n) => `${sessionId}#${seq}${n > 0 ? `.${n}` : ''}`,
  });
}

/**
 * `POST /ag-ui`: runs one RunAgentInput. Sends its message (or answers its interrupts) before the
 * stream starts, so a refused input is a plain HTTP error; then streams the input's run.
 */
export async function runAgUi(
  request: FastifyRequest,
  reply: FastifyReply,
  principal: Principal,
  context: AgUiContext,
): Promise<void> {
  const { input, ask } = parseRunInput(request.body);
  const { client } = context;
  const sessionId = ask.sessionId;
  let seq: number;
  // The events of the input up to where this run goes on: a resumed run skips to its answered calls.
  let skipUntil: Set<string> | null = null;
  if (ask.kind === 'resume') {
    if (!may(principal, 'approve')) {
      throw new ForbiddenError(`${principal.name} does not have the "approve" permission (resume answers approvals)`);
    }
    const as = client.as(principal.name);
    for (const answer of ask.answers) {
      const { approvalId, approved, ...options } = answer;
      await (approved ? as.approve(sessionId, approvalId, options) : as.reject(sessionId, approvalId, options));
    }
    seq = Number(ask.answers[0]!.approvalId.split(':')[0]);
    skipUntil = new Set(ask.answers.map((a) => a.approvalId));
  } else {
    const from = context.senderOf(principal);
    const submitted = await client.submit(sessionId, {
      messageId: ask.messageId,
      text: ask.text,
      ...(from ? { from } : {}),
    });
    seq = submitted.seq;
  }
  const stream = openStream(request, reply, context.heartbeatMs);
  const runs = runsFor(client, sessionId, stream.emit, false);
  const timer = setTimeout(
    () => {
      runs.error('No end of the turn within the wait; the Session goes on.', 'timeout');
      stream.end();
    },
    context.turnTimeoutMs ?? 15 * 60_000,
  );
  try {
    await runs.start(seq, input.runId, input);
    const events = client.events(sessionId, {
      after: `${seq - 1}.${Number.MAX_SAFE_INTEGER}`,
      signal: stream.signal,
      ...(context.feed ? { feed: context.feed } : {}),
    });
    for await (const event of events) {
      if (skipUntil && skipUntil.size > 0 && event.kind !== 'session.closed') {
        if (event.seq === seq && event.kind === 'tool.proposed') runs.remember(event);
        if (event.seq === seq && event.kind === 'approval.waiting') skipUntil.delete(event.approvalId);
        continue;
      }
      await runs.event(event);
      if (!runs.open) break;
    }
    if (runs.open) runs.error('The event stream ended before the turn did.', 'stream-ended');
  } catch (err) {
    context.log(`gateway: AG-UI run of ${sessionId} ended: ${err instanceof Error ? err.message : String(err)}`);
    runs.error(err instanceof Error ? err.message : String(err), 'gateway');
  } finally {
    clearTimeout(timer);
    stream.end();
  }
}

/** `GET /sessions/:id/ag-ui`: the Session's events from `after` (undefined: all the log keeps) as AG-UI runs. */
export async function followAgUi(
  request: FastifyRequest,
  reply: FastifyReply,
  sessionId: string,
  after: string | undefined,
  context: AgUiContext,
): Promise<void> {
  const { client } = context;
  const stream = openStream(request, reply, context.heartbeatMs);
  const runs = runsFor(client, sessionId, stream.emit, true);
  try {
    const events = client.events(sessionId, {
      ...(after !== undefined ? { after } : {}),
      signal: stream.signal,
      ...(context.feed ? { feed: context.feed } : {}),
    });
    for await (const event of events) {
      await runs.event(event);
      if (event.kind === 'session.closed') break;
    }
  } catch (err) {
    context.log(`gateway: AG-UI stream of ${sessionId} ended: ${err instanceof Error ? err.message : String(err)}`);
    runs.error(err instanceof Error ? err.message : String(err), 'gateway');
  } finally {
    stream.end();
  }
}
