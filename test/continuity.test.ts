/**
 * The seed article's example with models that know only their requests (support/honest-agent.ts):
 * phase 1 writes a Markdown guide under a file name the agent chooses; phase 2, "Convert the Markdown
 * we just created to Word", is a new phase whose agent converts exactly that file, with no question
 * back, because the Session's artifacts and phase 1's hand-off are in its request. Once with the
 * compaction model answering, once with it failing (the deterministic hand-off), on the real server
 * with the doc-convert demo MCP server really writing and converting.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectedCatalog } from './support/mcp-fixture.js';
import { AGENT_DECISION_NOTES } from '../models/agent-request.js';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import { snapshotQuery } from '../contract/api.js';
import { MODEL, decided, scriptedModels, send, startSession, startWorker, type TestWorker } from './support/harness.js';
import { compactionRequestOf, honestAgent, honestCompaction } from './support/honest-agent.js';
import { ScriptedModelServer } from './support/model-server.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

const DOC_CONVERT = resolve('examples/doc-convert-mcp/server.ts');
const CONVERT = 'Convert the Markdown we just created to Word';

let dir: string;
let workspace: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let worker: TestWorker;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'continuity-'));
  workspace = join(dir, 'workspace');
  mkdirSync(workspace, { recursive: true });
  const connected = await connectedCatalog({
    'doc-convert': {
      command: process.execPath,
      args: ['--import', 'tsx', DOC_CONVERT],
      env: { DOC_CONVERT_WORKSPACE: workspace },
      description: 'Write Markdown files in the workspace and convert them to Word (.docx) and HTML.',
      tags: ['convert', 'markdown', 'word', 'docx', 'write'],
      timeoutMs: 60_000,
    },
  });
  const catalog = connected.catalog;
  mcp = connected.mcp;
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  // The agent and the compaction role know only their requests.
  server.on(MODEL.agent, honestAgent);
  server.on(MODEL.compaction, (req) =>
    compactionRequestOf(req).phaseGoal.includes('Krita') ? { status: 500 } : honestCompaction(req),
  );
  script.relevance.set(CONVERT, [0.2, 0.85]);
  script.selection.set(CONVERT, { skills: ['markdown-to-docx'], toolsets: ['mcp-doc-convert'] });
  worker = await startWorker({ models: scriptedModels(server), catalog, mcp });
});

afterAll(async () => {
  await worker?.stop();
  await mcp?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the two phases; returns what the first wrote and the Session's handle. */
async function twoPhases(research: string) {
  script.selection.set(research, { skills: ['markdown-guide'], toolsets: ['mcp-doc-convert'] });
  const handle = await startSession(worker);
  await send(handle, research);
  const first = await decided(handle, 1, 60_000);
  expect(first.agent).toMatchObject({ outcome: 'replied' });
  const [write] = first.agent?.toolCalls ?? [];
  expect(write).toMatchObject({ tool: 'write_markdown', status: 'ok' });
  // The file name is the agent's choice; the test learns it from the record, as an operator would.
  const written = (JSON.parse(write?.arguments ?? '{}') as { path: string }).path;
  expect(written).toMatch(/\.md$/);
  expect(existsSync(join(workspace, written))).toBe(true);

  const agentBefore = server.requests(MODEL.agent).length;
  const compactBefore = server.requests(MODEL.compaction).length;
  await send(handle, CONVERT);
  const second = await decided(handle, 2, 60_000);
  return {
    handle,
    written,
    second,
    agentRequests: server.requests(MODEL.agent).slice(agentBefore),
    compactions: server.requests(MODEL.compaction).slice(compactBefore),
  };
}

