/**
 * Typed errors of the Session client, each with the CLI exit code a script can rely on. Errors from
 * @temporalio/client are translated here, so callers never have to know gRPC status codes.
 */
import {
  NamespaceNotFoundError,
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  isGrpcServiceError,
} from '@temporalio/client';
import {
  ApprovalRefusedFailure,
  InvalidMessageFailure,
  SessionBusyFailure,
  ToolResultRefusedFailure,
  harnessFailureOf,
  type HarnessFailure,
} from '../contract/failures.js';
import type { z } from 'zod';
import { workflowIdFor } from '../contract/ids.js';
import { describeIssues } from '../contract/text.js';

/** gRPC status codes we translate (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
const GRPC = { CANCELLED: 1, INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, UNAVAILABLE: 14 } as const;

/** Exit codes of the `harness` CLI. Public: scripts branch on them. */
export const EXIT = {
  ok: 0,
  unexpected: 1,
  invalidInput: 2,
  sessionNotFound: 3,
  serverUnreachable: 4,
  timedOut: 5,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** What each exit code means, in the words the CLI's help and the docs use. */
export const EXIT_MEANINGS: Record<keyof typeof EXIT, string> = {
  ok: 'ok',
  unexpected: 'unexpected error',
  invalidInput: 'usage or invalid input (also: the Session is closed)',
  sessionNotFound: 'not found (a Session, or a memory item)',
  serverUnreachable: 'server unreachable',
  timedOut: 'timed out (--wait ran out, or no worker answered a query)',
};

/** `0 ok, 1 unexpected error, ...`: the exit codes as one line of text, from EXIT and EXIT_MEANINGS. */
export function describeExitCodes(): string {
  return (Object.keys(EXIT) as Array<keyof typeof EXIT>).map((key) => `${EXIT[key]} ${EXIT_MEANINGS[key]}`).join(', ');
}

/** Base class of every error the client throws on purpose. */
export abstract class SessionClientError extends Error {
  abstract readonly exitCode: ExitCode;
}

export interface InputIssue {
  /** Dotted path of the offending field, `''` for the payload as a whole. */
  field: string;
  message: string;
}

/** A payload or option failed validation; nothing was sent. */
export class InvalidInputError extends SessionClientError {
  override name = 'InvalidInputError';
  readonly exitCode = EXIT.invalidInput;
  /** The first offending field (`''` when the payload as a whole is wrong). */
  readonly field: string;

  constructor(
    message: string,
    readonly issues: InputIssue[],
  ) {
    super(message);
    this.field = issues[0]?.field ?? '';
  }

  /** Builds the error from zod issues: `invalid message: text: text must not be empty`. */
  static fromZod(what: string, error: z.ZodError): InvalidInputError {
    const issues = error.issues.map((issue) => ({ field: issue.path.join('.'), message: issue.message }));
    return new InvalidInputError(`invalid ${what}: ${describeIssues(error)}`, issues);
  }
}

/**
 * The Session refused an input the schema accepts: it is closed, its queue is full, or a turn runs
 * and `whileBusy` is `reject` (then `busy` is true and `failure` is a SessionBusy failure).
 */
export class InputRefusedError extends SessionClientError {
  override name = 'InputRefusedError';
  readonly exitCode = EXIT.invalidInput;
  constructor(
    readonly sessionId: string,
    reason: string,
    /** The Session's failure, when it came from one (an InvalidMessage failure of the `submit` update). */
    readonly failure?: HarnessFailure,
  ) {
    super(`session ${sessionId} refused the input: ${reason}`, failure ? { cause: failure } : undefined);
  }

  /** Whether it was refused only because a turn ran (`whileBusy: reject`): sending it again later may succeed. */
  get busy(): boolean {
    return this.failure instanceof SessionBusyFailure;
  }
}

/**
 * The Session answered an approval with why it applied nothing: an argument edit the tool's schema or
 * the approval policy refused, a bad signature, or no call waiting under that id. A refused edit
 * leaves the call waiting.
 */
export class ApprovalRefusedError extends SessionClientError {
  override name = 'ApprovalRefusedError';
  readonly exitCode = EXIT.invalidInput;
  constructor(
    readonly sessionId: string,
    readonly reason: string,
    /** The Session's failure, when it came from one (an ApprovalRefused failure of the `approve` update). */
    readonly failure?: HarnessFailure,
  ) {
    super(`session ${sessionId} refused the approval: ${reason}`, failure ? { cause: failure } : undefined);
  }
}

/**
 * The Session answered a tool result with why it applied nothing: no call waits for that result
 * (already answered, never asked, another turn's), or a bad signature.
 */
export class ToolResultRefusedError extends SessionClientError {
  override name = 'ToolResultRefusedError';
  readonly exitCode = EXIT.invalidInput;
  constructor(
    readonly sessionId: string,
    readonly reason: string,
    /** The Session's failure (a ToolResultRefused failure of the `answerTool` update). */
    readonly failure?: HarnessFailure,
  ) {
    super(`session ${sessionId} refused the tool result: ${reason}`, failure ? { cause: failure } : undefined);
  }
}

/** No Session with this id exists (or, for a message, it is closed and cannot be restarted). */
export class SessionNotFoundError extends SessionClientError {
  override name = 'SessionNotFoundError';
  readonly exitCode = EXIT.sessionNotFound;
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} not found (no workflow ${workflowIdFor(sessionId)})`);
  }
}

/** A Session that has closed accepts no more task input; starting it anew under the same id is refused. */
export class SessionClosedError extends SessionClientError {
  override name = 'SessionClosedError';
  readonly exitCode = EXIT.invalidInput;
  constructor(readonly sessionId: string) {
    super(`session ${sessionId} is closed and accepts no new messages`);
  }
}

/** The Temporal frontend could not be reached (connection refused, DNS, TLS handshake or timeout). */
export class ServerUnreachableError extends SessionClientError {
  override name = 'ServerUnreachableError';
  readonly exitCode = EXIT.serverUnreachable;
  constructor(
    readonly address: string,
    detail: string,
  ) {
    super(`Temporal server at ${address} is unreachable: ${detail}`);
  }
}

/** A wait ran out: no worker answered a query, or `--wait` saw no decision in time. */
export class SessionTimeoutError extends SessionClientError {
  override name = 'SessionTimeoutError';
  readonly exitCode = EXIT.timedOut;
}

/** The call was made on, or cancelled by, a SessionClient that `close()` closed. */
export class ClientClosedError extends SessionClientError {
  override name = 'ClientClosedError';
  readonly exitCode = EXIT.unexpected;
  constructor() {
    super('this SessionClient is closed: its calls were cancelled and it makes no more');
  }
}

/** Where a failed call was aimed, for error messages. */
export interface CallContext {
  address: string;
  sessionId?: string;
  /** What the call was waiting for, in words, when a deadline passes. */
  waitingFor?: string;
  /** The call's deadline (epoch ms), when it had one. */
  deadline?: number;
}

/**
 * How early before its deadline a cancelled call still counts as timed out. When the deadline passes,
 * the server may reset the stream first, and the client then reports CANCELLED, not DEADLINE_EXCEEDED.
 */
const DEADLINE_SLACK_MS = 50;

/** Translates an error from @temporalio/client into one of ours; anything unknown is returned as is. */
export function translateError(err: unknown, ctx: CallContext): unknown {
  if (err instanceof SessionClientError) return err;
  if (err instanceof WorkflowNotFoundError && ctx.sessionId !== undefined)
    return new SessionNotFoundError(ctx.sessionId);
  if (err instanceof WorkflowExecutionAlreadyStartedError && ctx.sessionId !== undefined) {
    return new SessionClosedError(ctx.sessionId);
  }
  if (err instanceof NamespaceNotFoundError) {
    return new InvalidInputError(err.message, [{ field: 'namespace', message: err.message }]);
  }
  if (err instanceof WorkflowUpdateFailedError) {
    const failure = harnessFailureOf(err.cause);
    if (
      (failure instanceof InvalidMessageFailure || failure instanceof SessionBusyFailure) &&
      ctx.sessionId !== undefined
    ) {
      return new InputRefusedError(ctx.sessionId, failure.message, failure);
    }
    if (failure instanceof ApprovalRefusedFailure && ctx.sessionId !== undefined) {
      return new ApprovalRefusedError(ctx.sessionId, failure.message, failure);
    }
    if (failure instanceof ToolResultRefusedFailure && ctx.sessionId !== undefined) {
      return new ToolResultRefusedError(ctx.sessionId, failure.message, failure);
    }
    return err;
  }
  // Connection.connect reports an unreachable address as a plain Error before any RPC was made.
  if (err instanceof Error && /Failed to connect before the deadline/i.test(err.message)) {
    return new ServerUnreachableError(ctx.address, 'no connection within the connect timeout');
  }
  const grpc = grpcErrorOf(err);
  if (grpc) {
    if (grpc.code === GRPC.UNAVAILABLE) return new ServerUnreachableError(ctx.address, grpc.details || 'unavailable');
    const pastDeadline = ctx.deadline !== undefined && Date.now() >= ctx.deadline - DEADLINE_SLACK_MS;
    if (grpc.code === GRPC.DEADLINE_EXCEEDED || (grpc.code === GRPC.CANCELLED && pastDeadline)) {
      // A worker answers queries and updates; the server alone records signals, starts and lists.
      const hint = ctx.waitingFor?.startsWith('a worker')
        ? 'is a worker polling its task queue?'
        : 'the server may be restarting; it is safe to retry (a message with the same messageId)';
      return new SessionTimeoutError(
        `no answer from ${ctx.waitingFor ?? 'the server'} in time` +
          (ctx.sessionId !== undefined ? ` (session ${ctx.sessionId}); ${hint}` : ` (${hint})`),
      );
    }
    if (grpc.code === GRPC.NOT_FOUND && ctx.sessionId !== undefined) return new SessionNotFoundError(ctx.sessionId);
    if (grpc.code === GRPC.INVALID_ARGUMENT) {
      return new InvalidInputError(grpc.details, [{ field: '', message: grpc.details }]);
    }
  }
  return err;
}

function grpcErrorOf(err: unknown): { code: number; details: string } | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e)) return { code: e.code, details: e.details };
    if (!(e instanceof ServiceError) && !(e instanceof Error)) break;
  }
  return undefined;
}
