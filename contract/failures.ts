/**
 * Every failure kind the Session and its activities raise: its wire name in FAILURE, and one error
 * class per kind (a HarnessFailure whose `type` is that name). The names are wire contract: they are
 * the `type` of an ApplicationFailure that clients, retry policies and decision records see, so they
 * are written here and nowhere else.
 *
 * The classes cross Temporal as ApplicationFailure and come back as classes: code that raises calls
 * `toApplicationFailure()` (or `ApplicationFailure.nonRetryable(message, FAILURE.X)`, the same wire),
 * and code that receives one (client/, gateway/) calls `harnessFailureOf(err)`, which finds the
 * ApplicationFailure in an error's causes and returns the class of its type. Nothing decides a
 * failure's kind from its message text.
 *
 * Pure module: safe to import from workflow code.
 */
import { ApplicationFailure, type Duration } from '@temporalio/common';

export const FAILURE = {
  /** A `submit` update's message was refused (invalid, queue full, session closed). */
  InvalidMessage: 'InvalidMessage',
  /** A `submit` update's message arrived while a turn ran and the Session (or the message) says `whileBusy: reject`. */
  SessionBusy: 'SessionBusy',
  /** An `approve` update answered nothing: a refused argument edit, a bad signature, or no such waiting call. */
  ApprovalRefused: 'ApprovalRefused',
  /** An `answerTool` update answered nothing: no call waits for that result, a bad signature, or already answered. */
  ToolResultRefused: 'ToolResultRefused',
  /** A request (the `result` update's argument, a query's argument, an activity's input) that does not fit its schema. */
  InvalidRequest: 'InvalidRequest',
  /** The workflow's start argument is invalid or does not match its workflow id. */
  InvalidStartArgument: 'InvalidStartArgument',
  /** The start asked for a setting the worker does not allow (an agentTaskQueue off its allow-list). */
  SettingNotAllowed: 'SettingNotAllowed',
  /** An activity answered something its contract does not allow. */
  InvalidActivityResult: 'InvalidActivityResult',
  /** Recall answered something its contract does not allow. */
  InvalidRecallResult: 'InvalidRecallResult',
  /** A receiving Session refused a handed-over message. */
  HandOverRefused: 'HandOverRefused',
  /** The worker lacks what the activity needs (no session directory). */
  NotConfigured: 'NotConfigured',
  /** An MCP server could not be reached before the tool call went out (retryable: nothing ran). */
  McpServerUnavailable: 'McpServerUnavailable',
  ModelTimeout: 'ModelTimeout',
  ModelUnavailable: 'ModelUnavailable',
  ModelRateLimited: 'ModelRateLimited',
  ModelServerError: 'ModelServerError',
  /** Any other failure of a model call (retryable). */
  ModelError: 'ModelError',
  /** The model endpoint refused the request (a 4xx other than 429). */
  ModelRequestRejected: 'ModelRequestRejected',
  /**
   * The model endpoint refused a parameter or value the harness sent (a 400 saying it is unsupported
   * or invalid): the provider profile or the endpoint's setup is wrong, and no retry can fix it. The
   * message quotes the provider and names the setting to change.
   */
  ModelConfigError: 'ModelConfigError',
  /** The model's answer does not fit the role's output schema. */
  ModelInvalidOutput: 'ModelInvalidOutput',
  /** No model is configured for the role. */
  ModelNotConfigured: 'ModelNotConfigured',
} as const;
export type FailureType = (typeof FAILURE)[keyof typeof FAILURE];

/** Kinds a retry may cure (a timeout, an outage, a rate limit); every other kind is non-retryable by default. */
export const RETRYABLE_FAILURES: ReadonlySet<FailureType> = new Set<FailureType>([
  FAILURE.McpServerUnavailable,
  FAILURE.ModelTimeout,
  FAILURE.ModelUnavailable,
  FAILURE.ModelRateLimited,
  FAILURE.ModelServerError,
  FAILURE.ModelError,
]);

