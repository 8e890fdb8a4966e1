/**
 * A typed client for Session workflows on any Temporal cluster: task input by signal-with-start or
 * update-with-start, the non-task signals, the queries, a live watch, and a visibility listing.
 * Every payload is validated with the same zod schemas the workflow uses before anything is sent.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Client,
  Connection,
  WithStartWorkflowOperation,
  type WorkflowHandle,
  type WorkflowIdReusePolicy,
} from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import type { z } from 'zod';
import {
  DEFAULT_TASK_QUEUE,
  WORKFLOW_TYPE,
  approvalSignal,
  capabilitiesQuery,
  commandSignal,
  decisionsQuery,
  goalsQuery,
  historyQuery,
  messageSignal,
  notificationSignal,
  outOfScopeQuery,
  snapshotQuery,
  submitUpdate,
  toolResultSignal,
} from '../workflows/api.js';
import {
  ApprovalInput,
  CommandInput,
  MessageInput,
  NotificationInput,
  SessionId,
  SessionStart,
  ToolResultInput,
  workflowIdFor,
  type ResourceRef,
  type Sender,
  type SettingsInput,
} from '../workflows/schemas.js';
import { SessionGoalKey, SessionParentKey, SessionStageKey, SessionStatusKey } from '../workflows/search-attributes.js';
import type { session } from '../workflows/session.js';
import { SESSION_STAGES, type BoundInput, type OutOfScopeRequest } from '../workflows/state.js';
import type { Capabilities, DecisionRecord, Goal, SessionView } from '../workflows/view.js';
import {
  InvalidInputError,
  SessionClientError,
  SessionTimeoutError,
  ServerUnreachableError,
  translateError,
  type CallContext,
} from './errors.js';
import {
  ConnectionConfigError,
  connectionOptions,
  resolveConnection,
  type TemporalConnectionSettings,
} from './connection.js';
import { EncryptionError, codecFromEnv, encryptedDataConverter } from './encryption.js';

export type { Capabilities, DecisionRecord, Goal, SessionView, BoundInput, OutOfScopeRequest };

/**
 * Where and how to connect. Unset fields come from the Temporal environment (`TEMPORAL_ADDRESS`,
 * `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS_*`, `TEMPORAL_PROFILE` and `temporal.toml`,
 * see client/connection.ts), then from local-development defaults.
 */
export interface ConnectOptions {
  /** Temporal frontend `host:port`. Default `localhost:7233`. */
  address?: string;
  /** Default `default`. */
  namespace?: string;
  /** Task queue new Sessions are started on. Default `sessions`. */
  taskQueue?: string;
  /**
   * `true` for TLS with the system's roots; an object for a private CA and/or mTLS (file paths).
   * An API key turns TLS on unless this is `false`.
   */
  tls?: boolean | TlsFiles;
  /** Temporal Cloud API key, sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** `temporal.toml` profile. Default `TEMPORAL_PROFILE`, else `default`. */
  profile?: string;
  /** `temporal.toml` path. Default `TEMPORAL_CONFIG_FILE`, else `~/.config/temporalio/temporal.toml`. */
  configFile?: string;
  /** Environment to read; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * Payload codec for everything sent and read. Default: AES-256-GCM with `HARNESS_ENCRYPTION_KEYS`
   * when that is set (client/encryption.ts); `false` turns it off.
   */
  codec?: PayloadCodec | false;
  /** Where deprecation warnings go. Default stderr. */
  warn?: (message: string) => void;
  /** How long to wait for the first connection. Default 5000 ms. */
  connectTimeoutMs?: number;
  /** How long a query may wait for a worker to answer. Default 15000 ms. */
  queryTimeoutMs?: number;
}

export interface TlsFiles {
  /** Client certificate (PEM) for mTLS; needs `keyFile`. */
  certFile?: string;
  /** Client private key (PEM) for mTLS; needs `certFile`. */
  keyFile?: string;
  /** CA certificate (PEM) that signed the server's certificate, if not a public one. */
  caFile?: string;
  /** Overrides the TLS server name (SNI), e.g. behind a proxy. */
  serverName?: string;
}

/** How a Session is created if the message is its first contact. Ignored for a running Session. */
export interface StartOptions {
  parentSessionId?: string;
  profile?: string;
  goals?: { session?: string; phase?: string };
  settings?: Partial<SettingsInput>;
  /** Overrides the Web UI summary (one line). Default `Session <id>: <first goal or message>`. */
  summary?: string;
  /** Overrides the Web UI details (Markdown). */
  details?: string;
}

