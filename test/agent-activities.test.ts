/**
 * The inner loop's activities inside the SDK's activity test harness (MockActivityEnvironment), over
 * real parts: the scripted OpenAI-compatible server, the MCP fixture as a stdio process, the demo
 * catalog and a SQLite memory store.
 */
import { FAILURE } from '../contract/failures.js';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.js';
import { IndexedCatalog } from '../capabilities/catalog.js';
import { loadCatalogDir } from '../capabilities/catalog-files.js';
import { McpCatalog } from '../capabilities/mcp-catalog.js';
import { parseMcpConfig } from '../capabilities/mcp-config.js';
import { withMcpToolsets } from '../capabilities/mcp-toolsets.js';
import { MemoryStore } from '../capabilities/memory-store.js';
import { LocalModels } from '../models/local-models.js';
import { OpenAIModels } from '../models/openai-models.js';
import {
  type AgentStepRequest,
  type AgentStepResult,
  type RunToolRequest,
  type RunToolResult,
} from '../contract/activity-contract.js';
import { TOOL_OUTPUT_BYTES } from '../contract/transcript.js';
import { faults, ScriptedModelServer } from './support/model-server.js';

const FIXTURE = resolve('test/support/mcp-fixture-server.ts');
const AGENT = 'agent-model';

let dir: string;
let server: ScriptedModelServer;
let mcp: McpCatalog;
let catalog: IndexedCatalog;
let store: MemoryStore;
let activities: Activities;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-activities-'));
  const control = join(dir, 'tools.json');
  const tools = ['echo', 'add', 'sleep', 'repeat', 'fail'].map((name) => ({ name, description: `The ${name} tool.` }));
  writeFileSync(control, JSON.stringify({ tools }));
  const { servers, problems } = parseMcpConfig(
    {
      mcpServers: {
        fixture: {
          command: process.execPath,
          args: ['--import', 'tsx', FIXTURE],
          env: { MCP_FIXTURE_CONTROL: control },
          approvalRequired: ['add'],
          timeoutMs: 30_000,
        },
      },
    },
    'mcp.json',
  );
  expect(problems).toEqual([]);
  const base = loadCatalogDir('catalog').entries;
  catalog = new IndexedCatalog(base);
  mcp = new McpCatalog(servers, { onChange: (toolsets) => catalog.replace(withMcpToolsets(base, toolsets).entries) });
  const report = await mcp.start();
  expect(report.problems).toEqual([]);
  store = MemoryStore.open(join(dir, 'memory.db'));
  server = await ScriptedModelServer.start();
  const models = new OpenAIModels({
    baseURL: server.baseURL,
    apiKey: 'test',
    models: { agent: AGENT },
    jsonMode: 'json_object',
  });
  activities = createActivities({ models, catalog, memories: store, mcp, heartbeatEveryMs: 50 });
});
afterAll(async () => {
  await mcp?.close();
  await server?.close();
  store?.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => server.reset());

// Activity failures are the point of several tests; keep the harness's log to errors.
const logger = new DefaultLogger('ERROR');
const environment = (info: { heartbeatTimeoutMs?: number } = {}) =>
  new MockActivityEnvironment({ startToCloseTimeoutMs: 30_000, ...info }, { logger });

type Activities = ReturnType<typeof createActivities>;
type StepFn = (request: AgentStepRequest) => Promise<AgentStepResult>;
type ToolFn = (request: RunToolRequest) => Promise<RunToolResult>;

/** agentStep in a fresh harness. */
function agentStep(request: AgentStepRequest, acts: Activities = activities): Promise<AgentStepResult> {
  return environment().run<[AgentStepRequest], AgentStepResult, StepFn>((r) => acts.agentStep(r), request);
}

/** runTool in `env` (a fresh harness unless given). */
function runTool(request: RunToolRequest, env = environment()): Promise<RunToolResult> {
  return env.run<[RunToolRequest], RunToolResult, ToolFn>((r) => activities.runTool(r), request);
}

function stepRequest(overrides: Partial<AgentStepRequest> = {}): AgentStepRequest {
  return {
    sessionId: 's-1',
    goals: { session: 'Write the user guide and ship it as Word', phase: 'Convert the Markdown guide to Word' },
    decision: 'new-phase',
    summaries: [{ phaseIndex: 1, goal: 'Draft the guide', summary: 'The guide was drafted in guide.md.' }],
    transcript: [
      { kind: 'user', seq: 1, text: 'Draft the guide', resources: [] },
      { kind: 'reply', seq: 1, text: 'Drafted guide.md.' },
      {
        kind: 'user',
        seq: 2,
        text: 'Convert the Markdown guide to Word',
        resources: [{ uri: 'file:///ws/guide.md', title: 'guide' }],
      },
      {
        kind: 'step',
        seq: 2,
        text: 'Checking first.',
        calls: [
          { callId: 'call_prev', tool: 'echo', arguments: '{"text":"ping"}', status: 'ok', output: 'ping' },
          {
            callId: 'call_rej',
            tool: 'add',
            arguments: '{"a":1,"b":2}',
            status: 'rejected',
            output: 'rejected by the user: no',
          },
        ],
      },
    ],
    skills: ['markdown-to-docx'],
    toolsets: ['mcp-fixture', 'doc-convert'],
    memories: [],
    step: 2,
    ...overrides,
  };
}

describe('agentStep', () => {
  it('resolves each call: mcp, builtin, external or unknown, with approval and argument errors', async () => {
    server.enqueue(AGENT, {
      toolCalls: [
        { id: 'c1', name: 'echo', arguments: { text: 'hi' } },
        { id: 'c2', name: 'add', arguments: { a: 'one', b: 2 } },
        { id: 'c3', name: 'memory_save', arguments: { text: 'The user prefers A4 paper.' } },
        { id: 'c4', name: 'markdown_to_docx', arguments: { inputPath: 'guide.md' } },
        { id: 'c5', name: 'teleport', arguments: {} },
        { id: 'c6', name: 'echo', arguments: '{"text":' },
      ],
    });

    const result = await agentStep(stepRequest());

    expect(result.kind).toBe('calls');
    const calls = result.kind === 'calls' ? result.calls : [];
    expect(calls.map((c) => [c.callId, c.tool, c.toolset, c.execution, c.requiresApproval])).toEqual([
      ['c1', 'echo', 'mcp-fixture', 'mcp', false],
      ['c2', 'add', 'mcp-fixture', 'mcp', true],
      ['c3', 'memory_save', null, 'builtin', false],
      ['c4', 'markdown_to_docx', 'doc-convert', 'external', false],
      ['c5', 'teleport', null, 'unknown', false],
      ['c6', 'echo', 'mcp-fixture', 'mcp', false],
    ]);
    expect(calls.map((c) => c.argumentError === null)).toEqual([true, false, true, true, true, false]);
    expect(calls[1]?.argumentError).toMatch(/arguments\/a must be number/);
    expect(calls[5]?.argumentError).toMatch(/not valid JSON/);
    expect(calls[0]?.arguments).toBe('{"text":"hi"}');
  });

  it("reads only memories of the Session's own scope or its user's, whatever ids the request names", async () => {
    const own = store.add({ text: 'Own session note: drafts live in drafts/.', scope: { sessionId: 's-1' } });
    const mine = store.add({ text: 'Alice signs as A. Lovelace.', scope: { userId: 'alice' } });
    const other = store.add({ text: 'Other session secret: the vault code is 4711.', scope: { sessionId: 's-2' } });
    const theirs = store.add({ text: 'Bob keeps his token in bob.env.', scope: { userId: 'bob' } });
    server.enqueue(AGENT, { content: 'ok' });

    await agentStep(stepRequest({ userId: 'alice', memories: [own.id, mine.id, other.id, theirs.id] }));

    const [request] = server.requests(AGENT);
    const text = JSON.stringify(request?.messages);
    expect(text).toContain('drafts live in drafts/');
    expect(text).toContain('A. Lovelace');
    // Sequential ids named in state are not proof of ownership: these are refused, not read.
    expect(text).not.toContain('4711');
    expect(text).not.toContain('bob.env');
  });

  it('sends goals, decision, summaries, skills, memories, the paired transcript and the tool schemas', async () => {
    const memory = store.add({ text: 'The user prefers A4 paper for every document.', scope: { sessionId: 's-1' } });
    server.enqueue(AGENT, { content: 'Done: guide.docx is ready.' });

    const result = await agentStep(stepRequest({ memories: [memory.id] }));

    // The step reports what it used: the scripted server's usage block, under the requested model.
    expect(result).toEqual({
      kind: 'reply',
      text: 'Done: guide.docx is ready.',
      usage: expect.objectContaining({ model: AGENT, cachedTokens: 0, reasoningTokens: 0, costUsd: null }),
    });
    expect(result.kind === 'reply' && result.usage?.promptTokens).toBeGreaterThan(0);
    const [request] = server.requests(AGENT);
    const [system, ...rest] = request?.messages ?? [];
    expect(system?.role).toBe('system');
    for (const fact of [
      'Session-wide goal: Write the user guide and ship it as Word',
      'Current phase goal: Convert the Markdown guide to Word',
      '"new-phase"',
      '### Phase 1 (goal: Draft the guide)\nThe guide was drafted in guide.md.',
      '## Skill: Convert Markdown to Word (DOCX) (markdown-to-docx)',
      'Locate the source `.md` in the workspace',
    ]) {
      expect(system?.content).toContain(fact);
    }
    // The memory is data in a message of its own, never system text.
    expect(system?.content).not.toContain('A4 paper');
    const [memories, ...conversation] = rest;
    expect(memories?.role).toBe('user');
    expect(memories?.content).toContain('"text": "The user prefers A4 paper for every document."');
    expect(conversation).toEqual([
      { role: 'user', content: 'Draft the guide' },
      { role: 'assistant', content: 'Drafted guide.md.' },
      { role: 'user', content: 'Convert the Markdown guide to Word\n[resource] guide file:///ws/guide.md' },
      {
        role: 'assistant',
        content: 'Checking first.',
        toolCalls: [
          { id: 'call_prev', name: 'echo', arguments: '{"text":"ping"}' },
          { id: 'call_rej', name: 'add', arguments: '{"a":1,"b":2}' },
        ],
      },
      { role: 'tool', content: 'ping', toolCallId: 'call_prev' },
      { role: 'tool', content: '[rejected] rejected by the user: no', toolCallId: 'call_rej' },
    ]);
    const tools = new Map(request?.tools.map((t) => [t.name, t]));
    // Sorted by name: providers cache the tools parameter as part of the prompt prefix.
    // The capabilities_* built-ins let the agent find and load what the orchestrator did not pick.
    expect([...tools.keys()]).toEqual([
      'add',
      'capabilities_load',
      'capabilities_search',
      'capabilities_unload',
      'docx_to_markdown',
      'echo',
      'fail',
      'markdown_to_docx',
      'markdown_to_pdf',
      'markdown_to_pptx',
      'memory_save',
      'repeat',
      'session_create_sub',
      'sleep',
    ]);
    expect(tools.get('echo')?.parameters).toMatchObject({ type: 'object', required: ['text'] });
    expect(tools.get('add')?.description).toContain('(requires approval)');
    expect(tools.get('markdown_to_docx')?.parameters).toMatchObject({ required: ['inputPath'] });
    expect(tools.get('session_create_sub')?.parameters).toMatchObject({ required: ['text'] });
  });

  it('maps model failures to typed failures: 5xx retryable, an empty answer invalid and final', async () => {
    server.enqueue(AGENT, faults.serverError(), { content: '' });

    const serverError = await agentStep(stepRequest()).catch((e: unknown) => e);
    const empty = await agentStep(stepRequest()).catch((e: unknown) => e);

    expect(serverError).toBeInstanceOf(ApplicationFailure);
    expect(serverError).toMatchObject({ type: FAILURE.ModelServerError, nonRetryable: false });
    expect(empty).toBeInstanceOf(ApplicationFailure);
    expect(empty).toMatchObject({ type: FAILURE.ModelInvalidOutput, nonRetryable: true });
  });

  it('is skipped, with one clear sentence, by the offline provider', async () => {
    const offline = createActivities({ models: new LocalModels(), catalog });
    const result = await agentStep(stepRequest(), offline);
    expect(result).toEqual({
      kind: 'skipped',
      reason: expect.stringMatching(/^The local provider has no agent model/),
    });
  });
});

const toolRequest = (tool: string, args: unknown, toolset: string | null = 'mcp-fixture'): RunToolRequest => ({
  sessionId: 's-1',
  callId: `call-${tool}`,
  tool,
  toolset,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
});

describe('runTool', () => {
  it('runs an MCP tool through the live connection, and reports its isError result', async () => {
    const ok = await runTool(toolRequest('echo', { text: 'hello there' }));
    const failed = await runTool(toolRequest('fail', { reason: 'disk full' }));

    expect(ok).toEqual({ output: 'hello there', isError: false });
    expect(failed).toEqual({ output: 'disk full', isError: true });
  });

  it('clips long output to TOOL_OUTPUT_BYTES and says how much was cut', async () => {
    const result = await runTool(toolRequest('repeat', { text: 'ab', times: 10_000 }));

    expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(TOOL_OUTPUT_BYTES);
    const match = /\n…\[clipped: (\d+) bytes\]$/.exec(result.output);
    expect(match).not.toBeNull();
    const kept = result.output.slice(0, match?.index);
    expect(kept).toMatch(/^(ab)+a?$/);
    expect(kept.length + Number(match?.[1])).toBe(20_000);
  });

  it('heartbeats while the tool runs, and cancellation aborts the MCP request', async () => {
    const marker = join(dir, 'sleep-cancelled');
    const env = environment({ heartbeatTimeoutMs: 300 });
    const running = runTool(toolRequest('sleep', { marker }), env);
    const outcome = running.catch((e: unknown) => e);

    await once(env, 'heartbeat');
    // Cancel only once the server runs the call: a cancel before the request goes out is never seen there.
    await expect.poll(() => existsSync(marker) && readFileSync(marker, 'utf8'), { timeout: 30_000 }).toBe('started');
    env.cancel();

    expect(await outcome).toBeInstanceOf(CancelledFailure);
    await expect.poll(() => existsSync(marker) && readFileSync(marker, 'utf8'), { timeout: 10_000 }).toBe('cancelled');
  });

  it('turns a tool that outlasts its time bound into an error result the model sees', async () => {
    const marker = join(dir, 'sleep-timed-out');
    // A one-second attempt bounds the call below the server entry's own timeout.
    const env = new MockActivityEnvironment({ startToCloseTimeoutMs: 1_000 }, { logger });

    const result = await runTool(toolRequest('sleep', { marker }), env);

    expect(result).toMatchObject({ isError: true, output: expect.stringContaining('may or may not have finished') });
    await expect.poll(() => existsSync(marker) && readFileSync(marker, 'utf8'), { timeout: 10_000 }).toBe('cancelled');
  });

  it('memory_save writes a memory scoped to the Session or the user', async () => {
    const session = await runTool(toolRequest('memory_save', { text: 'Deliverables go to the shared drive.' }, null));
    const user = await runTool({
      ...toolRequest('memory_save', { text: 'Ada writes in British English.', scope: 'user' }, null),
      userId: 'ada',
    });
    const noUser = await runTool(toolRequest('memory_save', { text: 'x', scope: 'user' }, null));

    const id = (text: string) => /Saved memory (\d+)/.exec(text)?.[1] ?? '';
    expect(session).toEqual({ output: expect.stringContaining('(scope session:s-1)'), isError: false });
    expect(store.get(id(session.output))).toMatchObject({
      text: 'Deliverables go to the shared drive.',
      scope: { sessionId: 's-1' },
    });
    expect(store.get(id(user.output))).toMatchObject({
      text: 'Ada writes in British English.',
      scope: { userId: 'ada' },
    });
    expect(noUser).toMatchObject({ isError: true, output: expect.stringContaining('no user id') });
  });

  it('answers an unknown toolset, an external toolset and session_create_sub with error results', async () => {
    const unknown = await runTool(toolRequest('echo', { text: 'x' }, 'mcp-nowhere'));
    const external = await runTool(toolRequest('markdown_to_docx', { inputPath: 'a.md' }, 'doc-convert'));
    const sub = await runTool(toolRequest('session_create_sub', { text: 'x' }, null));

    expect(unknown).toMatchObject({ isError: true, output: expect.stringContaining('no MCP server is configured') });
    expect(external).toMatchObject({ isError: true, output: expect.stringContaining('backend service') });
    expect(sub).toMatchObject({ isError: true, output: expect.stringContaining('Session workflow') });
  });
});
