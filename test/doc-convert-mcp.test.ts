/**
 * The demo MCP server (examples/doc-convert-mcp) started from its example config as a real stdio
 * process, and the source article's Session at activity level: the scripted model calls the
 * conversion tool, agentStep resolves it, runTool really converts, and the result reaches the next
 * request paired with its call.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.js';
import { IndexedCatalog } from '../capabilities/catalog.js';
import { McpCatalog } from '../capabilities/mcp-catalog.js';
import { loadMcpConfigFile } from '../capabilities/mcp-config.js';
import { OpenAIModels } from '../models/openai-models.js';
import type {
  AgentStepRequest,
  AgentStepResult,
  RunToolRequest,
  RunToolResult,
} from '../contract/activity-contract.js';
import { ScriptedModelServer } from './support/model-server.js';

const GUIDE = `# User guide

Install with **npm** and run \`harness\`.

## Steps

1. Start the server
2. Send a message
   - wait for the reply

| option | default |
| --- | --- |
| port | 7233 |
`;

/** One file's bytes from a zip archive (a .docx is one), read through its central directory. */
function unzipEntry(zip: Buffer, name: string): string | undefined {
  for (let at = zip.indexOf('PK\u0001\u0002'); at >= 0; at = zip.indexOf('PK\u0001\u0002', at + 4)) {
    const method = zip.readUInt16LE(at + 10);
    const size = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const local = zip.readUInt32LE(at + 42);
    if (zip.toString('utf8', at + 46, at + 46 + nameLength) !== name) continue;
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(start, start + size);
    return (method === 8 ? inflateRawSync(data) : data).toString('utf8');
  }
  return undefined;
}

let workspace: string;
let mcp: McpCatalog;
let server: ScriptedModelServer;
let activities: ReturnType<typeof createActivities>;
const logger = new DefaultLogger('ERROR');
const env = () => new MockActivityEnvironment({ startToCloseTimeoutMs: 60_000 }, { logger });
const conversions = () =>
  existsSync(join(workspace, '.conversions.log'))
    ? readFileSync(join(workspace, '.conversions.log'), 'utf8').split('\n').filter(Boolean)
    : [];

function agentStep(request: AgentStepRequest): Promise<AgentStepResult> {
  type Fn = (r: AgentStepRequest) => Promise<AgentStepResult>;
  return env().run<[AgentStepRequest], AgentStepResult, Fn>((r) => activities.agentStep(r), request);
}

function runTool(request: RunToolRequest): Promise<RunToolResult> {
  type Fn = (r: RunToolRequest) => Promise<RunToolResult>;
  return env().run<[RunToolRequest], RunToolResult, Fn>((r) => activities.runTool(r), request);
}

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), 'doc-convert-'));
  writeFileSync(join(workspace, 'guide.md'), GUIDE);
  const config = loadMcpConfigFile('examples/doc-convert-mcp/mcp.json', {
    env: { ...process.env, DOC_CONVERT_WORKSPACE: workspace },
  });
  expect(config.problems).toEqual([]);
  const catalog = new IndexedCatalog();
  mcp = new McpCatalog(config.servers, { onChange: (toolsets) => catalog.replace(toolsets) });
  expect((await mcp.start()).problems).toEqual([]);
  server = await ScriptedModelServer.start();
  const models = new OpenAIModels({
    baseURL: server.baseURL,
    apiKey: 'test',
    models: { agent: 'agent' },
    jsonMode: 'json_object',
  });
  activities = createActivities({ models, catalog, mcp });
});
afterAll(async () => {
  await mcp?.close();
  await server?.close();
  rmSync(workspace, { recursive: true, force: true });
});