describe('the Session remembers its own work across phases', () => {
  it('converts exactly the file phase 1 wrote, with no question back, and its hand-off names it', async () => {
    const { handle, written, second, agentRequests, compactions } = await twoPhases(
      'Research ComfyUI and deliver a complete Markdown guide',
    );
    expect(second.decision).toBe('new-phase');
    expect(second.agent?.outcome).toBe('replied');
    expect(second.agent?.reply).not.toMatch(/\?/);
    expect(second.agent?.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'markdown_to_docx',
        status: 'ok',
        arguments: JSON.stringify({ inputPath: written }),
      }),
    ]);
    const docx = written.replace(/\.md$/, '.docx');
    expect(existsSync(join(workspace, docx))).toBe(true);
    const log = readFileSync(join(workspace, '.conversions.log'), 'utf8');
    expect(log).toContain(`\tmarkdown_to_docx\t${written}\t${docx}\t`);

    // The phase-1 hand-off came from the whole record: the compaction request held the artifact.
    const [compaction] = compactions;
    expect(compactionRequestOf(compaction!).artifacts).toEqual([
      expect.objectContaining({ uri: written, tool: 'write_markdown', seq: 1 }),
    ]);
    const view = await handle.query(snapshotQuery);
    const [phase1] = view.phase?.previous ?? [];
    expect(phase1).toMatchObject({ index: 0, compaction: 'compacted' });
    expect(phase1?.summary).toContain(written);
    expect(phase1?.summary).toMatch(/^Phase goal: Research ComfyUI and deliver a complete Markdown guide/);

    // The phase-2 agent found the file in its request: artifacts, then the hand-off, in the system message.
    // Its first step is the first request that says a new phase began; one sent ahead of the decision
    // (a speculative step, which says `continue`) was discarded.
    const systemOf = (r: (typeof agentRequests)[number]) => r.messages.find((m) => m.role === 'system')?.content ?? '';
    const firstStep = agentRequests.find((r) => systemOf(r).includes(AGENT_DECISION_NOTES['new-phase']));
    const system = firstStep ? systemOf(firstStep) : '';
    const artifactsAt = system.indexOf('Artifacts of this Session');
    const summariesAt = system.indexOf('Earlier phases of this Session');
    expect(artifactsAt).toBeGreaterThan(system.indexOf('## Skill:'));
    expect(summariesAt).toBeGreaterThan(artifactsAt);
    expect(system.slice(artifactsAt)).toContain(`- ${written} (file, from write_markdown`);

    // Both files are Session state, in snapshot(), each found in its tool's structured result.
    expect(view.artifacts).toEqual([
      expect.objectContaining({
        uri: written,
        kind: 'file',
        source: 'result',
        tool: 'write_markdown',
        seq: 1,
        phaseIndex: 0,
      }),
      expect.objectContaining({
        uri: docx,
        kind: 'file',
        source: 'result',
        tool: 'markdown_to_docx',
        seq: 2,
        phaseIndex: 1,
      }),
    ]);
  });

  it('keeps a deterministic hand-off that names the file when the compaction model fails', async () => {
    const { handle, written, second } = await twoPhases('Research Krita and deliver a complete Markdown guide');
    expect(second.fallbacks.some((f) => f.startsWith('compaction:'))).toBe(true);
    expect(second.agent?.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'markdown_to_docx',
        status: 'ok',
        arguments: JSON.stringify({ inputPath: written }),
      }),
    ]);
    const [phase1] = (await handle.query(snapshotQuery)).phase?.previous ?? [];
    expect(phase1).toMatchObject({ index: 0, compaction: 'failed' });
    expect(phase1?.summary).toContain(`- ${written} — file from write_markdown`);
  });

  it('asks back when its request names no Markdown file (the agent cannot guess)', () => {
    const reply = honestAgent({
      path: '/v1/chat/completions',
      model: MODEL.agent,
      body: {},
      headers: {},
      receivedAt: 0,
      raw: '{}',
      tools: [{ name: 'markdown_to_docx', description: '', parameters: {} }],
      messages: [
        {
          role: 'system',
          content: 'Session-wide goal: x\n\n## Skill: Guide (g)\nSave as `comfyui-getting-started.md`.',
        },
        { role: 'user', content: CONVERT },
      ],
    });
    expect(reply).toEqual({ content: expect.stringMatching(/^Which Markdown file should I convert\?/) as string });
  });
});
