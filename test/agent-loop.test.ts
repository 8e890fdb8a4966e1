/**
 * The inner execution loop on the real server: a scripted OpenAI-compatible model speaking
 * tools/tool_calls, real MCP stdio servers (the doc-convert demo and a fixture with approval, slow
 * and failing tools), and the catalog's external toolsets answered by the `toolResult` signal.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import {
  approvalSignal,
  commandSignal,
  decisionsQuery,
  historyQuery,
  resultUpdate,
  snapshotQuery,
  toolResultSignal,
} from '../contract/api.js';
import { workflowIdFor } from '../contract/ids.js';
import { SessionStageKey } from '../contract/search-attributes.js';
import type { DecisionRecord } from '../contract/state.js';
import type { TurnResult } from '../contract/queries.js';
import {
  MODEL,
  decided,
  scriptedModels,
  send,
  startSession,
  startWorker,
  uniqueId,
  userJson,
  waitFor,
  type TestWorker,
} from './support/harness.js';
import { ScriptedModelServer, type RecordedRequest } from './support/model-server.js';
import { connectedCatalog, fixtureMcpEntry } from './support/mcp-fixture.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

const DOC_CONVERT = resolve('examples/doc-convert-mcp/server.ts');

let dir: string;
let workspace: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let worker: TestWorker;

const conversions = () =>
  existsSync(join(workspace, '.conversions.log'))
    ? readFileSync(join(workspace, '.conversions.log'), 'utf8').split('\n').filter(Boolean)
    : [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-loop-'));
  workspace = join(dir, 'workspace');
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, 'guide.md'), '# Guide\n\nInstall ComfyUI, then run `main.py`.\n');
  const connected = await connectedCatalog({
    fixture: fixtureMcpEntry(dir),
    'doc-convert': {
      command: process.execPath,
      args: ['--import', 'tsx', DOC_CONVERT],
      env: { DOC_CONVERT_WORKSPACE: workspace },
      description: 'Convert Markdown files in the workspace to Word (.docx) and HTML.',
      tags: ['convert', 'markdown', 'word', 'docx', 'html'],
      timeoutMs: 60_000,
    },
  });
  const catalog = connected.catalog;
  mcp = connected.mcp;
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  worker = await startWorker({ models: scriptedModels(server), catalog, mcp });
});

afterAll(async () => {
  await worker?.stop();
  await mcp?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A Session whose first input loads `toolsets` (the scripted orchestrator selects them). */
async function sessionWith(goal: string, toolsets: string[], settings: Record<string, unknown> = {}) {
  script.selection.set(goal, { skills: [], toolsets });
  const handle = await startSession(worker, { settings });
  await send(handle, goal);
  const first = await decided(handle, 1);
  expect(first.dropped).toEqual([]);
  expect((await handle.query(snapshotQuery)).capabilities.toolsets.map((c) => c.id)).toEqual(toolsets);
  return handle;
}

/** Sends an input whose turn the queued model replies drive, and waits for its result. */
async function turn(handle: WorkflowHandle, seq: number, text: string, timeoutMs = 30_000): Promise<TurnResult> {
  script.relevance.set(text, [0.9, 0.9]);
  await send(handle, text);
  return handle.executeUpdate(resultUpdate, { args: [{ seq, timeoutMs }] });
}

const agentRequests = (since: number): RecordedRequest[] => server.requests(MODEL.agent).slice(since);