/** A task input; `messageId` is generated when absent. Reuse the same id when retrying: it de-duplicates. */
export interface MessageDraft {
  messageId?: string;
  text: string;
  resources?: ResourceRef[];
  from?: Sender;
}

export interface SentMessage {
  sessionId: string;
  workflowId: string;
  messageId: string;
}

export interface SubmitResult extends SentMessage {
  seq: number;
  duplicate: boolean;
  /**
   * With `wait`: the decision record of this input (`null` if it is older than the records the
   * Session keeps). Without `wait`: undefined.
   */
  decision?: DecisionRecord | null;
}

/** What `waitForDecision` reports on each poll, for live progress. */
export interface Progress {
  stage: string;
  /** Seq of the input being processed (or last processed). */
  boundSeq: number;
  queueLength: number;
  status: SessionView['status'];
}

export interface WaitOptions {
  /** Give up after this long with SessionTimeoutError. Default 120000 ms. */
  timeoutMs?: number;
  signal?: AbortSignal;
  intervalMs?: number;
  onProgress?: (progress: Progress) => void;
}

export interface SubmitOptions {
  start?: StartOptions;
  /** Wait until the input is aligned, i.e. its decision record exists. */
  wait?: boolean | WaitOptions;
  /** Budget for the update itself (a worker must accept it). Default 60000 ms. */
  timeoutMs?: number;
}

export type WatchEvent =
  { type: 'stage'; stage: string; seq: number; view: SessionView } | { type: 'decision'; record: DecisionRecord };

export interface WatchOptions {
  signal?: AbortSignal;
  /** Poll interval. Default 250 ms. */
  intervalMs?: number;
  /** Yield decisions after this seq. Default: only decisions made after the watch started. */
  sinceSeq?: number;
}

export interface ListFilter {
  /** A SessionStage value, e.g. `Idle` (case-insensitive). */
  stage?: string;
  /** A SessionStatus value: `active`, `paused` or `closed`. */
  status?: string;
  /** Only sub-sessions of this parent. */
  parent?: string;
  /** Extra visibility clause, ANDed, e.g. `StartTime > "2026-01-01T00:00:00Z"`. */
  query?: string;
  /** Most rows returned. Default 50. */
  limit?: number;
}

export interface SessionSummary {
  sessionId: string;
  workflowId: string;
  runId: string;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, TERMINATED, ... */
  executionStatus: string;
  /** The Session's own status (SessionStatus): active, paused, closed. */
  status: string | null;
  stage: string | null;
  goal: string | null;
  parent: string | null;
  taskQueue: string;
  startTime: Date;
  closeTime: Date | null;
}

export { SESSION_STAGES };
export const SESSION_STATUSES = ['active', 'paused', 'closed'] as const;
export const COMMAND_NAMES = ['set-goals', 'pause', 'resume', 'close'] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

/** A closed Session is never restarted under the same id; a failed or terminated one may be. */
const REUSE_POLICY: WorkflowIdReusePolicy = 'ALLOW_DUPLICATE_FAILED_ONLY';
const SUMMARY_CHARS = 160;

export class SessionClient {
  readonly taskQueue: string;
  readonly address: string;
  private readonly queryTimeoutMs: number;
  private readonly ownsConnection: boolean;

  /**
   * Wraps an existing Client (its connection stays the caller's). Use `SessionClient.connect` to
   * let the SessionClient own its connection.
   */
  constructor(
    readonly client: Client,
    options: { taskQueue?: string; address?: string; queryTimeoutMs?: number; ownsConnection?: boolean } = {},
  ) {
    this.taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
    this.address = options.address ?? 'the Temporal server';
    this.queryTimeoutMs = options.queryTimeoutMs ?? 15_000;
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

  private static build(options: ConnectOptions): SessionClient {
    const env = options.env ?? process.env;
    let settings: TemporalConnectionSettings;
    let codec: PayloadCodec | undefined;
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
    } catch (err) {
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
      connectTimeout: options.connectTimeoutMs ?? 5_000,
    });
    const client = new Client({
      connection,
      namespace: settings.namespace,
      ...(codec ? { dataConverter: encryptedDataConverter(codec) } : {}),
    });
    return new SessionClient(client, {
      address: settings.address,
      ownsConnection: true,
      ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
      ...(options.queryTimeoutMs ? { queryTimeoutMs: options.queryTimeoutMs } : {}),
    });
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

