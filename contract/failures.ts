/**
 * Every failure type the Session and its activities raise, by name. The values are wire contract:
 * they are the `type` of an ApplicationFailure that clients, retry policies and decision records
 * see, so they are written here and nowhere else.
 *
 * Pure module: safe to import from workflow code.
 */
export const FAILURE = {
  /** A `submit` update's message was refused (invalid, queue full, session closed). */
  InvalidMessage: 'InvalidMessage',
  /** An `approve` update answered nothing: a refused argument edit, a bad signature, or no such waiting call. */
  ApprovalRefused: 'ApprovalRefused',
  /** A request (the `result` update's argument, an activity's input) that does not fit its schema. */
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
