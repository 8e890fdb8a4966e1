/**
 * Every message of the `session` workflow with its zod schemas, and their JSON Schemas (zod 4's
 * `z.toJSONSchema`), which `npm run contract` writes to docs/schemas/ so a backend in any language
 * can validate what it sends and reads. The control signals come from the workflow's own
 * CONTROL_SIGNALS table; nothing here restates a schema.
 */
import { z } from 'zod';
import * as api from '../contract/api.js';
import { CONTROL_KINDS, CONTROL_SIGNALS, type ControlKind } from '../contract/control-signals.js';
import {
  CommandInput,
  MAX_TEXT_CHARS,
  MessageInput,
  ResourceRef,
  Sender,
  SessionStart,
  Recorded,
  SubSessionReply,
  SubSessionReplyResult,
  ApprovalInput,
  ApprovalResult,
  ToolResultAnswer,
  ToolResultInput,
} from '../contract/messages.js';
import {
  AgentOutcome,
  BoundInput,
  Cap,
  Capabilities,
  CapabilityDiff,
  DecisionRecord,
  Goal,
  OutOfScopeRequest,
  StageRecord,
} from '../contract/state.js';
import { GoalsResult, LimitArgument, ResultRequest, TurnResult, SessionView } from '../contract/queries.js';
import { EventsPage, EventsRequest } from '../contract/events.js';
import { FIRST_MESSAGE } from './contract-examples.js';

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
export type Spec = SignalSpec | UpdateSpec | QuerySpec;

const CONTROL_EXAMPLES: Record<ControlKind, unknown> = {
  approval: {
    approvalId: '3:1:call_7',
    approved: true,
    note: 'ok to publish',
    argumentsHash: '8a461673dfd3e8a5a08ba08c6008cacc036e278ee78f9407cd7f449709af2ef6',
    approver: 'alice',
  },
  toolResult: { callId: 'call-3', output: { status: 200 }, isError: false },
  notification: { notificationId: 'n-1', kind: 'deploy', text: 'staging was redeployed' },
  command: { commandId: 'c-1', name: 'set-goals', args: { phase: 'Write the installation chapter' } },
};

/** Every message, in the order the document presents them. */
export const SPECS: Spec[] = [
  { kind: 'signal', name: 'message', payload: MessageInput, dedupe: 'messageId', example: FIRST_MESSAGE },
  ...CONTROL_KINDS.map((kind): SignalSpec => ({
    kind: 'signal',
    name: kind,
    payload: CONTROL_SIGNALS[kind].schema,
    dedupe: CONTROL_SIGNALS[kind].idField,
    example: CONTROL_EXAMPLES[kind],
  })),
  {
    kind: 'update',
    name: 'submit',
    payload: MessageInput,
    result: Recorded,
    example: { messageId: 'm-2', text: 'Add a section on custom nodes' },
  },
  {
    kind: 'update',
    name: 'approve',
    payload: ApprovalInput,
    result: ApprovalResult,
    example: {
      approvalId: '3:1:call_7',
      approved: true,
      argumentsHash: '8a461673dfd3e8a5a08ba08c6008cacc036e278ee78f9407cd7f449709af2ef6',
      approver: 'alice',
      arguments: '{"path":"docs/install.md","branch":"draft"}',
    },
  },
  {
    kind: 'update',
    name: 'answerTool',
    payload: ToolResultInput,
    result: ToolResultAnswer,
    example: { callId: 'call-3', output: { status: 200 }, isError: false },
  },
  { kind: 'update', name: 'result', payload: ResultRequest, result: TurnResult, example: { seq: 2, timeoutMs: 30000 } },
  {
    kind: 'update',
    name: 'subSessionReply',
    payload: SubSessionReply,
    result: SubSessionReplyResult,
    example: {
      sessionId: 'research-42.sub-3f9a1c0b7d2e',
      seq: 1,
      parentSeq: 2,
      messageId: 'm-2',
      reason: 'out-of-scope',
      outcome: 'replied',
      reply: 'Light rain in Hangzhou on Friday, 18-23 °C.',
      why: null,
    },
  },
  { kind: 'query', name: 'goals', argument: null, result: GoalsResult },
  { kind: 'query', name: 'capabilities', argument: null, result: Capabilities },
  { kind: 'query', name: 'decisions', argument: LimitArgument, result: z.array(DecisionRecord) },
  { kind: 'query', name: 'snapshot', argument: null, result: SessionView },
  { kind: 'query', name: 'history', argument: LimitArgument, result: z.array(BoundInput) },
  { kind: 'query', name: 'outOfScope', argument: null, result: z.array(OutOfScopeRequest) },
  { kind: 'query', name: 'events', argument: EventsRequest, result: EventsPage },
];

