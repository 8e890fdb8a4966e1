/**
 * The A2A section of docs/contract.md, rendered from the gateway's own tables (gateway/a2a/executor.ts),
 * so the documented mapping is the one the gateway runs.
 */
import { TaskState } from '@a2a-js/sdk';
import { EVENT_KINDS } from '../contract/events.js';
import { TURN_OUTCOMES } from '../contract/state.js';
import { A2A_EVENT_EFFECT, TASK_STATE_OF_OUTCOME } from '../gateway/a2a/executor.js';

/** A2A's wire name of a task state, as the JSON-RPC binding sends it (`TASK_STATE_INPUT_REQUIRED`). */
const wire = (state: TaskState) => `\`${TaskState[state]}\``;

/** The section's blocks: headings, paragraphs and Markdown tables. */
export function a2aSection(table: (head: string[], rows: string[][]) => string): string[] {
  return [
    '## A2A',
    'The gateway serves each configured Session kind as an A2A agent (protocol 1.0, JSON-RPC binding, on ' +
      '`@a2a-js/sdk`): the agent card at `/.well-known/agent-card.json` (the first agent) and ' +
      '`/a2a/<agent>/.well-known/agent-card.json`, the endpoint `POST /a2a/<agent>` with the bearer token ' +
      'of a principal holding `send`. A request with no `A2A-Version` header (or 0.3) is A2A 0.3 ' +
      '(`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, states in lower case such as ' +
      '`input-required`), through the SDK’s compatibility layer. How the Session maps to it:',
    [
      '- `contextId` is the Session id (`sessionId` rules); a message without one gets a new UUID, so a new Session.',
      '- Each message (`SendMessage`, `SendStreamingMessage`) is one task input: its text parts, joined by ' +
        'newlines, are the `message` text, its `messageId` the input’s `messageId` (a resend is de-duplicated), ' +
        'its sender the principal. The task is `TASK_STATE_SUBMITTED`, then `TASK_STATE_WORKING` once `submit` ' +
        'recorded it (metadata `seq`).',
      '- A message on a task that waits is no new input: a data part `{"approval": {"approved": true|false, ' +
        '"note"?}}` answers the waiting call (the `approve` update, as a principal with `approve`); any ' +
        'message then resumes the task from the Session’s events, or says again that it waits.',
      '- `CancelTask` sends the `interrupt` command; the task ends `TASK_STATE_CANCELED`.',
      '- `GetTask` and `ListTasks` read the gateway’s in-memory task store: tasks do not outlive the gateway ' +
        'process (the Session does).',
      '- Push notifications (card `pushNotifications: true` unless `HARNESS_A2A_PUSH=off`): ' +
        '`CreateTaskPushNotificationConfig`, `GetTaskPushNotificationConfig`, `ListTaskPushNotificationConfigs`, ' +
        '`DeleteTaskPushNotificationConfig` (0.3: `tasks/pushNotificationConfig/set|get|list|delete`) and a ' +
        '`taskPushNotificationConfig` in a message’s `configuration`. Each update of the task (the events below, ' +
        'reply pieces included) is POSTed to the webhook as the SDK serialises it for the version the config was ' +
        'made with (1.0: a `StreamResponse`, `application/a2a+json`; 0.3: the bare event), in order, with the ' +
        'config’s `token` as `X-A2A-Notification-Token` or its `authentication` as `Authorization`. The URL must ' +
        'be public `http(s)` without userinfo, every address its host resolves to public, checked again on each ' +
        'connection; no redirects, 5 s per POST, at most 5 configs per task. A refused config is error -32602 ' +
        '(`push notification URL refused: <reason>`); with push off the methods answer -32003.',
      "- The other way round, a Session's agent calls remote A2A agents with `session_create_sub`'s `agent` (the worker's `HARNESS_A2A_REMOTE_AGENTS`): " +
        'one `SendMessage` per call, `messageId` `<sessionId>:<seq>:<callId>`, `returnImmediately: true`, then `GetTask` until the task is terminal, ' +
        "`input-required` or `auth-required`; the task's artifacts' text (else its status message's) is the call's result, an error result unless " +
        '`completed` (`input-required` and `auth-required` are results that say so). A call cancelled while its task works ' +
        '(an interrupted turn) sends `CancelTask` for that task.',
    ].join('\n'),
    'What each Session event does to the input’s task (events of other inputs are not shown):',
    table(
      ['Event', 'A2A'],
      EVENT_KINDS.map((kind) => [`\`${kind}\``, A2A_EVENT_EFFECT[kind]]),
    ),
    'The task state of each turn outcome:',
    table(
      ['Turn outcome', 'Task state'],
      TURN_OUTCOMES.map((outcome) => [`\`${outcome}\``, wire(TASK_STATE_OF_OUTCOME[outcome])]),
    ),
  ];
}
