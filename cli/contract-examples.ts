/**
 * The worked examples of the wire contract, as data: docs/contract.md prints them and
 * test/contract.test.ts runs them, in order, against a real server, so every command in the
 * document is known to work.
 */
import { DEFAULT_TASK_QUEUE, WORKFLOW_TYPE } from '../contract/api.js';
import { workflowIdFor } from '../contract/ids.js';

/** The first message of every example Session. */
export const FIRST_MESSAGE = { messageId: 'm-1', text: 'Research ComfyUI and deliver a Markdown guide' };

export interface ExampleParams {
  sessionId: string;
  taskQueue: string;
  namespace: string;
  /** Base URL of the HTTP API, e.g. `http://localhost:7243`. */
  httpBase: string;
}

export const DOC_PARAMS: ExampleParams = {
  sessionId: 'demo',
  taskQueue: DEFAULT_TASK_QUEUE,
  namespace: 'default',
  httpBase: 'http://localhost:7243',
};

export interface CliExample {
  title: string;
  /** Arguments after `temporal` (the connection flags `--address` etc. are left to the reader). */
  args: string[];
  /** Text the command's output contains once the Session has processed the inputs before it. */
  expect: string;
}

export interface HttpExample {
  title: string;
  method: 'GET' | 'POST';
  /** Path and query string under the HTTP API base. */
  path: string;
  body?: unknown;
  expect: string;
}

/** The worked examples, in the order they are meant to run. */
export function contractExamples(p: ExampleParams = DOC_PARAMS): { cli: CliExample[]; http: HttpExample[] } {
  const id = workflowIdFor(p.sessionId);
  const json = (value: unknown) => JSON.stringify(value);
  const summary = `Session ${p.sessionId}: ${FIRST_MESSAGE.text}`;
  const secondMessage = { messageId: 'm-2', text: 'Add a section on custom nodes' };
  const thirdMessage = { messageId: 'm-3', text: 'Also cover the model manager' };
  const cli: CliExample[] = [
    {
      title: 'Send the first message, creating the Session if it does not exist (signal-with-start)',
      args: [
        'workflow',
        'signal-with-start',
        '--workflow-id',
        id,
        '--type',
        WORKFLOW_TYPE,
        '--task-queue',
        p.taskQueue,
        '--input',
        json({ sessionId: p.sessionId }),
        '--id-reuse-policy',
        'AllowDuplicateFailedOnly',
        '--static-summary',
        summary,
        '--signal-name',
        'message',
        '--signal-input',
        json(FIRST_MESSAGE),
      ],
      expect: 'RunId',
    },
    {
      title: 'Submit a message and get its seq back once it is recorded (update)',
      args: [
        'workflow',
        'update',
        'execute',
        '--workflow-id',
        id,
        '--name',
        'submit',
        '--input',
        json(secondMessage),
        '--output',
        'json',
      ],
      expect: '"seq": 2',
    },
    {
      title: 'Send another message (signal; fire and forget)',
      args: ['workflow', 'signal', '--workflow-id', id, '--name', 'message', '--input', json(thirdMessage)],
      expect: 'Signal workflow succeeded',
    },
    {
      title: 'Read the goals (query)',
      args: ['workflow', 'query', '--workflow-id', id, '--name', 'goals', '--output', 'json'],
      expect: FIRST_MESSAGE.text,
    },
    {
      title: 'Read the newest decision record (query with an argument)',
      args: [
        'workflow',
        'query',
        '--workflow-id',
        id,
        '--name',
        'decisions',
        '--input',
        json({ limit: 1 }),
        '--output',
        'json',
      ],
      expect: '"seq": 3',
    },
    {
      title: 'Find idle Sessions by their search attributes (visibility)',
      args: ['workflow', 'list', '--query', `WorkflowType = 'session' AND SessionStage = 'Idle'`],
      expect: id,
    },
    {
      title: 'Approve the tool call waiting for approval 3:1:call_7 (signal; never a task input)',
      args: [
        'workflow',
        'signal',
        '--workflow-id',
        id,
        '--name',
        'approval',
        '--input',
        json({ approvalId: '3:1:call_7', approved: true, note: 'ok to publish', approver: 'alice' }),
      ],
      expect: 'Signal workflow succeeded',
    },
    {
      title: 'Pause the Session (command signal); `resume` undoes it',
      args: [
        'workflow',
        'signal',
        '--workflow-id',
        id,
        '--name',
        'command',
        '--input',
        json({ commandId: 'c-1', name: 'pause' }),
      ],
      expect: 'Signal workflow succeeded',
    },
  ];
  const base = `/api/v1/namespaces/${p.namespace}/workflows`;
  const http: HttpExample[] = [
    {
      title: 'Send the first message, creating the Session if needed (signal-with-start)',
      method: 'POST',
      path: `${base}/${id}/signal-with-start/message`,
      body: {
        workflowType: { name: WORKFLOW_TYPE },
        taskQueue: { name: p.taskQueue },
        input: [{ sessionId: p.sessionId }],
        signalInput: [FIRST_MESSAGE],
        workflowIdReusePolicy: 'WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY',
        userMetadata: { summary, details: `First message \`${FIRST_MESSAGE.messageId}\`: ${FIRST_MESSAGE.text}` },
      },
      expect: '"runId"',
    },
    {
      title: 'Submit a message and wait for its seq (update; `meta.updateId` is required)',
      method: 'POST',
      path: `${base}/${id}/update/submit`,
      body: {
        waitPolicy: { lifecycleStage: 'UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED' },
        request: { meta: { updateId: 'u-m-2' }, input: { args: [secondMessage] } },
      },
      expect: '"seq":2',
    },
    {
      title: 'Send another message (signal)',
      method: 'POST',
      path: `${base}/${id}/signal/message`,
      body: { input: [thirdMessage] },
      expect: '{}',
    },
    {
      title: 'Read the goals (query)',
      method: 'POST',
      path: `${base}/${id}/query/goals`,
      body: {},
      expect: FIRST_MESSAGE.text,
    },
    {
      title: 'Read the newest decision record (query with an argument)',
      method: 'POST',
      path: `${base}/${id}/query/decisions`,
      body: { query: { queryArgs: [{ limit: 1 }] } },
      expect: '"seq":3',
    },
    {
      title: 'Set a new phase goal (command signal)',
      method: 'POST',
      path: `${base}/${id}/signal/command`,
      body: { input: [{ commandId: 'c-1', name: 'set-goals', args: { phase: 'Write the installation chapter' } }] },
      expect: '{}',
    },
    {
      title: 'List idle Sessions (visibility query; search attribute values are base64 `json/plain` payloads)',
      method: 'GET',
      path: `${base}?query=${encodeURIComponent(`WorkflowType = 'session' AND SessionStage = 'Idle'`)}`,
      expect: id,
    },
  ];
  return { cli, http };
}

