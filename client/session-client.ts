/**
 * A typed client for Session workflows on any Temporal cluster: task input by signal-with-start or
 * update-with-start, the non-task signals, the queries, a live watch, and a visibility listing.
 * Every payload is validated with the same zod schemas the workflow uses before anything is sent.
 */
import { randomUUID } from 'node:crypto';
import {
  Client,
  Connection,
  WithStartWorkflowOperation,
  type WorkflowHandle,
  type WorkflowIdReusePolicy,
} from '@temporalio/client';
import {
  CONTROL_SIGNAL_DEFINITIONS,
  WORKFLOW_TYPE,
  approveUpdate,
  answerToolUpdate,
  capabilitiesQuery,
  decisionsQuery,
  eventsQuery,
  goalsQuery,
  historyQuery,
  messageSignal,
  outOfScopeQuery,
  snapshotQuery,
  resultUpdate,
  submitUpdate,
} from '../contract/api.js';
import { CONTROL_SIGNALS, controlIdOf, type ControlKind } from '../contract/control-signals.js';
import { workflowIdFor } from '../contract/ids.js';
import {
  ControlKeyError,
  DEFAULT_SIGNATURE_TTL_MS,
  messageSigningPayload,
  parseControlKeys,
  signControl,
  unsigned,
  type ControlKey,
} from '../contract/control-signature.js';
import { ApprovalInput, MessageInput, SessionId, type ToolResultInput } from '../contract/messages.js';
import type { SessionWorkflow } from '../contract/api.js';
import type { BoundInput, OutOfScopeRequest, Capabilities, DecisionRecord, Goal } from '../contract/state.js';
import { RESULT_WAIT_MAX_MS, type SessionView } from '../contract/queries.js';
import {
  ClientClosedError,
  InvalidInputError,
  SessionClientError,
  SessionTimeoutError,
  ServerUnreachableError,
  translateError,
  type CallContext,
} from './errors.js';
import { parse, startArgument, userMetadata, visibilityQuery, withMessageId } from './payloads.js';
import { followEvents, type FollowOptions } from './events.js';
import { EventsRequest, type EventsPage, type SessionEvent } from '../contract/events.js';
import type { PayloadCodec } from '@temporalio/common';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';
import {
  ConnectionConfigError,
  connectionOptions,
  resolveConnection,
  type TemporalConnectionSettings,
} from './connection.js';
import { EncryptionError, codecFromEnv, encryptedDataConverter } from './encryption.js';
import { listSessions } from './list-sessions.js';
import {
  CONNECTION_DEFAULTS,
  type CommandName,
  type ApprovalOptions,
  type ConnectOptions,
  type MessageDraft,
  type SentMessage,
  type StartOptions,
  type SessionSummary,
  type SubmitOptions,
  type SubmitResult,
  type WaitOptions,
  type WatchEvent,
  type WatchOptions,
  type ListFilter,
} from './types.js';
import { watchSession } from './watch.js';

/** The key that signs: HARNESS_CONTROL_KEY, else the first of HARNESS_CONTROL_KEYS (the worker's set), else none. */
export function controlKeyFromEnv(env: NodeJS.ProcessEnv): ControlKey | undefined {
  const single = env.HARNESS_CONTROL_KEY?.trim();
  if (single) return parseControlKeys(single, 'HARNESS_CONTROL_KEY')[0];
  const set = env.HARNESS_CONTROL_KEYS?.trim();
  return set ? parseControlKeys(set, 'HARNESS_CONTROL_KEYS')[0] : undefined;
}

/**
 * The calls running over one Temporal Client, shared by every SessionClient that wraps it (`as`), so
 * the one that owns the connection closes it only when none is left (see SessionClient.close).
 */
interface Calls {
  /**
   * Each running call and what cancels it. One controller per call, not one shared by all: the SDK
   * adds an abort listener per call and never removes it, so a shared signal would keep every call.
   */
  running: Map<Promise<unknown>, AbortController>;
  closed: boolean;
  drained?: Promise<void>;
}
const CALLS = new WeakMap<Client, Calls>();

function callsOf(client: Client): Calls {
  let calls = CALLS.get(client);
  if (!calls) CALLS.set(client, (calls = { running: new Map(), closed: false }));
  return calls;
}