describe('the doc-convert demo MCP server', () => {
  it('lists its conversion tools and its Markdown writer, none of which needs approval', () => {
    const [toolset] = mcp.toolsets();
    expect(toolset).toMatchObject({ id: 'mcp-doc-convert', execution: 'mcp' });
    expect(toolset?.tools.map((t) => [t.name, t.requiresApproval])).toEqual([
      ['markdown_to_docx', false],
      ['markdown_to_html', false],
      ['write_markdown', false],
    ]);
  });

  it('converts the Markdown guide to Word when the agent calls the tool, exactly once', async () => {
    const base: AgentStepRequest = {
      sessionId: 's-doc',
      goals: { session: 'Write the user guide', phase: 'Convert the Markdown guide to Word' },
      decision: 'new-phase',
      summaries: [],
      transcript: [{ kind: 'user', seq: 2, text: 'Convert the Markdown guide to Word', resources: [] }],
      skills: [],
      toolsets: ['mcp-doc-convert'],
      memories: [],
      step: 1,
    };
    server.enqueue('agent', {
      toolCalls: [{ id: 'call_docx', name: 'markdown_to_docx', arguments: { inputPath: 'guide.md' } }],
    });

    const step = await agentStep(base);
    expect(step).toMatchObject({
      kind: 'calls',
      calls: [{ callId: 'call_docx', toolset: 'mcp-doc-convert', execution: 'mcp', argumentError: null }],
    });
    const call = step.kind === 'calls' ? step.calls[0] : undefined;
    const result = await runTool({
      sessionId: 's-doc',
      callId: 'call_docx',
      tool: call?.tool ?? '',
      toolset: call?.toolset ?? null,
      arguments: call?.arguments ?? '',
    });

    expect(result.isError).toBe(false);
    expect(result.output).toMatch(/^Wrote guide\.docx \(\d+ bytes\) from guide\.md\./);
    expect(JSON.parse(result.output.split('\n')[1] ?? '{}')).toMatchObject({ headings: 2, listItems: 3, tables: 1 });
    const docx = readFileSync(join(workspace, 'guide.docx'));
    const body = unzipEntry(docx, 'word/document.xml') ?? '';
    expect(body).toContain('User guide');
    expect(body).toContain('Send a message');
    expect(body).toContain('7233');
    expect(conversions()).toHaveLength(1);
    expect(conversions()[0]).toMatch(/\tmarkdown_to_docx\tguide\.md\tguide\.docx\t\d+\tcall_docx$/);

    server.enqueue('agent', { content: 'guide.docx is ready in the workspace.' });
    const transcript: AgentStepRequest['transcript'] = [
      ...base.transcript,
      {
        kind: 'step',
        seq: 2,
        text: null,
        calls: [{ ...(call ?? { callId: '', tool: '', arguments: '' }), status: 'ok', output: result.output }],
      },
    ];
    expect(await agentStep({ ...base, transcript, step: 2 })).toMatchObject({
      kind: 'reply',
      text: 'guide.docx is ready in the workspace.',
    });
    const sent = server.requests('agent').at(-1)?.messages ?? [];
    expect(sent.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_docx', name: 'markdown_to_docx', arguments: '{"inputPath":"guide.md"}' }],
      },
      { role: 'tool', content: result.output, toolCallId: 'call_docx' },
    ]);
    expect(conversions()).toHaveLength(1);
  });

  it('writes HTML too, and refuses a path outside the workspace without converting anything', async () => {
    const request = (args: object, tool = 'markdown_to_html'): RunToolRequest => ({
      sessionId: 's-doc',
      callId: `call-${tool}`,
      tool,
      toolset: 'mcp-doc-convert',
      arguments: JSON.stringify(args),
    });
    const before = conversions().length;

    const html = await runTool(request({ inputPath: 'guide.md', outputPath: 'out/guide.html' }));
    const escape = await runTool(request({ inputPath: '../../etc/passwd' }, 'markdown_to_docx'));

    expect(html.isError).toBe(false);
    expect(readFileSync(join(workspace, 'out/guide.html'), 'utf8')).toContain('<h1>User guide</h1>');
    expect(escape).toMatchObject({ isError: true, output: expect.stringContaining('outside the workspace') });
    expect(conversions()).toHaveLength(before + 1);
  });
});