/** Every signal, query and update defined in contract/api.ts, as `{ kind, name }`. */
export function definedMessages(): Array<{ kind: string; name: string }> {
  return Object.values(api).flatMap((value) => {
    if (typeof value !== 'object' || value === null || !('type' in value) || !('name' in value)) return [];
    const { type, name } = value as { type: unknown; name: unknown };
    return ['signal', 'query', 'update'].includes(String(type)) && typeof name === 'string'
      ? [{ kind: String(type), name }]
      : [];
  });
}

/** Shapes that several results share: each result file carries them under `$defs`, referenced by name. */
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
 * JSON Schema of a payload a sender produces: self-contained and closed, with the refinements zod
 * cannot express added by hand, so a non-TypeScript sender sees the rules the workflow enforces.
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
 * JSON Schema of a query or update result. Shared shapes are `$ref`s into `$defs`, and objects stay
 * open: results may gain fields, which readers must ignore.
 */
export function resultSchema(schema: z.ZodType): Record<string, unknown> {
  return tidy(z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', metadata: definitionRegistry() }), true);
}

/** Drops what only adds noise for a reader: `$schema` (files get it back), safe-integer bounds, and (for results) closed objects. */
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

/** The JSON Schema version zod 4 writes. */
const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** One file under docs/schemas/. */
export interface SchemaFile {
  /** File name, e.g. `message.json`. */
  file: string;
  /** What it describes, e.g. "the `message` signal's payload". */
  what: string;
  schema: Record<string, unknown>;
}

const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** The schema files of the start argument and of every payload, argument and result. */
export function schemaFiles(): SchemaFile[] {
  const files: SchemaFile[] = [
    {
      file: 'start-argument.json',
      what: 'the start argument of workflow type `session`',
      schema: inputSchema(SessionStart),
    },
  ];
  for (const spec of SPECS) {
    const name = kebab(spec.name);
    if (spec.kind !== 'query') {
      const what = `the \`${spec.name}\` ${spec.kind}'s payload`;
      files.push({ file: `${name}.json`, what, schema: inputSchema(spec.payload) });
    }
    if (spec.kind === 'query' && spec.argument) {
      const what = `the \`${spec.name}\` query's optional argument`;
      files.push({ file: `${name}-argument.json`, what, schema: inputSchema(spec.argument) });
    }
    if (spec.kind !== 'signal') {
      const what = `the \`${spec.name}\` ${spec.kind}'s result`;
      files.push({ file: `${name}-result.json`, what, schema: resultSchema(spec.result) });
    }
  }
  // `$schema` and `title` first: what a reader opening the file wants to see.
  return files.map((f) => ({ ...f, schema: { $schema: JSON_SCHEMA_DIALECT, title: title(f.what), ...f.schema } }));
}

/** `The message signal's payload`, for the schema's `title`. */
function title(what: string): string {
  const plain = what.replace(/`/g, '');
  return plain.charAt(0).toUpperCase() + plain.slice(1);
}

/** The file name schemaFiles() gives a message's payload, argument or result. */
export function schemaFileOf(name: string, part: 'payload' | 'argument' | 'result'): string {
  return `${kebab(name)}${part === 'payload' ? '' : `-${part}`}.json`;
}
