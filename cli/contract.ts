/**
 * The published wire contract of the `session` workflow (docs/contract.md), generated from the
 * message definitions in workflows/api.ts and the zod schemas the workflow validates with, so the
 * document cannot drift from the code. `npm run contract` rewrites the file; a test fails when the
 * committed file differs from `renderContract()`.
 *
 * The worked examples are data (`contractExamples`), rendered here and executed by the contract
 * test against a real server, so every command in the document is known to work.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import * as api from '../workflows/api.js';
import {
  ApprovalInput,
  CommandInput,
  MAX_RESOURCES,
  MAX_TEXT_CHARS,
  MessageInput,
  NotificationInput,
  ResourceRef,
  Sender,
  SessionStart,
  SubmitResult,
  ToolResultInput,
} from '../workflows/schemas.js';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes.js';
import {
  AgentOutcome,
  BoundInput,
  Cap,
  Capabilities,
  CapabilityDiff,
  DecisionRecord,
  Goal,
  OutOfScopeRequest,
  TASK_CONTROL_STAGES,
  StageRecord,
} from '../workflows/state.js';
import { SessionView } from '../workflows/view.js';
import { isEntryPoint } from '../worker/entry-point.js';

// ---- query results --------------------------------------------------------------------------------

/** Result of `goals`. */
export const GoalsResult = z.object({ session: Goal.nullable(), phase: Goal.nullable() });

/** Result of `snapshot`: the read model, defined once in workflows/view.ts. */
export const SnapshotResult = SessionView;

const LimitArgument = z.object({ limit: z.number().int().positive().optional() }).strict();

// ---- the message table ----------------------------------------------------------------------------

type Name = keyof typeof api.DESCRIPTIONS;

interface SignalSpec {
  kind: 'signal';
  name: Name;
  payload: z.ZodType;
  /** The field that de-duplicates at-least-once delivery. */
  dedupe: string;
  example: unknown;
}
interface UpdateSpec {
  kind: 'update';
  name: Name;
  payload: z.ZodType;
  result: z.ZodType;
  example: unknown;
}
interface QuerySpec {
  kind: 'query';
  name: Name;
  argument: z.ZodType | null;
  result: z.ZodType;
}
type Spec = SignalSpec | UpdateSpec | QuerySpec;

const FIRST_MESSAGE = { messageId: 'm-1', text: 'Research ComfyUI and deliver a Markdown guide' };

export const SPECS: Spec[] = [
  { kind: 'signal', name: 'message', payload: MessageInput, dedupe: 'messageId', example: FIRST_MESSAGE },
  {
    kind: 'signal',
    name: 'approval',
    payload: ApprovalInput,
    dedupe: 'approvalId',
    example: { approvalId: 'a-7', approved: true, note: 'ok to publish' },
  },
  {
    kind: 'signal',
    name: 'toolResult',
    payload: ToolResultInput,
    dedupe: 'callId',
    example: { callId: 'call-3', output: { status: 200 }, isError: false },
  },
  {
    kind: 'signal',
    name: 'notification',
    payload: NotificationInput,
    dedupe: 'notificationId',
    example: { notificationId: 'n-1', kind: 'deploy', text: 'staging was redeployed' },
  },
  {
    kind: 'signal',
    name: 'command',
    payload: CommandInput,
    dedupe: 'commandId',
    example: { commandId: 'c-1', name: 'set-goals', args: { phase: 'Write the installation chapter' } },
  },
  {
    kind: 'update',
    name: 'submit',
    payload: MessageInput,
    result: SubmitResult,
    example: { messageId: 'm-2', text: 'Add a section on custom nodes' },
  },
  { kind: 'query', name: 'goals', argument: null, result: GoalsResult },
  { kind: 'query', name: 'capabilities', argument: null, result: Capabilities },
  { kind: 'query', name: 'decisions', argument: LimitArgument, result: z.array(DecisionRecord) },
  { kind: 'query', name: 'snapshot', argument: null, result: SnapshotResult },
  { kind: 'query', name: 'history', argument: LimitArgument, result: z.array(BoundInput) },
  { kind: 'query', name: 'outOfScope', argument: null, result: z.array(OutOfScopeRequest) },
];

/** Every signal, query and update defined in workflows/api.ts, as `{ kind, name }`. */
export function definedMessages(): Array<{ kind: string; name: string }> {
  return Object.values(api).flatMap((value) => {
    if (typeof value !== 'object' || value === null || !('type' in value) || !('name' in value)) return [];
    const { type, name } = value as { type: unknown; name: unknown };
    return ['signal', 'query', 'update'].includes(String(type)) && typeof name === 'string'
      ? [{ kind: String(type), name }]
      : [];
  });
}