  /** Closes the connection if this client opened it. */
  async close(): Promise<void> {
    if (this.ownsConnection) await this.client.connection.close();
  }

  // ---- task input -------------------------------------------------------------------------------

  /**
   * Sends a task input by signal-with-start: the Session is created if it does not exist. Returns
   * once the server has recorded the signal; it does not wait for a worker.
   */
  async send(sessionId: string, draft: MessageDraft, start: StartOptions = {}): Promise<SentMessage> {
    const message = parse(MessageInput, withMessageId(draft), 'message');
    const startArg = startArgument(sessionId, start);
    const workflowId = workflowIdFor(sessionId);
    await this.call({ sessionId }, () =>
      this.client.workflow.signalWithStart<typeof session, [unknown]>(WORKFLOW_TYPE, {
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
   */
  async submit(sessionId: string, draft: MessageDraft, options: SubmitOptions = {}): Promise<SubmitResult> {
    const message = parse(MessageInput, withMessageId(draft), 'message');
    const start = options.start ?? {};
    const startArg = startArgument(sessionId, start);
    const workflowId = workflowIdFor(sessionId);
    const startWorkflowOperation = new WithStartWorkflowOperation<typeof session>(WORKFLOW_TYPE, {
      workflowId,
      taskQueue: this.taskQueue,
      args: [startArg],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: REUSE_POLICY,
      ...userMetadata(startArg, message, start),
    });
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    const recorded = await this.call({ sessionId, waitingFor: 'a worker accepting the submit update' }, () =>
      this.client.withDeadline(deadline, () =>
        this.client.workflow.executeUpdateWithStart(submitUpdate, { args: [message], startWorkflowOperation }),
      ),
    );
    const result: SubmitResult = { sessionId, workflowId, messageId: message.messageId, ...recorded };
    if (options.wait) {
      result.decision = await this.waitForDecision(sessionId, recorded.seq, options.wait === true ? {} : options.wait);
    }
    return result;
  }

  /**
   * Polls until the decision record of input `seq` exists and returns it (`null` if the Session no
   * longer keeps it). Progress callbacks see the stage of whatever the Session is doing meanwhile.
   */
  async waitForDecision(sessionId: string, seq: number, options: WaitOptions = {}): Promise<DecisionRecord | null> {
    const timeoutMs = options.timeoutMs ?? 120_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const view = await this.snapshot(sessionId);
      options.onProgress?.({
        stage: view.stage,
        boundSeq: view.seq.lastBound,
        queueLength: view.queueLength,
        status: view.status,
      });
      if ((view.lastDecision?.seq ?? 0) >= seq) {
        if (view.lastDecision?.seq === seq) return view.lastDecision;
        const records = await this.decisions(sessionId);
        return records.find((r) => r.seq === seq) ?? null;
      }
      if (view.stage === 'Closed' && view.seq.lastBound < seq) {
        throw new SessionTimeoutError(`session ${sessionId} closed before input #${seq} was processed`);
      }
      if (Date.now() > deadline) {
        const where =
          view.status === 'paused'
            ? 'the session is paused'
            : `the session is at "${view.stage}" with input #${view.seq.lastBound}`;
        throw new SessionTimeoutError(
          `no decision for input #${seq} of session ${sessionId} within ${timeoutMs / 1000} s (${where})`,
        );
      }
      if (!(await pause(options.intervalMs ?? 250, options.signal))) {
        throw new SessionTimeoutError(`stopped waiting for input #${seq} of session ${sessionId}`);
      }
    }
  }

  // ---- non-task signals -------------------------------------------------------------------------

  /** Approves a pending approval. Never a task input. */
  approve(sessionId: string, approvalId: string, note?: string): Promise<void> {
    return this.approval(sessionId, { approvalId, approved: true, ...(note !== undefined ? { note } : {}) });
  }

  /** Rejects a pending approval. Never a task input. */
  reject(sessionId: string, approvalId: string, note?: string): Promise<void> {
    return this.approval(sessionId, { approvalId, approved: false, ...(note !== undefined ? { note } : {}) });
  }

  private async approval(sessionId: string, input: ApprovalInput): Promise<void> {
    const payload = parse(ApprovalInput, input, 'approval');
    await this.signal(sessionId, (h) => h.signal(approvalSignal, payload));
  }

  /** Delivers a system notification (`notificationId` generated when absent). */
  async notify(sessionId: string, input: { notificationId?: string; kind: string; text: string }): Promise<string> {
    const payload = parse(NotificationInput, { notificationId: `n-${randomUUID()}`, ...input }, 'notification');
    await this.signal(sessionId, (h) => h.signal(notificationSignal, payload));
    return payload.notificationId;
  }

  /** Delivers the result of a tool call. */
  async toolResult(sessionId: string, input: ToolResultInput): Promise<void> {
    const payload = parse(ToolResultInput, input, 'tool result');
    await this.signal(sessionId, (h) => h.signal(toolResultSignal, payload));
  }

  /** Sends a deterministic command (`commandId` generated when absent). Returns the commandId. */
  async command(
    sessionId: string,
    input: { name: CommandName; args?: Record<string, unknown>; commandId?: string },
  ): Promise<string> {
    const payload = parse(CommandInput, { commandId: `c-${randomUUID()}`, ...input }, 'command');
    await this.signal(sessionId, (h) => h.signal(commandSignal, payload));
    return payload.commandId;
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
  async *watch(sessionId: string, options: WatchOptions = {}): AsyncGenerator<WatchEvent, void, undefined> {
    const interval = options.intervalMs ?? 250;
    let lastSeq = options.sinceSeq;
    let lastStage: string | undefined;
    let lastBound = -1;
    for (let polls = 1; !options.signal?.aborted; polls++) {
      const view = await this.snapshot(sessionId);
      const newest = view.lastDecision?.seq ?? 0;
      lastSeq ??= newest;
      if (newest > lastSeq) {
        const after: number = lastSeq;
        const records =
          newest - after === 1 && view.lastDecision
            ? [view.lastDecision]
            : (await this.decisions(sessionId, { limit: newest - after })).filter((r) => r.seq > after);
        for (const record of records) yield { type: 'decision', record };
        lastSeq = newest;
      }
      if (view.stage !== lastStage || view.seq.lastBound !== lastBound) {
        lastStage = view.stage;
        lastBound = view.seq.lastBound;
        yield { type: 'stage', stage: view.stage, seq: view.seq.lastBound, view };
      }
      if (view.stage === 'Closed') return;
      // A terminated or failed workflow never reaches 'Closed'; ask Temporal every couple of seconds.
      if (polls % 8 === 0 && (await this.describe(sessionId)).executionStatus !== 'RUNNING') return;
      if (!(await pause(interval, options.signal))) return;
    }
  }

  /** Sessions from Temporal visibility, newest first, filtered by the Session search attributes. */
  async list(filter: ListFilter = {}): Promise<SessionSummary[]> {
    const limit = filter.limit ?? 50;
    const query = visibilityQuery(filter);
    const rows: SessionSummary[] = [];
    await this.call({}, async () => {
      for await (const info of this.client.workflow.list({ query, pageSize: Math.min(limit, 1000) })) {
        const attrs = info.typedSearchAttributes;
        rows.push({
          sessionId: info.workflowId.replace(/^session:/, ''),
          workflowId: info.workflowId,
          runId: info.runId,
          executionStatus: info.status.name,
          status: attrs.get(SessionStatusKey) ?? null,
          stage: attrs.get(SessionStageKey) ?? null,
          goal: attrs.get(SessionGoalKey) ?? null,
          parent: attrs.get(SessionParentKey) ?? null,
          taskQueue: info.taskQueue,
          startTime: info.startTime,
          closeTime: info.closeTime ?? null,
        });
        if (rows.length >= limit) break;
      }
    });
    return rows;
  }

  // ---- plumbing ---------------------------------------------------------------------------------

  private handle(sessionId: string): WorkflowHandle<typeof session> {
    parse(SessionId, sessionId, 'sessionId', 'sessionId');
    return this.client.workflow.getHandle<typeof session>(workflowIdFor(sessionId));
  }

  private async signal(sessionId: string, fn: (h: WorkflowHandle<typeof session>) => Promise<void>): Promise<void> {
    const handle = this.handle(sessionId);
    await this.call({ sessionId }, () => fn(handle));
  }

  private query<T>(sessionId: string, fn: (h: WorkflowHandle<typeof session>) => Promise<T>): Promise<T> {
    const handle = this.handle(sessionId);
    // A query waits for a worker to answer; without a deadline a stopped worker would hang the caller.
    return this.call({ sessionId, waitingFor: 'a worker answering the query' }, () =>
      this.client.withDeadline(Date.now() + this.queryTimeoutMs, () => fn(handle)),
    );
  }

  private async call<T>(ctx: Omit<CallContext, 'address'>, fn: () => Promise<T>): Promise<T> {
    await this.ensureConnected();
    try {
      return await fn();
    } catch (err) {
      throw translateError(err, { ...ctx, address: this.address });
    }
  }
}

/** The visibility query `list` runs. Values are checked against known ones, so nothing needs escaping. */
export function visibilityQuery(filter: ListFilter): string {
  const clauses = [`WorkflowType = '${WORKFLOW_TYPE}'`];
  if (filter.stage !== undefined) {
    const stage = SESSION_STAGES.find((s) => s.toLowerCase() === filter.stage?.trim().toLowerCase());
    if (!stage) {
      throw new InvalidInputError(`invalid stage: ${filter.stage} (one of: ${SESSION_STAGES.join(', ')})`, [
        { field: 'stage', message: `unknown stage ${filter.stage}` },
      ]);
    }
    clauses.push(`SessionStage = '${stage}'`);
  }
  if (filter.status !== undefined) {
    const status = SESSION_STATUSES.find((s) => s === filter.status?.trim().toLowerCase());
    if (!status) {
      throw new InvalidInputError(`invalid status: ${filter.status} (one of: ${SESSION_STATUSES.join(', ')})`, [
        { field: 'status', message: `unknown status ${filter.status}` },
      ]);
    }
    clauses.push(`SessionStatus = '${status}'`);
  }
  if (filter.parent !== undefined)
    clauses.push(`SessionParent = '${parse(SessionId, filter.parent, 'parent', 'parent')}'`);
  if (filter.query?.trim()) clauses.push(`(${filter.query.trim()})`);
  return clauses.join(' AND ');
}

/** The public start argument, validated. */
export function startArgument(sessionId: string, start: StartOptions): SessionStart {
  return parse(
    SessionStart,
    {
      sessionId,
      ...(start.parentSessionId !== undefined ? { parentSessionId: start.parentSessionId } : {}),
      ...(start.profile !== undefined ? { profile: start.profile } : {}),
      ...(start.goals !== undefined ? { goals: start.goals } : {}),
      ...(start.settings !== undefined ? { settings: start.settings } : {}),
    },
    'start argument',
  );
}

/** The Web UI's static summary (one line) and details (Markdown) for a new Session. */
export function userMetadata(
  start: SessionStart,
  first: MessageInput,
  overrides: Pick<StartOptions, 'summary' | 'details'> = {},
): { staticSummary: string; staticDetails: string } {
  const subject = start.goals?.session ?? start.goals?.phase ?? first.text;
  const summary = overrides.summary ?? `Session ${start.sessionId}: ${clip(subject, SUMMARY_CHARS)}`;
  const lines = [
    `**Session** \`${start.sessionId}\` · **profile** ${start.profile ?? 'default'} · **parent** ${
      start.parentSessionId ? `\`${start.parentSessionId}\`` : '—'
    }`,
    '',
    `**Goals at start:** ${
      start.goals
        ? `session: ${clip(start.goals.session ?? '—', 300)}; phase: ${clip(start.goals.phase ?? '—', 300)}`
        : 'from the first task input'
    }`,
    '',
    `**First message** \`${first.messageId}\`: ${clip(first.text, 600)}`,
  ];
  if (first.resources?.length) lines.push('', `**Resources:** ${first.resources.map((r) => r.uri).join(', ')}`);
  if (start.settings && Object.keys(start.settings).length > 0) {
    lines.push('', `**Settings:** \`${JSON.stringify(start.settings)}\``);
  }
  return { staticSummary: summary, staticDetails: overrides.details ?? lines.join('\n') };
}

function withMessageId(draft: MessageDraft): unknown {
  return { ...draft, messageId: draft.messageId ?? `m-${randomUUID()}` };
}

function parse<S extends z.ZodType>(schema: S, value: unknown, what: string, field?: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const error = InvalidInputError.fromZod(what, parsed.error);
  if (field === undefined) throw error;
  throw new InvalidInputError(
    error.message,
    error.issues.map((i) => ({ ...i, field: i.field || field })),
  );
}

/** Sleeps; resolves false instead if the signal aborts first. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return false;
  try {
    await sleep(ms, undefined, signal ? { signal } : {});
    return true;
  } catch {
    return false;
  }
}

function clip(text: string, max: number): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}
