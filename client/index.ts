/**
 * The public API of the Session client: what a backend service imports to drive Sessions on any
 * Temporal cluster. Everything else under client/ is an implementation detail, and nothing here
 * reaches anything but contract/ (a lint rule keeps it so), so importing the client never loads a worker,
 * a model provider or a database driver.
 *
 * ```ts
 * import { SessionClient } from './client/index.js';
 * const sessions = await SessionClient.connect({ address: 'localhost:7233' });
 * const { seq } = await sessions.submit('demo', { text: 'Research ComfyUI and deliver a Markdown guide' });
 * ```
 */
export { SessionClient } from './session-client.js';
export { startArgument, userMetadata, visibilityQuery } from './payloads.js';
export {
  COMMAND_NAMES,
  CONNECTION_DEFAULTS,
  SESSION_STAGES,
  SESSION_STATUSES,
  type CommandName,
  type ConnectOptions,
  type ListFilter,
  type MessageDraft,
  type Progress,
  type ApprovalOptions,
  type SentMessage,
  type SessionSummary,
  type StartOptions,
  type SubmitOptions,
  type SubmitResult,
  type TlsFiles,
  type WaitOptions,
  type WatchEvent,
  type WatchOptions,
} from './types.js';
export {
  EXIT,
  EXIT_MEANINGS,
  InputRefusedError,
  InvalidInputError,
  ApprovalRefusedError,
  ClientClosedError,
  ToolResultRefusedError,
  ServerUnreachableError,
  SessionClientError,
  SessionClosedError,
  SessionNotFoundError,
  SessionTimeoutError,
  describeExitCodes,
  type ExitCode,
  type InputIssue,
} from './errors.js';

// The wire types, defined once in contract/ and re-exported so callers need no deeper import.
export { DEFAULT_TASK_QUEUE, WORKFLOW_TYPE } from '../contract/api.js';
export { sessionIdOf, workflowIdFor } from '../contract/ids.js';
// Failure kinds: `harnessFailureOf(err)` turns an ApplicationFailure inside any Temporal error into its class.
export { FAILURE, FAILURE_CLASSES, HarnessFailure, harnessFailureOf, type FailureType } from '../contract/failures.js';
export type {
  ApprovalInput,
  CommandInput,
  MessageInput,
  NotificationInput,
  ResourceRef,
  Sender,
  SessionStart,
  SettingsInput,
  ToolResultInput,
} from '../contract/messages.js';
export type {
  BoundInput,
  Capabilities,
  DecisionRecord,
  Goal,
  OutOfScopeRequest,
  SessionStage,
} from '../contract/state.js';
export type { SessionView } from '../contract/queries.js';