// ---- JSON Schema ----------------------------------------------------------------------------------

/** Shapes that several query results share; their schemas are printed once and referenced by name. */
export const DEFINITIONS: Record<string, z.ZodType> = {
  ResourceRef,
  Sender,
  Goal,
  Cap,
  Capabilities,
  CapabilityDiff,
  StageRecord,
  AgentOutcome,
  DecisionRecord,
  BoundInput,
  OutOfScopeRequest,
};

function definitionRegistry() {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(DEFINITIONS)) registry.add(schema, { id });
  return registry;
}

/**
 * JSON Schema of a payload a sender produces: self-contained, with the refinements zod cannot
 * express added by hand, so a non-TypeScript sender sees the rules the workflow enforces.
 */
export function inputSchema(schema: z.ZodType): Record<string, unknown> {
  const out = tidy(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }), false);
  if (schema === MessageInput) {
    const props = out.properties as Record<string, Record<string, unknown>>;
    props.text = { ...props.text, maxLength: MAX_TEXT_CHARS, pattern: '\\S' };
  }
  if (schema === CommandInput) {
    const setGoals = (out.oneOf as Array<Record<string, Record<string, Record<string, unknown>>>>)[0];
    if (setGoals?.properties?.args) setGoals.properties.args.minProperties = 1;
  }
  return out;
}

/**
 * JSON Schema of a query or update result. Shared shapes are `$ref`s to the definitions section, and
 * objects stay open: results may gain fields, which readers must ignore.
 */
export function resultSchema(schema: z.ZodType): Record<string, unknown> {
  const out = tidy(
    z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', metadata: definitionRegistry() }),
    true,
  );
  delete out.$defs;
  return out;
}

/** Each shared definition's schema, keyed by name, referring to the others by `#/$defs/<name>`. */
export function definitionSchemas(): Record<string, Record<string, unknown>> {
  const all = z.toJSONSchema(definitionRegistry(), {
    io: 'output',
    unrepresentable: 'any',
    uri: (id) => `#/$defs/${id}`,
  }) as { schemas: Record<string, Record<string, unknown>> };
  return Object.fromEntries(
    Object.entries(all.schemas).map(([id, schema]) => {
      const out = tidy(schema, true);
      delete out.$id;
      return [id, out];
    }),
  );
}

/** Drops what only adds noise for a reader: `$schema`, safe-integer bounds, and (for results) closed objects. */
function tidy(value: unknown, open: boolean): Record<string, unknown> {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(node)) {
      if (key === '$schema') continue;
      if ((key === 'minimum' || key === 'maximum') && Math.abs(Number(v)) === Number.MAX_SAFE_INTEGER) continue;
      if (open && key === 'additionalProperties' && v === false) continue;
      out[key] = walk(v);
    }
    return out;
  };
  return walk(value) as Record<string, unknown>;
}

// ---- worked examples ------------------------------------------------------------------------------

export interface ExampleParams {
  sessionId: string;
  taskQueue: string;
  namespace: string;
  /** Base URL of the HTTP API, e.g. `http://localhost:7243`. */
  httpBase: string;
}