/** When each kind is raised, in the words docs/contract.md ("Failure types") shows; one entry per kind. */
export const FAILURE_MEANING: { readonly [K in FailureType]: string } = {
  InvalidMessage: 'the `submit` update’s message is invalid, the queue is full or the Session is closed',
  SessionBusy:
    'the `submit` update’s message arrived while an agent turn ran and `whileBusy` is `reject` (nothing was queued; send it again later)',
  ApprovalRefused:
    'the `approve` update applied nothing: a refused argument edit, a bad signature, or no such waiting call',
  ToolResultRefused:
    'the `answerTool` update applied nothing: no call waits for that result, a bad signature, or already answered',
  InvalidRequest:
    'an argument (the `result` update’s, the `events` query’s) or an activity’s input does not fit its schema',
  InvalidStartArgument: 'the start argument is invalid or does not match the workflow id',
  SettingNotAllowed: 'the start asked for a setting the worker does not allow (an `agentTaskQueue` off its allow-list)',
  InvalidActivityResult: 'an activity answered something its contract does not allow',
  InvalidRecallResult: 'recall answered something its contract does not allow',
  HandOverRefused: 'a receiving Session refused a handed-over message',
  NotConfigured: 'the worker lacks what the activity needs (no session directory)',
  McpServerUnavailable: 'an MCP server could not be reached before the tool call went out',
  ModelTimeout: 'a model call timed out',
  ModelUnavailable: 'a model endpoint could not be reached',
  ModelRateLimited: 'a model endpoint answered 429 (its `Retry-After` becomes the next retry’s delay)',
  ModelServerError: 'a model endpoint answered 5xx',
  ModelError: 'a model call failed any other way',
  ModelRequestRejected: 'the model endpoint refused the request (a 4xx other than 429)',
  ModelConfigError:
    'the model endpoint refused a parameter or value the provider profile sent (a configuration error: the message names the setting to change)',
  ModelInvalidOutput: 'the model’s answer does not fit the role’s output schema',
  ModelNotConfigured: 'no model is configured for the role',
};

export interface FailureOptions {
  /** Overrides the kind's default (RETRYABLE_FAILURES). */
  nonRetryable?: boolean;
  /** How long Temporal waits before the next attempt (a rate limit's Retry-After). */
  nextRetryDelay?: Duration;
  details?: unknown[];
  cause?: unknown;
}

/** Base class of every failure the harness raises on purpose; `type` is its wire name. */
export abstract class HarnessFailure extends Error {
  abstract readonly type: FailureType;
  readonly nextRetryDelay: Duration | undefined;
  readonly details: unknown[];
  readonly #nonRetryable: boolean | undefined;

  constructor(message: string, options: FailureOptions = {}) {
    super(message);
    this.#nonRetryable = options.nonRetryable;
    this.nextRetryDelay = options.nextRetryDelay;
    this.details = options.details ?? [];
    if (options.cause !== undefined) this.cause = options.cause;
  }

  /** Whether Temporal must not retry it: as the raiser said, else the kind's default. */
  get nonRetryable(): boolean {
    return this.#nonRetryable ?? !RETRYABLE_FAILURES.has(this.type);
  }

  /** The failure as it crosses Temporal: an ApplicationFailure of this kind's type. */
  toApplicationFailure(): ApplicationFailure {
    return ApplicationFailure.create({
      message: this.message,
      type: this.type,
      nonRetryable: this.nonRetryable,
      details: this.details,
      ...(this.nextRetryDelay !== undefined ? { nextRetryDelay: this.nextRetryDelay } : {}),
      ...(this.cause instanceof Error ? { cause: this.cause } : {}),
    });
  }
}

export class InvalidMessageFailure extends HarnessFailure {
  readonly type = FAILURE.InvalidMessage;
  override name = 'InvalidMessageFailure';
}
export class SessionBusyFailure extends HarnessFailure {
  readonly type = FAILURE.SessionBusy;
  override name = 'SessionBusyFailure';
}
export class ApprovalRefusedFailure extends HarnessFailure {
  readonly type = FAILURE.ApprovalRefused;
  override name = 'ApprovalRefusedFailure';
}
export class ToolResultRefusedFailure extends HarnessFailure {
  readonly type = FAILURE.ToolResultRefused;
  override name = 'ToolResultRefusedFailure';
}
export class InvalidRequestFailure extends HarnessFailure {
  readonly type = FAILURE.InvalidRequest;
  override name = 'InvalidRequestFailure';
}
export class InvalidStartArgumentFailure extends HarnessFailure {
  readonly type = FAILURE.InvalidStartArgument;
  override name = 'InvalidStartArgumentFailure';
}
export class SettingNotAllowedFailure extends HarnessFailure {
  readonly type = FAILURE.SettingNotAllowed;
  override name = 'SettingNotAllowedFailure';
}
export class InvalidActivityResultFailure extends HarnessFailure {
  readonly type = FAILURE.InvalidActivityResult;
  override name = 'InvalidActivityResultFailure';
}
export class InvalidRecallResultFailure extends HarnessFailure {
  readonly type = FAILURE.InvalidRecallResult;
  override name = 'InvalidRecallResultFailure';
}
export class HandOverRefusedFailure extends HarnessFailure {
  readonly type = FAILURE.HandOverRefused;
  override name = 'HandOverRefusedFailure';
}
export class NotConfiguredFailure extends HarnessFailure {
  readonly type = FAILURE.NotConfigured;
  override name = 'NotConfiguredFailure';
}
export class McpServerUnavailableFailure extends HarnessFailure {
  readonly type = FAILURE.McpServerUnavailable;
  override name = 'McpServerUnavailableFailure';
}
export class ModelTimeoutFailure extends HarnessFailure {
  readonly type = FAILURE.ModelTimeout;
  override name = 'ModelTimeoutFailure';
}
export class ModelUnavailableFailure extends HarnessFailure {
  readonly type = FAILURE.ModelUnavailable;
  override name = 'ModelUnavailableFailure';
}
export class ModelRateLimitedFailure extends HarnessFailure {
  readonly type = FAILURE.ModelRateLimited;
  override name = 'ModelRateLimitedFailure';
}
export class ModelServerErrorFailure extends HarnessFailure {
  readonly type = FAILURE.ModelServerError;
  override name = 'ModelServerErrorFailure';
}
export class ModelErrorFailure extends HarnessFailure {
  readonly type = FAILURE.ModelError;
  override name = 'ModelErrorFailure';
}
export class ModelConfigErrorFailure extends HarnessFailure {
  readonly type = FAILURE.ModelConfigError;
  override name = 'ModelConfigErrorFailure';
}
export class ModelRequestRejectedFailure extends HarnessFailure {
  readonly type = FAILURE.ModelRequestRejected;
  override name = 'ModelRequestRejectedFailure';
}
export class ModelInvalidOutputFailure extends HarnessFailure {
  readonly type = FAILURE.ModelInvalidOutput;
  override name = 'ModelInvalidOutputFailure';
}
export class ModelNotConfiguredFailure extends HarnessFailure {
  readonly type = FAILURE.ModelNotConfigured;
  override name = 'ModelNotConfiguredFailure';
}