describe('the agent acts inside the aligned environment', () => {
  it("converts the Markdown guide to Word in the source article's Session: the tool really runs, once", async () => {
    const goal = 'Write a Markdown guide for installing ComfyUI';
    script.selection.set(goal, { skills: ['markdown-guide'], toolsets: [] });
    // The agent is scripted by queue order here: a speculative first step (discarded on this new
    // phase) would take the first queued reply. test/speculation.test.ts covers that path.
    const handle = await startSession(worker, { settings: { speculativeAgentStep: false } });
    const wrote = 'The guide is in guide.md: installing ComfyUI step by step.';
    server.enqueue(MODEL.agent, { content: wrote });
    await send(handle, goal);
    await decided(handle, 1);

    const convert = 'Convert the Markdown guide to Word';
    script.relevance.set(convert, [0.2, 0.85]);
    script.selection.set(convert, { skills: ['markdown-guide'], toolsets: ['mcp-doc-convert'] });
    // The compaction model can only say what its request holds: the phase's input and the agent's reply.
    const compactions = server.requests(MODEL.compaction).length;
    script.summary.set(goal, (request) => {
      const { inputs, replies } = request as { inputs: string[]; replies?: string[] };
      return `Asked: ${inputs.join(' ')} Replied: ${(replies ?? []).join(' ')}`;
    });
    const before = server.requests(MODEL.agent).length;
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_docx', name: 'markdown_to_docx', arguments: { inputPath: 'guide.md' } }] },
      { content: 'Converted guide.md to guide.docx.' },
    );
    await send(handle, convert);
    const record = await decided(handle, 2);

    expect(record.decision).toBe('new-phase');
    expect(record.diff?.added).toContain('toolset:mcp-doc-convert');
    expect(record.agent).toMatchObject({ outcome: 'replied', reply: 'Converted guide.md to guide.docx.', steps: 2 });
    expect(record.agent?.toolCalls).toEqual([
      expect.objectContaining({ callId: 'call_docx', tool: 'markdown_to_docx', status: 'ok' }),
    ]);
    expect(existsSync(join(workspace, 'guide.docx'))).toBe(true);
    expect(conversions().filter((line) => line.includes('call_docx'))).toHaveLength(1);

    // The second request was assembled afresh: the earlier phase as a summary, this phase's input,
    // and the call paired with its result; the first phase's raw input is not in the window.
    const [first, second] = agentRequests(before);
    expect(first?.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['markdown_to_docx', 'session_create_sub']));
    const [compaction] = server.requests(MODEL.compaction).slice(compactions);
    expect(userJson(compaction!)).toMatchObject({ phaseGoal: goal, inputs: [goal], replies: [wrote] });
    const system = second?.messages.find((m) => m.role === 'system')?.content ?? '';
    expect(system).toContain(`Summary: Asked: ${goal} Replied: ${wrote}`);
    const roles = second?.messages.map((m) => m.role);
    expect(roles?.slice(-3)).toEqual(['user', 'assistant', 'tool']);
    expect(second?.messages.some((m) => m.content === goal)).toBe(false);
    const assistant = second?.messages.at(-2);
    const tool = second?.messages.at(-1);
    expect(assistant?.toolCalls?.map((c) => c.id)).toEqual(['call_docx']);
    expect(tool?.toolCallId).toBe('call_docx');
  });

  it('suspends a call for approval, runs it once approved, and shows a rejection to the model', async () => {
    const handle = await sessionWith('Exercise the fixture tools: echo and add numbers', ['mcp-fixture']);
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_add', name: 'add', arguments: { a: 2, b: 3 } }] },
      { content: 'The sum is 5.' },
    );
    const waiting = await turn(handle, 2, 'add 2 and 3');
    expect(waiting).toMatchObject({ status: 'waiting', outcome: 'waiting-approval' });
    const snapshot = await handle.query(snapshotQuery);
    expect(snapshot.stage).toBe('Waiting for approval');
    // Ops find Sessions waiting for a person with the SessionStage filter in the Web UI.
    const described = await handle.describe();
    expect(described.typedSearchAttributes.get(SessionStageKey)).toBe('Waiting for approval');
    expect(snapshot.pendingApprovals).toEqual([
      expect.objectContaining({
        approvalId: '2:1:call_add',
        callId: 'call_add',
        seq: 2,
        tool: 'add',
        arguments: '{"a":2,"b":3}',
      }),
    ]);
    const [pending] = snapshot.pendingApprovals;

    // A message sent while waiting is queued, judged only after the turn, and never taken as the approval.
    script.relevance.set('yes', [0.9, 0.9]);
    await send(handle, 'yes');
    await handle.signal(approvalSignal, { approvalId: 'nope', approved: true });
    const queued = await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.queueLength === 1 && s.counts.rejectedBy['unknown-id'] === 1,
    );
    expect(queued.pendingApprovals).toHaveLength(1);
    expect(queued.recentRejections.at(-1)).toMatchObject({ via: 'approval', messageId: 'nope' });

    // The model's call id alone no longer answers the call: it names no call in the Session's life.
    await handle.signal(approvalSignal, { approvalId: 'call_add', approved: true });
    await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.counts.rejectedBy['unknown-id'] === 2,
    );
    expect((await handle.query(snapshotQuery)).pendingApprovals).toHaveLength(1);

    await handle.signal(approvalSignal, {
      approvalId: pending?.approvalId,
      argumentsHash: pending?.argumentsHash,
      approved: true,
      approver: 'ops-alice',
    });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
    expect(done.status).toBe('done');
    expect(done.record?.agent).toMatchObject({ outcome: 'replied', reply: 'The sum is 5.' });
    expect(done.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        callId: 'call_add',
        status: 'ok',
        result: '5',
        approval: expect.objectContaining({ approved: true, by: 'ops-alice', note: null }),
      }),
    ]);
    const third = await decided(handle, 3);
    expect(third.decision).toBe('continue');
    const decisions = await handle.query(decisionsQuery);
    expect(decisions.map((d) => d.seq)).toEqual([1, 2, 3]);

    // A repeated approval is a recorded rejection; it changes nothing.
    await handle.signal(approvalSignal, { approvalId: pending?.approvalId, approved: true });
    await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.counts.rejectedBy['unknown-id'] === 3,
    );

    // Rejected: the tool does not run, and the model sees the rejection in the same task context.
    const before = server.requests(MODEL.agent).length;
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_add_2', name: 'add', arguments: { a: 40, b: 2 } }] },
      { content: 'Understood, I will not add them.' },
    );
    expect(await turn(handle, 4, 'add 40 and 2')).toMatchObject({ status: 'waiting' });
    await handle.signal(approvalSignal, { approvalId: '4:1:call_add_2', approved: false, note: 'not now' });
    const rejected = await handle.executeUpdate(resultUpdate, { args: [{ seq: 4 }] });
    expect(rejected.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({ callId: 'call_add_2', status: 'rejected', result: 'rejected by the user: not now' }),
    ]);
    const followUp = agentRequests(before).at(-1);
    expect(followUp?.messages.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'call_add_2' });
    expect(followUp?.messages.at(-1)?.content).toContain('rejected by the user: not now');

    // Models reuse call ids across turns: each turn's call has its own approval id.
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_add', name: 'add', arguments: { a: 1, b: 1 } }] },
      { content: 'One and one make 2.' },
    );
    expect(await turn(handle, 5, 'add 1 and 1')).toMatchObject({ status: 'waiting' });
    expect((await handle.query(snapshotQuery)).pendingApprovals.map((p) => p.approvalId)).toEqual(['5:1:call_add']);
    await handle.signal(approvalSignal, { approvalId: '5:1:call_add', approved: true });
    const reused = await handle.executeUpdate(resultUpdate, { args: [{ seq: 5 }] });
    expect(reused.record?.agent).toMatchObject({ outcome: 'replied', reply: 'One and one make 2.' });
    expect(reused.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({ callId: 'call_add', status: 'ok', result: '2' }),
    ]);
  });

  it('waits for an external tool result by call id and rejects an unknown one', async () => {
    const handle = await sessionWith('Plan a weekend trip with the weather forecast', ['weather']);
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_wx', name: 'get_forecast', arguments: { location: 'Oslo' } }] },
      { content: 'Pack a raincoat.' },
    );
    expect(await turn(handle, 2, 'what will the weather be in Oslo')).toMatchObject({
      status: 'waiting',
      outcome: 'waiting-tool',
    });
    const snapshot = await handle.query(snapshotQuery);
    expect(snapshot.stage).toBe('Waiting for a tool result');
    expect(snapshot.pendingToolCalls).toEqual([expect.objectContaining({ callId: 'call_wx', tool: 'get_forecast' })]);
    await handle.signal(toolResultSignal, { callId: 'call_unknown', output: 'sunny' });
    await handle.signal(toolResultSignal, { callId: 'call_wx', output: { rain: '80%' } });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
    expect(done.record?.agent).toMatchObject({ outcome: 'replied', reply: 'Pack a raincoat.' });
    expect(done.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({ callId: 'call_wx', status: 'ok', result: '{"rain":"80%"}' }),
    ]);
    const after = await handle.query(snapshotQuery);
    expect(after.recentRejections.at(-1)).toMatchObject({ via: 'toolResult', messageId: 'call_unknown' });
  });

  it('gives the model an error result for invalid arguments and never runs the tool', async () => {
    const handle = await sessionWith('Exercise the fixture tools: echo text', ['mcp-fixture']);
    const before = server.requests(MODEL.agent).length;
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_bad', name: 'echo', arguments: { words: 42 } }] },
      { content: 'Sorry, I sent the wrong arguments.' },
    );
    const result = await turn(handle, 2, 'echo hello');
    expect(result.record?.agent?.outcome).toBe('replied');
    expect(result.record?.agent?.toolCalls[0]).toMatchObject({ callId: 'call_bad', status: 'error' });
    expect(result.record?.agent?.toolCalls[0]?.result).toContain('invalid arguments for echo');
    const tool = agentRequests(before).at(-1)?.messages.at(-1);
    expect(tool).toMatchObject({ role: 'tool', toolCallId: 'call_bad' });
    expect(tool?.content).toContain('invalid arguments');
  });

  it('ends the turn guarded when the model repeats one failing call, or runs out of steps', async () => {
    const handle = await sessionWith('Exercise the fixture tools: fail on purpose', ['mcp-fixture'], {
      maxAgentSteps: 6,
    });
    const failing = { toolCalls: [{ name: 'fail', arguments: { reason: 'disk full' } }] };
    server.enqueue(MODEL.agent, failing, failing, failing);
    const guarded = await turn(handle, 2, 'try the failing tool');
    expect(guarded.record?.agent).toMatchObject({ outcome: 'guarded', steps: 3, reply: null });
    expect(guarded.record?.agent?.reason).toContain('failed 3 times in a row');

    const echo = (i: number) => ({ toolCalls: [{ name: 'echo', arguments: { text: `step ${i}` } }] });
    server.enqueue(MODEL.agent, ...Array.from({ length: 6 }, (_, i) => echo(i)));
    const limited = await turn(handle, 3, 'keep echoing');
    expect(limited.record?.agent).toMatchObject({ outcome: 'guarded', steps: 6, reply: null });
    expect(limited.record?.agent?.reason).toContain('step limit of 6');
  });

  it('is interrupted during a slow model step and during a slow tool; the next input proceeds', async () => {
    const handle = await sessionWith('Exercise the fixture tools: sleep', ['mcp-fixture']);
    server.enqueue(MODEL.agent, { delayMs: 60_000, then: { content: 'too late' } });
    script.relevance.set('think slowly', [0.9, 0.9]);
    await send(handle, 'think slowly');
    await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.turn?.seq === 2 && s.stage === 'Running the agent',
    );
    await handle.signal(commandSignal, { commandId: uniqueId('c'), name: 'interrupt' });
    const stopped = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
    expect(stopped.record?.agent).toMatchObject({ outcome: 'interrupted', reply: null });

    const marker = join(dir, `sleep-${uniqueId('m')}`);
    server.enqueue(MODEL.agent, { toolCalls: [{ id: 'call_sleep', name: 'sleep', arguments: { marker } }] });
    script.relevance.set('sleep for a while', [0.9, 0.9]);
    await send(handle, 'sleep for a while');
    // Interrupt once the MCP server runs the call (its marker says `started`): interrupted earlier,
    // the request may never reach the server, which then has nothing to abort.
    await waitFor(
      () => Promise.resolve(existsSync(marker) && readFileSync(marker, 'utf8')),
      (content) => content === 'started',
    );
    await handle.signal(commandSignal, { commandId: uniqueId('c'), name: 'interrupt' });
    const cut = await handle.executeUpdate(resultUpdate, { args: [{ seq: 3 }] });
    expect(cut.record?.agent).toMatchObject({ outcome: 'interrupted' });
    expect(cut.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({ callId: 'call_sleep', status: 'interrupted' }),
    ]);
    // The activity's cancellation reached the MCP server, which aborted the call.
    await waitFor(
      () => Promise.resolve(existsSync(marker) && readFileSync(marker, 'utf8')),
      (content) => content === 'cancelled',
    );

    server.enqueue(MODEL.agent, { content: 'Back to work.' });
    const next = await turn(handle, 4, 'carry on');
    expect(next.record?.agent).toMatchObject({ outcome: 'replied', reply: 'Back to work.' });
  });

  it('creates a sub-session when the agent calls session_create_sub', async () => {
    const handle = await sessionWith('Exercise the fixture tools: echo and delegate research', ['mcp-fixture']);
    server.enqueue(
      MODEL.agent,
      {
        toolCalls: [
          { id: 'call_sub', name: 'session_create_sub', arguments: { text: 'Research competitor pricing for Q3' } },
        ],
      },
      { content: 'Delegated the pricing research.' },
    );
    script.selection.set('delegate the pricing research', { skills: [], toolsets: [] });
    const result = await turn(handle, 2, 'delegate the pricing research');
    const call = result.record?.agent?.toolCalls[0];
    expect(call).toMatchObject({ callId: 'call_sub', tool: 'session_create_sub', status: 'ok' });
    const { sessionId } = JSON.parse(call?.result ?? '{}') as { sessionId: string };
    const child = worker.client.workflow.getHandle(workflowIdFor(sessionId));
    const first: DecisionRecord = await decided(child, 1);
    expect(first.decision).toBe('initialize');
    const childSnapshot = await child.query(snapshotQuery);
    expect(childSnapshot.parentSessionId).toBe(handle.workflowId.slice('session:'.length));
    // The user's words go over verbatim; the agent's own text travels beside them as a note.
    expect(childSnapshot.goals.session?.text).toBe('delegate the pricing research');
    const [handed] = await child.query(historyQuery);
    expect(handed).toMatchObject({ messageId: 'tool:2:call_sub', note: 'Research competitor pricing for Q3' });
    expect((await handle.query(snapshotQuery)).children.map((c) => c.sessionId)).toContain(sessionId);
  });
});