/** A closed Session is never restarted under the same id; a failed or terminated one may be. */
const REUSE_POLICY: WorkflowIdReusePolicy = 'ALLOW_DUPLICATE_FAILED_ONLY';

export class SessionClient {
  readonly taskQueue: string;
  readonly address: string;
  private readonly queryTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private readonly ownsConnection: boolean;
  private readonly encrypted: boolean;
  private readonly controlKey: ControlKey | undefined;
  private readonly signatureTtlMs: number;
  /** Who this client answers as (ConnectOptions.signerName); undefined: approvals name whom the caller says. */
  readonly signerName: string | undefined;
  private readonly options: ConstructorParameters<typeof SessionClient>[1];

  /**
   * Wraps an existing Client (its connection stays the caller's). Use `SessionClient.connect` to
   * let the SessionClient own its connection.
   */
  constructor(
    readonly client: Client,
    options: {
      taskQueue?: string;
      address?: string;
      queryTimeoutMs?: number;
      /** ConnectOptions.requestTimeoutMs. */
      requestTimeoutMs?: number;
      ownsConnection?: boolean;
      /** Payloads are encrypted: Sessions this client starts keep the goal out of search attributes. */
      encrypted?: boolean;
      /** Signs control and messages for workers that require it (ConnectOptions.controlKey). */
      controlKey?: ControlKey;
      signatureTtlMs?: number;
      /** Recorded as the approver of every answer this client sends (ConnectOptions.signerName). */
      signerName?: string;
    } = {},
  ) {
    this.options = options;
    this.signerName = options.signerName;
    this.encrypted = options.encrypted ?? false;
    this.controlKey = options.controlKey;
    this.signatureTtlMs = options.signatureTtlMs ?? DEFAULT_SIGNATURE_TTL_MS;
    this.taskQueue = options.taskQueue ?? CONNECTION_DEFAULTS.taskQueue;
    this.address = options.address ?? 'the Temporal server';
    this.queryTimeoutMs = options.queryTimeoutMs ?? CONNECTION_DEFAULTS.queryTimeoutMs;
    this.requestTimeoutMs = options.requestTimeoutMs ?? CONNECTION_DEFAULTS.requestTimeoutMs;
    this.ownsConnection = options.ownsConnection ?? false;
  }

  /** Connects to a Temporal cluster now. Throws ServerUnreachableError, or InvalidInputError for bad TLS files. */
  static async connect(options: ConnectOptions = {}): Promise<SessionClient> {
    const client = await SessionClient.create(options);
    await client.ensureConnected();
    return client;
  }

