import type { ControlKey } from '../contract/control-signature.js';
/**
 * What the Session client takes and returns: connection, start and wait options, results, watch
 * events, list rows; plus the enums and defaults a caller needs, each derived from the workflow's
 * schemas rather than restated.
 */
import type { PayloadCodec } from '@temporalio/common';
import { DEFAULT_TASK_QUEUE } from '../contract/api.js';
import type { TurnResult, SessionView } from '../contract/queries.js';
import { COMMAND_NAMES } from '../contract/control-signals.js';
import type { CommandInput, ResourceRef, Sender, SettingsInput, WhileBusy } from '../contract/messages.js';
import { SESSION_STAGES, SessionState } from '../contract/state.js';
import type { DecisionRecord } from '../contract/state.js';

/** Where and how to connect. Every field has a local-development default. */
export interface ConnectOptions {
  /** Temporal frontend `host:port`. Default `localhost:7233`. */
  address?: string;
  /** Default `default`. */
  namespace?: string;
  /** Task queue new Sessions are started on. Default `sessions`. */
  taskQueue?: string;
  /**
   * `true` for TLS with the system's roots; an object for a private CA and/or mTLS (file paths).
   * An API key turns TLS on unless this is `false`. Unset: TEMPORAL_TLS_* and the profile decide.
   */
  tls?: boolean | TlsFiles;
  /** Temporal Cloud API key, sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** `temporal.toml` profile. Default `TEMPORAL_PROFILE`, else `default`. */
  profile?: string;
  /** `temporal.toml` path. Default `TEMPORAL_CONFIG_FILE`, else `~/.config/temporalio/temporal.toml`. */
  configFile?: string;
  /** Environment to read unset fields from (`TEMPORAL_*`, see client/connection.ts); default `process.env`. */
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
  /**
   * How long any other call (a signal, a start, describe, list) may wait for the server. Default
   * 30000 ms. Without a deadline a call can wait forever: gRPC-JS keeps calls queued while a
   * reconnect to a restarted server waits for its first HTTP/2 SETTINGS frame
   * (grpc/grpc-node#2785). A timed-out send may or may not have been recorded: send it again with
   * the same messageId, which the Session de-duplicates.
   */
  requestTimeoutMs?: number;
  /**
   * Trace what this client sends with OpenTelemetry: each start, signal, update and query gets a
   * span under the caller's active span, and its context travels to the Session in Temporal
   * headers, so a worker with tracing on continues the same trace. Uses the OpenTelemetry API's
   * global tracer provider, context manager and propagator, which the service registers; without
   * them the spans are not recorded and no context is sent. Default false.
   */
  tracing?: boolean;
  /**
   * Key that signs approvals, tool results, commands and messages (contract/control-signature.ts),
   * for workers with HARNESS_CONTROL_KEYS. Default: `HARNESS_CONTROL_KEY`, else the first of
   * `HARNESS_CONTROL_KEYS` (`keyId:base64secret`); `false` sends everything unsigned.
   */
  controlKey?: ControlKey | false;
  /** How long a signature this client makes stays valid. Default 15 minutes. */
  signatureTtlMs?: number;
  /**
   * Who this client answers as: recorded as the `approver` of every approval and rejection it sends
   * (inside the signature when it has a control key). Default: `HARNESS_SIGNER_NAME`. When set, an
   * `approver` passed per call must be the same name; front ends that authenticate their own callers
   * (the gateway) use `client.as(name)`.
   */
  signerName?: string;
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
  /**
   * What to do if an agent turn runs when the message arrives, instead of the Session's `whileBusy`
   * setting: `enqueue`, `merge`, `interrupt` or `reject` (a `submit` then throws InputRefusedError).
   */
  whileBusy?: WhileBusy;
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
/** What `waitForDecision` reports each time the workflow answers (at least once a minute). */
export interface Progress {
  seq: number;
  /** `pending` while the input is queued or its turn runs; `done` or `waiting` at the end. */
  status: TurnResult['status'];
  outcome: TurnResult['outcome'];
}

export interface WaitOptions {
  /** Give up after this long with SessionTimeoutError. Default 120000 ms. */
  timeoutMs?: number;
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
}

export interface SubmitOptions {
  start?: StartOptions;
  /** Wait until the input is aligned, i.e. its decision record exists. */
  wait?: boolean | WaitOptions;
  /** Budget for the update itself (a worker must accept it). Default 60000 ms. */
  timeoutMs?: number;
  /** The message's `whileBusy` (see MessageDraft), when the draft does not set one. */
  whileBusy?: WhileBusy;
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

/** How `approve` and `reject` answer a waiting call. */
export interface ApprovalOptions {
  /** Shown to the model with a rejection; recorded with the call either way. */
  note?: string;
  /** `snapshot().pendingApprovals[].argumentsHash` of the call you decided on: the answer then holds only for those arguments. */
  argumentsHash?: string;
  /**
   * Who answers, recorded with the call and in the control events. Must equal the client's
   * configured `signerName` when it has one (the default then); without one it is the caller's claim.
   */
  approver?: string;
  /**
   * Approve only: run the call with these arguments (a JSON object, or its text) instead of the
   * model's. Checked on the worker against the tool's schema and the approval policy.
   */
  arguments?: string | Record<string, unknown>;
  /** How long to wait for a worker to take the answer (default 60 s); then SessionTimeoutError. */
  timeoutMs?: number;
}

export { SESSION_STAGES };
/** Every value of the SessionStatus search attribute and of `snapshot().status`, from the state schema. */
export const SESSION_STATUSES = SessionState.shape.status.options;
export { COMMAND_NAMES };
export type CommandName = CommandInput['name'];

/** Where `create`/`connect` connect when not told otherwise: a local `temporal server start-dev`. */
export const CONNECTION_DEFAULTS = {
  address: 'localhost:7233',
  namespace: 'default',
  taskQueue: DEFAULT_TASK_QUEUE,
  connectTimeoutMs: 5_000,
  queryTimeoutMs: 15_000,
  requestTimeoutMs: 30_000,
} as const;