/** The class of one failure kind. */
export type FailureClass<K extends FailureType = FailureType> = new (
  message: string,
  options?: FailureOptions,
) => HarnessFailure & { readonly type: K };

/** The class of each kind. Typed over every FailureType, so a kind added to FAILURE without a class does not compile. */
export const FAILURE_CLASSES: { readonly [K in FailureType]: FailureClass<K> } = {
  InvalidMessage: InvalidMessageFailure,
  SessionBusy: SessionBusyFailure,
  ApprovalRefused: ApprovalRefusedFailure,
  ToolResultRefused: ToolResultRefusedFailure,
  InvalidRequest: InvalidRequestFailure,
  InvalidStartArgument: InvalidStartArgumentFailure,
  SettingNotAllowed: SettingNotAllowedFailure,
  InvalidActivityResult: InvalidActivityResultFailure,
  InvalidRecallResult: InvalidRecallResultFailure,
  HandOverRefused: HandOverRefusedFailure,
  NotConfigured: NotConfiguredFailure,
  McpServerUnavailable: McpServerUnavailableFailure,
  ModelTimeout: ModelTimeoutFailure,
  ModelUnavailable: ModelUnavailableFailure,
  ModelRateLimited: ModelRateLimitedFailure,
  ModelServerError: ModelServerErrorFailure,
  ModelError: ModelErrorFailure,
  ModelRequestRejected: ModelRequestRejectedFailure,
  ModelConfigError: ModelConfigErrorFailure,
  ModelInvalidOutput: ModelInvalidOutputFailure,
  ModelNotConfigured: ModelNotConfiguredFailure,
};

/** Whether `type` names one of our failure kinds. */
export function isFailureType(type: unknown): type is FailureType {
  return typeof type === 'string' && Object.hasOwn(FAILURE_CLASSES, type);
}

/**
 * The class of a received ApplicationFailure (message, retryability, details and cause kept), or
 * undefined when its type is not one of ours.
 */
export function failureFromApplication(failure: ApplicationFailure): HarnessFailure | undefined {
  if (!isFailureType(failure.type)) return undefined;
  const Class: FailureClass = FAILURE_CLASSES[failure.type];
  return new Class(failure.message, {
    nonRetryable: failure.nonRetryable === true,
    ...(failure.nextRetryDelay != null ? { nextRetryDelay: failure.nextRetryDelay } : {}),
    details: failure.details ?? [],
    cause: failure,
  });
}

/** How many causes deep harnessFailureOf looks (an update error wraps an ActivityFailure wraps the failure). */
const CAUSE_DEPTH = 6;

/**
 * The harness failure inside `err`: `err` itself when it is one, else the first ApplicationFailure of
 * one of our types along its `cause` chain, as its class. Undefined when there is none.
 */
export function harnessFailureOf(err: unknown): HarnessFailure | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < CAUSE_DEPTH; e = e.cause, depth++) {
    if (e instanceof HarnessFailure) return e;
    if (e instanceof ApplicationFailure) {
      const failure = failureFromApplication(e);
      if (failure) return failure;
    }
  }
  return undefined;
}