  /**
   * A client whose connection is made on first use, so inputs are validated before the network is
   * touched (the CLI exits 2 on a bad message even when the server is down).
   */
  static create(options: ConnectOptions = {}): Promise<SessionClient> {
    try {
      return Promise.resolve(SessionClient.build(options));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  /** Resolves the connection the Temporal way (flags, then TEMPORAL_* and temporal.toml) and the codec. */
  private static build(options: ConnectOptions): SessionClient {
    const env = options.env ?? process.env;
    let settings: TemporalConnectionSettings;
    let codec: PayloadCodec | undefined;
    let controlKey: ControlKey | undefined;
    let signerName: string | undefined;
    try {
      settings = resolveConnection(
        {
          ...(options.address !== undefined ? { address: options.address } : {}),
          ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
          ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
          ...(options.tls !== undefined ? { tls: options.tls } : {}),
          ...(options.profile !== undefined ? { profile: options.profile } : {}),
          ...(options.configFile !== undefined ? { configFile: options.configFile } : {}),
        },
        env,
      );
      codec = options.codec === false ? undefined : (options.codec ?? codecFromEnv(env));
      controlKey = options.controlKey === false ? undefined : (options.controlKey ?? controlKeyFromEnv(env));
      signerName = options.signerName ?? (env.HARNESS_SIGNER_NAME?.trim() || undefined);
      if (signerName !== undefined) parse(ApprovalInput.shape.approver, signerName, 'signer name', 'signerName');
    } catch (err) {
      if (err instanceof ControlKeyError) {
        const field = err.message.split(':')[0] ?? 'HARNESS_CONTROL_KEY';
        throw new InvalidInputError(err.message, [{ field, message: err.message }]);
      }
      if (err instanceof ConnectionConfigError || err instanceof EncryptionError) {
        const field = err instanceof ConnectionConfigError ? err.field : 'HARNESS_ENCRYPTION_KEYS';
        throw new InvalidInputError(err.message, [{ field, message: err.message }]);
      }
      throw err;
    }
    const warn = options.warn ?? ((message: string) => process.stderr.write(`warning: ${message}\n`));
    for (const warning of settings.warnings) warn(warning);
    const connection = Connection.lazy({
      ...connectionOptions(settings),
      connectTimeout: options.connectTimeoutMs ?? CONNECTION_DEFAULTS.connectTimeoutMs,
    });
    const client = new Client({
      connection,
      namespace: settings.namespace,
      ...(codec ? { dataConverter: encryptedDataConverter(codec) } : {}),
      ...(options.tracing ? { interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } } : {}),
    });
    return new SessionClient(client, {
      address: settings.address,
      ownsConnection: true,
      encrypted: codec !== undefined,
      ...(controlKey ? { controlKey } : {}),
      ...(signerName !== undefined ? { signerName } : {}),
      ...(options.signatureTtlMs ? { signatureTtlMs: options.signatureTtlMs } : {}),
      ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
      ...(options.queryTimeoutMs ? { queryTimeoutMs: options.queryTimeoutMs } : {}),
      ...(options.requestTimeoutMs ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    });
  }

  /** The start argument, with the goal kept out of visibility when this client encrypts payloads. */
  private startArg(sessionId: string, start: StartOptions) {
    if (!this.encrypted || start.settings?.goalSearchAttribute !== undefined) return startArgument(sessionId, start);
    return startArgument(sessionId, { ...start, settings: { ...start.settings, goalSearchAttribute: false } });
  }

  /** Resolves once the server answers; throws ServerUnreachableError otherwise. */
  async ensureConnected(): Promise<void> {
    const connection = this.client.connection;
    if (!(connection instanceof Connection)) return;
    try {
      await connection.ensureConnected();
    } catch (err) {
      const translated = translateError(err, { address: this.address });
      throw translated instanceof SessionClientError
        ? translated
        : new ServerUnreachableError(this.address, (err as Error).message);
    }
  }

  /**
   * This client answering as `signerName`: the same connection, key and settings, with every
   * approval and rejection recorded as that name. For a front end that has authenticated its caller
   * itself (the gateway, for each principal); the connection stays this client's.
   */
  as(signerName: string): SessionClient {
    parse(ApprovalInput.shape.approver, signerName, 'signer name', 'signerName');
    return new SessionClient(this.client, { ...this.options, ownsConnection: false, signerName });
  }

  /**
   * Closes the connection if this client opened it, once no call runs on it: calls waiting for an
   * answer are cancelled (they reject with ClientClosedError), a call between two tries of the SDK's
   * retry settles by its deadline, and later calls are refused. Closing a channel under a call in
   * that retry backoff would leave the call unsettled for good and throw "Channel has been shut down"
   * from a timer, an uncaught exception that ends the process.
   */
  async close(): Promise<void> {
    if (!this.ownsConnection) return;
    const calls = callsOf(this.client);
    if (!calls.closed) {
      calls.closed = true;
      for (const stop of calls.running.values()) stop.abort();
      calls.drained = Promise.allSettled([...calls.running.keys()]).then(() => this.client.connection.close());
    }
    await calls.drained;
  }

  // ---- task input -------------------------------------------------------------------------------

  /**
   * Sends a task input by signal-with-start: the Session is created if it does not exist. Returns
   * once the server has recorded the signal; it does not wait for a worker.
   */
  async send(sessionId: string, draft: MessageDraft, start: StartOptions = {}): Promise<SentMessage> {
    const message = this.signedMessage(sessionId, parse(MessageInput, withMessageId(draft), 'message'));
    const startArg = this.startArg(sessionId, start);
    const workflowId = workflowIdFor(sessionId);
    await this.call({ sessionId, waitingFor: 'the server recording the message' }, () =>
      this.client.workflow.signalWithStart<SessionWorkflow, [unknown]>(WORKFLOW_TYPE, {
        workflowId,
        taskQueue: this.taskQueue,
        args: [startArg],
        signal: messageSignal,
        signalArgs: [message],
        workflowIdReusePolicy: REUSE_POLICY,
        ...userMetadata(startArg, message, start),
      }),
    );
    return { sessionId, workflowId, messageId: message.messageId };
  }

  /**
   * Sends a task input by update-with-start and returns its seq once the Session has recorded it
   * (`duplicate` when this messageId was seen before). With `wait`, also waits for its decision.
   * Throws InputRefusedError when the Session refuses it, a busy refusal (`whileBusy: reject`) included.
   */
  async submit(sessionId: string, draft: MessageDraft, options: SubmitOptions = {}): Promise<SubmitResult> {
    const busy = draft.whileBusy ?? options.whileBusy;
    const drafted = withMessageId(busy === undefined ? draft : { ...draft, whileBusy: busy });
    const message = this.signedMessage(sessionId, parse(MessageInput, drafted, 'message'));
    const start = options.start ?? {};
    const startArg = this.startArg(sessionId, start);
    const workflowId = workflowIdFor(sessionId);
    const startWorkflowOperation = new WithStartWorkflowOperation<SessionWorkflow>(WORKFLOW_TYPE, {
      workflowId,
      taskQueue: this.taskQueue,
      args: [startArg],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: REUSE_POLICY,
      ...userMetadata(startArg, message, start),
    });
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    const recorded = await this.call({ sessionId, waitingFor: 'a worker accepting the submit update', deadline }, () =>
      this.client.workflow.executeUpdateWithStart(submitUpdate, { args: [message], startWorkflowOperation }),
    );
    const result: SubmitResult = { sessionId, workflowId, messageId: message.messageId, ...recorded };
    if (options.wait) {
      result.decision = await this.waitForDecision(sessionId, recorded.seq, options.wait === true ? {} : options.wait);
    }
    return result;
  }

  /**
   * Waits until input `seq` has its decision and its agent turn has ended, or the turn waits for an
   * approval or an external tool result; returns that decision record (its `agent.outcome` says
   * which: `waiting-approval` / `waiting-tool` while it waits), or `null` if the Session no longer
   * keeps it. Push-based: the workflow's `result` update answers as soon as it gets there (each
   * call waits at most RESULT_WAIT_MAX_MS in the workflow, so continue-as-new is never held up for long).
   */
  async waitForDecision(sessionId: string, seq: number, options: WaitOptions = {}): Promise<DecisionRecord | null> {
    const timeoutMs = options.timeoutMs ?? 120_000;
    const deadline = Date.now() + timeoutMs;
    const handle = this.handle(sessionId);
    for (;;) {
      if (options.signal?.aborted)
        throw new SessionTimeoutError(`stopped waiting for input #${seq} of session ${sessionId}`);
      const waitMs = Math.max(0, Math.min(RESULT_WAIT_MAX_MS, deadline - Date.now()));
      // The workflow holds the update up to waitMs; the call's deadline allows for that and the trip.
      const callDeadline = Date.now() + waitMs + this.requestTimeoutMs;
      const result = await this.call(
        { sessionId, waitingFor: 'a worker answering the result update', deadline: callDeadline },
        () => handle.executeUpdate(resultUpdate, { args: [{ seq, timeoutMs: waitMs }] }),
      );
      options.onProgress?.({ seq, status: result.status, outcome: result.outcome });
      if (result.status === 'done' || result.status === 'waiting') return result.record;
      if (result.status === 'unknown') {
        throw new SessionTimeoutError(`session ${sessionId} has no input #${seq}`);
      }
      if (Date.now() >= deadline) {
        const view = await this.snapshot(sessionId).catch(() => null);
        const where =
          view === null
            ? 'it is still queued or running'
            : view.status === 'paused'
              ? 'the session is paused'
              : `the session is at "${view.stage}" with input #${view.seq.lastBound}`;
        throw new SessionTimeoutError(
          `no decision for input #${seq} of session ${sessionId} within ${timeoutMs / 1000} s (${where})`,
        );
      }
    }
  }

  // ---- events -----------------------------------------------------------------------------------

  /**
   * The Session's events as they happen, as an async iterator: first those the durable log keeps
   * after `options.after` (the last id you saw; absent: all it keeps), then live ones from
   * `options.feed`, in order and each durable event once, until the Session closes or
   * `options.signal` aborts. Without a feed it reads the log every `pollMs`. Agent text deltas come
   * only from a feed and are best effort; the full reply is in the `turn.finished` event.
   */
  events(sessionId: string, options: FollowOptions = {}): AsyncGenerator<SessionEvent> {
    return followEvents(sessionId, (after) => this.eventsAfter(sessionId, after), options);
  }

  /** One page of the durable event log after an event id (the `events` query). */
  async eventsAfter(sessionId: string, after?: string, limit?: number): Promise<EventsPage> {
    // Checked here with the workflow's own schema: a query failure reaches the client without its
    // failure type, so a bad id must be refused before it is sent (InvalidInputError).
    const request = parse(
      EventsRequest,
      { ...(after !== undefined ? { after } : {}), ...(limit !== undefined ? { limit } : {}) },
      'events request',
    );
    return this.query(sessionId, (h) => h.query(eventsQuery, request));
  }

  // ---- non-task signals -------------------------------------------------------------------------

  /**
   * Approves one tool call waiting for approval. `approvalId` is the call's own id from
   * `snapshot().pendingApprovals` (`<seq>:<step>:<callId>`); pass that entry's `argumentsHash` so the
   * approval answers only the arguments you saw. An approval that matches no waiting call changes
   * nothing and is recorded as a rejection in `snapshot().recentRejections`. Never a task input.
   *
   * With `arguments`, the call runs with those instead of the model's, once the worker has checked
   * them against the tool's input schema and the approval policy; the record keeps both.
   *
   * Sent as the `approve` update, so the answer is heard: it resolves once the Session applied it,
   * and throws ApprovalRefusedError with the reason when it answered nothing (no such waiting call,
   * other arguments, a refused edit, a bad signature), SessionTimeoutError when no worker took it in
   * `timeoutMs` (default 60 s). The approver recorded is this client's `signerName` when it has one.
   */
  approve(sessionId: string, approvalId: string, options?: string | ApprovalOptions): Promise<void> {
    return this.approval(sessionId, approvalId, true, options);
  }

  /** Rejects one tool call waiting for approval (see `approve`); the model sees the rejection and the note. */
  reject(sessionId: string, approvalId: string, options?: string | ApprovalOptions): Promise<void> {
    return this.approval(sessionId, approvalId, false, options);
  }

  private async approval(
    sessionId: string,
    approvalId: string,
    approved: boolean,
    options: string | ApprovalOptions | undefined,
  ): Promise<void> {
    const {
      note,
      argumentsHash,
      approver: claimed,
      arguments: edit,
      timeoutMs,
    } = typeof options === 'string' ? { note: options } : (options ?? {});
    const approver = this.approverOf(claimed);
    const input: ApprovalInput = {
      approvalId,
      approved,
      ...(note !== undefined ? { note } : {}),
      ...(argumentsHash !== undefined ? { argumentsHash } : {}),
      ...(approver !== undefined ? { approver } : {}),
      ...(edit !== undefined ? { arguments: typeof edit === 'string' ? edit : JSON.stringify(edit) } : {}),
    };
    // An answer may be refused (no such call, other arguments, a refused edit, a bad signature), and
    // the approver must hear why: an update answers, a signal does not.
    const payload = this.signed(sessionId, 'approval', parse(CONTROL_SIGNALS.approval.schema, input, 'approval'));
    const handle = this.handle(sessionId);
    const deadline = Date.now() + (timeoutMs ?? 60_000);
    await this.call({ sessionId, waitingFor: 'a worker answering the approve update', deadline }, () =>
      handle.executeUpdate(approveUpdate, { args: [payload] }),
    );
  }

  /** The approver an answer records: the configured signer, or (without one) whom the caller names. */
  private approverOf(claimed: string | undefined): string | undefined {
    if (this.signerName === undefined) return claimed;
    if (claimed !== undefined && claimed.trim() !== this.signerName) {
      const message = `approver: this client answers as ${JSON.stringify(this.signerName)} (its configured signer name), not ${JSON.stringify(claimed)}`;
      throw new InvalidInputError(message, [{ field: 'approver', message }]);
    }
    return this.signerName;
  }

  /** Delivers a system notification (`notificationId` generated when absent). Returns the notificationId. */
  notify(sessionId: string, input: { notificationId?: string; kind: string; text: string }): Promise<string> {
    return this.control(sessionId, 'notification', { notificationId: `n-${randomUUID()}`, ...input });
  }

  /**
   * Delivers the result of an external tool call, as the `answerTool` update: resolves once it reached
   * the waiting call, throws ToolResultRefusedError with the reason when it answered nothing (no call
   * waits for that id, already answered, a bad signature), SessionTimeoutError when no worker took it
   * in `timeoutMs` (default 60 s). Without `resultId` the client reads the snapshot first and names
   * the call waiting now under `callId` (`pendingToolCalls[].resultId`), so the result (and its
   * signature) can answer only that call, never a later step's call that reuses the id.
   */
  async toolResult(sessionId: string, input: ToolResultInput, options: { timeoutMs?: number } = {}): Promise<void> {
    const parsed = parse(CONTROL_SIGNALS.toolResult.schema, input, 'toolResult');
    const bound = parsed.resultId === undefined ? await this.boundResult(sessionId, parsed) : parsed;
    const payload = this.signed(sessionId, 'toolResult', bound);
    const handle = this.handle(sessionId);
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    await this.call({ sessionId, waitingFor: 'a worker answering the answerTool update', deadline }, () =>
      handle.executeUpdate(answerToolUpdate, { args: [payload] }),
    );
  }

  /**
   * A tool result that names the call waiting now under its call id (`resultId` from the snapshot),
   * so the Session applies it to that call only, and a signature covers the binding. Unchanged when
   * no call with that id waits (or the worker predates result ids): the Session then says why.
   */
  private async boundResult(sessionId: string, result: ToolResultInput): Promise<ToolResultInput> {
    const view = await this.snapshot(sessionId);
    const waiting = view.pendingToolCalls.filter((c) => c.callId === result.callId && c.resultId !== undefined);
    const [only] = waiting;
    return waiting.length === 1 && only?.resultId ? { ...result, resultId: only.resultId } : result;
  }

  /** Sends a deterministic command (`commandId` generated when absent). Returns the commandId. */
  command(
    sessionId: string,
    input: { name: CommandName; args?: Record<string, unknown>; commandId?: string },
  ): Promise<string> {
    return this.control(sessionId, 'command', { commandId: `c-${randomUUID()}`, ...input });
  }

  /**
   * Validates a control payload with its schema, signs it when this client has a control key
   * (notifications are never signed), signals it, and returns its delivery id.
   */
  private async control(sessionId: string, kind: ControlKind, input: unknown): Promise<string> {
    const payload = this.signed(sessionId, kind, parse(CONTROL_SIGNALS[kind].schema, input, kind));
    const handle = this.handle(sessionId);
    await this.call({ sessionId, waitingFor: `the server recording the ${kind} signal` }, () =>
      handle.signal(CONTROL_SIGNAL_DEFINITIONS[kind], payload),
    );
    return controlIdOf(kind, payload);
  }

  /** A parsed control payload, signed when this client has a control key (notifications never are). */
  private signed(sessionId: string, kind: ControlKind, parsed: unknown): Record<string, unknown> {
    const payload = parsed as Record<string, unknown>;
    if (!this.controlKey || kind === 'notification') return payload;
    const body = unsigned(payload);
    return { ...body, signature: signControl(this.controlKey, kind, sessionId, body, this.expiry()) };
  }

  /** The message with a signature vouching for its `from`, when this client has a control key. */
  private signedMessage(sessionId: string, message: MessageInput): MessageInput {
    if (!this.controlKey) return message;
    const signature = signControl(this.controlKey, 'message', sessionId, messageSigningPayload(message), this.expiry());
    return { ...message, signature };
  }

  private expiry(): number {
    return Date.now() + this.signatureTtlMs;
  }

  // ---- queries ----------------------------------------------------------------------------------

  goals(sessionId: string): Promise<{ session: Goal | null; phase: Goal | null }> {
    return this.query(sessionId, (h) => h.query(goalsQuery));
  }

  capabilities(sessionId: string): Promise<Capabilities> {
    return this.query(sessionId, (h) => h.query(capabilitiesQuery));
  }

  /** Recent decision records, newest last. */
  decisions(sessionId: string, options: { limit?: number } = {}): Promise<DecisionRecord[]> {
    return this.query(sessionId, (h) => h.query(decisionsQuery, options));
  }

  snapshot(sessionId: string): Promise<SessionView> {
    return this.query(sessionId, (h) => h.query(snapshotQuery));
  }

  /** Recent bound inputs (the raw message, its decision and the agent's reply), newest last. */
  history(sessionId: string, options: { limit?: number } = {}): Promise<BoundInput[]> {
    return this.query(sessionId, (h) => h.query(historyQuery, options));
  }

  outOfScope(sessionId: string): Promise<OutOfScopeRequest[]> {
    return this.query(sessionId, (h) => h.query(outOfScopeQuery));
  }

  /** Temporal's view of the Session's workflow: execution status, run, times. */
  async describe(sessionId: string): Promise<{ executionStatus: string; runId: string; startTime: Date }> {
    const info = await this.call({ sessionId }, () => this.handle(sessionId).describe());
    return { executionStatus: info.status.name, runId: info.runId, startTime: info.startTime };
  }

  // ---- watch and list ---------------------------------------------------------------------------

  /**
   * Stage and decision changes, by polling `snapshot`. Ends when the Session closes (or its workflow
   * ends otherwise) or the signal aborts. Decisions are yielded before the stage that follows them.
   */
  watch(sessionId: string, options: WatchOptions = {}): AsyncGenerator<WatchEvent, void, undefined> {
    return watchSession(this, sessionId, options);
  }

  /** Sessions from Temporal visibility, newest first, filtered by the Session search attributes. */
  async list(filter: ListFilter = {}): Promise<SessionSummary[]> {
    const limit = filter.limit ?? 50;
    // Built before connecting, so a bad filter is refused without touching the network.
    const query = visibilityQuery(filter);
    return this.call({}, () => listSessions(this.client, query, limit));
  }

  // ---- plumbing ---------------------------------------------------------------------------------

  private handle(sessionId: string): WorkflowHandle<SessionWorkflow> {
    parse(SessionId, sessionId, 'sessionId', 'sessionId');
    return this.client.workflow.getHandle<SessionWorkflow>(workflowIdFor(sessionId));
  }

  private query<T>(sessionId: string, fn: (h: WorkflowHandle<SessionWorkflow>) => Promise<T>): Promise<T> {
    const handle = this.handle(sessionId);
    // A query waits for a worker to answer; without a deadline a stopped worker would hang the caller.
    const deadline = Date.now() + this.queryTimeoutMs;
    return this.call({ sessionId, waitingFor: 'a worker answering the query', deadline }, () => fn(handle));
  }

  /**
   * Runs one call to the server under a deadline and translates its errors. The deadline is the
   * call's own (`ctx.deadline`) or requestTimeoutMs from now: none may wait forever (grpc/grpc-node#2785).
   */
  private async call<T>(ctx: Omit<CallContext, 'address'>, fn: () => Promise<T>): Promise<T> {
    const calls = callsOf(this.client);
    if (calls.closed) throw new ClientClosedError();
    const deadline = ctx.deadline ?? Date.now() + this.requestTimeoutMs;
    const stop = new AbortController();
    const running = (async () => {
      await this.ensureConnected();
      // Closed while connecting: the SDK would not see an abort that came before the call.
      if (stop.signal.aborted) throw new ClientClosedError();
      return await this.client.withAbortSignal(stop.signal, () => this.client.withDeadline(deadline, fn));
    })();
    calls.running.set(running, stop);
    try {
      return await running;
    } catch (err) {
      if (calls.closed && !(err instanceof SessionClientError)) throw new ClientClosedError();
      throw translateError(err, { ...ctx, deadline, address: this.address });
    } finally {
      calls.running.delete(running);
    }
  }
}