describe('the context window', () => {
  it('compacts a window over agentContextBytes down to half of it, not again at every input', async () => {
    const goal = 'Draft the onboarding handbook chapter by chapter';
    const handle = await sessionWith(goal, [], { agentContextBytes: 8_192 });
    const compactions = () =>
      server.requests(MODEL.compaction).filter((r) => userJson<{ phaseGoal?: string }>(r).phaseGoal === goal).length;
    const steps: RecordedRequest[] = [];
    for (let seq = 2; seq <= 15; seq++) {
      const before = server.requests(MODEL.agent).length;
      // About 1 KB of transcript per input: the text and the scripted echo of it.
      const text = `Chapter ${seq}: ${'add detail on the team rituals and the tools we use. '.repeat(9)}`;
      expect(await turn(handle, seq, text)).toMatchObject({ status: 'done', outcome: 'replied' });
      steps.push(...agentRequests(before));
    }
    // The window passes 8 KB after about 7 inputs; compacting only what was over budget then called
    // the compaction model at each of the remaining 7 inputs. Down to 4 KB, it is about every 4th.
    expect(compactions()).toBeGreaterThanOrEqual(1);
    expect(compactions()).toBeLessThanOrEqual(3);
    const last = steps.at(-1)!;
    expect(last.messages.some((m) => m.content?.startsWith('[Summary of the earlier conversation]'))).toBe(true);
    const record = (await handle.query(decisionsQuery)).at(-1);
    expect(record?.fallbacks).toEqual([]);
  });
});