/** A POSIX shell word for `arg`. */
export function shellQuote(arg: string): string {
  if (/^[\w@%+=:,./-]+$/.test(arg)) return arg;
  if (!arg.includes("'")) return `'${arg}'`;
  return `"${arg.replace(/(["\\$`])/g, '\\$1')}"`;
}

/** The example as a shell command: the subcommand on the first line, then one flag and its value per line. */
export function renderCliExample(example: CliExample, temporal = 'temporal'): string {
  const lines = [temporal];
  for (const arg of example.args) {
    const last = lines.length - 1;
    if (arg.startsWith('--')) lines.push(`  ${arg}`);
    else lines[last] = `${lines[last]} ${shellQuote(arg)}`;
  }
  return lines.join(' \\\n');
}

/** The example as a curl command; the body is pretty-printed inside single quotes. */
export function renderHttpExample(example: HttpExample, base: string): string {
  const lines = [
    `curl -sS${example.method === 'GET' ? '' : ` -X ${example.method}`} ${shellQuote(`${base}${example.path}`)}`,
  ];
  if (example.body !== undefined) {
    const body = JSON.stringify(example.body, null, 2);
    if (body.includes("'")) throw new Error(`example body must not contain a single quote: ${example.title}`);
    lines.push(`  -H 'content-type: application/json'`, `  -d '${body}'`);
  }
  return lines.join(' \\\n');
}

/** Copied from `decisions` after the contract test's CLI example (scripted models); refresh by hand. */
export const EXAMPLE_DECISION: unknown = {
  seq: 1,
  messageId: 'm-1',
  decision: 'initialize',
  scores: null,
  bands: null,
  degraded: null,
  diff: {
    added: ['skill:markdown-guide', 'skill:technical-research', 'toolset:comfyui', 'toolset:web-search'],
    removed: [],
    kept: [],
  },
  dropped: [],
  fallbacks: [],
  stages: [
    { stage: 'Understanding the task meaning', startedAt: 1796046167941, endedAt: 1796046167941, outcome: 'ok' },
    { stage: 'Extracting task terms', startedAt: 1796046167941, endedAt: 1796046168503, outcome: 'ok' },
    { stage: 'Discovering task capabilities', startedAt: 1796046168503, endedAt: 1796046168523, outcome: 'ok' },
    { stage: 'Orchestrating the task', startedAt: 1796046168523, endedAt: 1796046168729, outcome: 'ok' },
    { stage: 'Applying the task environment', startedAt: 1796046168729, endedAt: 1796046168729, outcome: 'ok' },
  ],
  agent: { outcome: 'replied', reason: null, startedAt: 1796046168729, endedAt: 1796046168847 },
  route: null,
};