export const DOC_PARAMS: ExampleParams = {
  sessionId: 'demo',
  taskQueue: api.DEFAULT_TASK_QUEUE,
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
  const id = `session:${p.sessionId}`;
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
        api.WORKFLOW_TYPE,
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
      title: 'Approve a pending approval (signal; never a task input)',
      args: [
        'workflow',
        'signal',
        '--workflow-id',
        id,
        '--name',
        'approval',
        '--input',
        json({ approvalId: 'a-7', approved: true, note: 'ok to publish' }),
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
        workflowType: { name: api.WORKFLOW_TYPE },
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

// ---- the document ---------------------------------------------------------------------------------

export function renderContract(): string {
  const covered = new Set(SPECS.map((s) => `${s.kind}:${s.name}`));
  const missing = definedMessages().filter((m) => !covered.has(`${m.kind}:${m.name}`));
  if (missing.length > 0) {
    throw new Error(`no contract entry for ${missing.map((m) => `${m.kind} ${m.name}`).join(', ')}`);
  }
  const examples = contractExamples();
  const out: string[] = [];
  const p = (...blocks: string[]) => out.push(...blocks.flatMap((block) => [block, '']));

  p(
    '# Session wire contract',
    '<!-- Generated by `npm run contract` from workflows/api.ts and the zod schemas. Do not edit by hand. -->',
    'Everything a service in any language needs to create a Session, send it input and read its state ' +
      'through Temporal, without this repository’s client: any Temporal SDK, the `temporal` CLI or the HTTP ' +
      'API will do. Names here are public API: they change only with a migration note.',
  );

  p('## Identity');
  p(
    markdownTable(
      ['what', 'value'],
      [
        ['workflow type', code(api.WORKFLOW_TYPE)],
        ['workflow id', '`session:<sessionId>`, sessionId matching `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`'],
        ['default task queue', code(api.DEFAULT_TASK_QUEUE)],
        ['payload encoding', 'one JSON argument per message (`json/plain`, the default of every Temporal SDK)'],
        ['id reuse policy', '`AllowDuplicateFailedOnly`: a closed Session is never restarted under its id'],
        ['static summary', '`Session <sessionId>: <first goal or first message, clipped>` (one line)'],
      ],
    ),
  );
  p(
    'Create a Session with signal-with-start (signal `message`) or update-with-start (update `submit`, ' +
      'conflict policy `UseExisting`), so the first message and the start are one atomic step. The start ' +
      'argument only matters when the Session is created; for a running Session it is ignored.',
  );
  p('### Start argument', fence(inputSchema(SessionStart)));

  p('### Search attributes', 'Kept up to date by the Session; filter with them in the Web UI or any visibility query.');
  p(
    markdownTable(
      ['name', 'type', 'values'],
      Object.entries(SEARCH_ATTRIBUTES).map(([name, type]) => [code(name), type, SEARCH_ATTRIBUTE_VALUES[name] ?? '']),
    ),
  );

  p(
    '## Signals',
    'Signals are delivered at least once: each payload carries an id the Session de-duplicates on, so ' +
      're-sending after a timeout is safe. An invalid payload never fails the workflow; it is recorded as a ' +
      'rejection (see `snapshot.recentRejections`).',
  );
  for (const spec of SPECS) {
    if (spec.kind !== 'signal') continue;
    p(`### \`${spec.name}\``, api.DESCRIPTIONS[spec.name]);
    if (spec.name === 'message') {
      p(
        `Rules beyond the schema: \`text\` must contain a non-space character and be at most ${MAX_TEXT_CHARS} ` +
          `characters; at most ${MAX_RESOURCES} resources. This is the only task input; every other signal ` +
          'bypasses the relevance path.',
      );
    } else {
      p(`De-duplicated by \`${spec.dedupe}\`.`);
    }
    if (spec.name === 'command') p('`set-goals` needs at least one of `args.session`, `args.phase`.');
    p('Payload schema:', fence(inputSchema(spec.payload)), 'Example:', fence(spec.example));
  }

  p('## Updates');
  for (const spec of SPECS) {
    if (spec.kind !== 'update') continue;
    p(`### \`${spec.name}\``, api.DESCRIPTIONS[spec.name]);
    p(
      'The validator rejects an invalid payload, a closed Session or a full queue before anything reaches ' +
        'history; the update then fails with an `ApplicationFailure` of type `InvalidMessage` whose message ' +
        'names the field. A repeated `messageId` is not an error: it returns the original seq with ' +
        '`duplicate: true`.',
    );
    p(
      'Payload schema: the `message` payload above. Example:',
      fence(spec.example),
      'Result schema:',
      fence(resultSchema(spec.result)),
    );
  }

  p(
    '## Queries',
    'Queries are answered by a worker from the Session’s state, also after the Session closed. Results may ' +
      'gain fields in later versions: ignore fields you do not know. Timestamps are milliseconds since the ' +
      'epoch. `#/$defs/<Name>` refers to the shared definitions below.',
  );
  for (const spec of SPECS) {
    if (spec.kind !== 'query') continue;
    p(`### \`${spec.name}\``, api.DESCRIPTIONS[spec.name]);
    if (spec.argument) p('Argument (optional):', fence(inputSchema(spec.argument)));
    p('Result schema:', fence(resultSchema(spec.result)));
    if (spec.name === 'decisions') p('A record from a real run (scripted models):', fence(EXAMPLE_DECISION));
  }
  p(
    '### Shared definitions',
    'Stage names in decision records: ' +
      [...TASK_CONTROL_STAGES].map(code).join(', ') +
      ', then `Running the business agent` (reported in `agent`, not in `stages`); ' +
      '`Compacting the previous phase` and `Routing the request` appear when they run.',
  );
  for (const [name, schema] of Object.entries(definitionSchemas())) p(`#### \`${name}\``, fence(schema));

  p(
    '## Worked example: `temporal` CLI',
    'Against the local dev server (`npm start`). For another cluster add `--address`, `--namespace` and ' +
      '`--tls-cert-path`/`--tls-key-path` or `--api-key`. `--output json` prints results as JSON; like the ' +
      'HTTP API below, the CLI shows empty arrays in results as `null`. `test/contract.test.ts` runs these ' +
      'commands, in this order, against a real server.',
  );
  for (const example of examples.cli) p(`${example.title}:`, fence(renderCliExample(example), 'sh'));

  p(
    '## Worked example: HTTP API',
    'Temporal’s HTTP API (`temporal server start-dev --http-port`; port 7243 under `npm start`, ' +
      '`HARNESS_DEV_HTTP_PORT` changes it) takes the same JSON. Payloads use the shorthand: a JSON value ' +
      'stands for a `json/plain` payload, and results come back decoded. `test/contract.test.ts` runs these ' +
      'requests too.',
  );
  for (const example of examples.http) {
    p(`${example.title}:`, fence(renderHttpExample(example, DOC_PARAMS.httpBase), 'sh'));
  }
  p(
    'Things to know about the HTTP API:',
    [
      '- The payload shorthand turns an empty JSON array into `null`, in requests and in results. The Session ' +
        'accepts `null` for `resources`, `from` and `routed` as absent; read `null` lists in results as empty.',
      '- Add `?noPayloadShorthand` to send and receive raw payloads (`metadata.encoding` `anNvbi9wbGFpbg==` ' +
        'and base64 `data`), which keeps JSON exactly; `?pretty` indents the response.',
      '- Updates need `request.meta.updateId`; reusing one returns the first outcome instead of running again.',
      '- An unknown Session answers HTTP 404 with `{"code": 5, "message": "workflow not found for ID: ..."}`.',
    ].join('\n'),
  );
  return `${out.join('\n').trimEnd()}\n`;
}

/** Copied from `decisions` after the contract test's CLI example (scripted models); refresh by hand. */
const EXAMPLE_DECISION: unknown = {
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

const SEARCH_ATTRIBUTE_VALUES: Record<string, string> = {
  SessionStage:
    '`Understanding the task meaning` while an input is processed; `Idle`, `Paused`, `Closed` between inputs',
  SessionStatus: '`active`, `paused`, `closed`',
  SessionParent: 'parent sessionId of a sub-session',
  SessionGoal: 'the session goal, cut to 1,500 UTF-8 bytes (Temporal refuses longer values)',
};

function code(text: string): string {
  return `\`${text}\``;
}

/** A fenced block; JSON is laid out the way Prettier lays it out, so `prettier --check` leaves the file alone. */
function fence(value: unknown, lang = 'json'): string {
  const body = typeof value === 'string' && lang !== 'json' ? value : formatJson(value);
  return `\`\`\`${lang}\n${body}\n\`\`\``;
}

const WIDTH = 120;

/**
 * JSON as Prettier prints it: non-empty objects one property per line; arrays on one line when they
 * fit in the print width together with what precedes and follows them, otherwise one element per line.
 * `indent` is the indentation of the value's own lines, `used` the columns before it on its first
 * line, `tail` the characters after it (a comma).
 */
export function formatJson(value: unknown, indent = 0, used = indent, tail = 0): string {
  const pad = ' '.repeat(indent);
  const inner = ' '.repeat(indent + 2);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const oneLine = `[${value.map((v) => formatJson(v)).join(', ')}]`;
    if (!oneLine.includes('\n') && used + oneLine.length + tail <= WIDTH) return oneLine;
    const items = value.map((v, i) => inner + formatJson(v, indent + 2, indent + 2, i < value.length - 1 ? 1 : 0));
    return `[\n${items.join(',\n')}\n${pad}]`;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    if (entries.length === 0) return '{}';
    const lines = entries.map(([key, v], i) => {
      const prefix = `${JSON.stringify(key)}: `;
      const comma = i < entries.length - 1 ? 1 : 0;
      return inner + prefix + formatJson(v, indent + 2, indent + 2 + prefix.length, comma);
    });
    return `{\n${lines.join(',\n')}\n${pad}}`;
  }
  return JSON.stringify(value);
}

/** A Markdown table with columns padded the way Prettier pads them. */
function markdownTable(head: string[], rows: string[][]): string {
  const all = [head, ...rows];
  const widths = head.map((_, c) => Math.max(3, ...all.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((cell, c) => cell.padEnd(widths[c] ?? 3)).join(' | ')} |`;
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Where `npm run contract` writes the document. */
export const CONTRACT_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'contract.md');

if (isEntryPoint(import.meta.url)) {
  writeFileSync(CONTRACT_PATH, renderContract());
  process.stdout.write(`wrote ${CONTRACT_PATH}\n`);
}
