/**
 * The speculative first agent step on the real server (workflows/agent/speculation.ts): the real `openai`
 * client against the scripted model server, whose relevance replies come late, and a real MCP stdio
 * server whose `read_file` tool journals every call it receives.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billableActions } from '../bench/driver.js';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import { commandSignal, eventsQuery, snapshotQuery } from '../contract/api.js';
import type { DecisionRecord } from '../contract/state.js';
import {
  MODEL,
  decided,
  scriptedModels,
  send,
  startSession,
  startWorker,
  uniqueId,
  userJson,
  type TestWorker,
} from './support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from './support/mcp-fixture.js';
import { readJournal } from './support/mcp-fixture-server.js';
import { ScriptedModelServer, type RecordedRequest, type Reply } from './support/model-server.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

const EventType = temporal.api.enums.v1.EventType;
/** How long each relevance reply is held back: the agent's early request must arrive within it. */
const RELEVANCE_DELAY_MS = 800;
const AGENT_USAGE = { prompt: 700, completion: 30 };
/** How long the agent model takes over "Read slow.log" while it may call read_file. */
const SLOW_MS = 6_000;

let dir: string;
let journal: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let worker: TestWorker;

/**
 * The agent, honest to its request: for "Read <path>" it calls the offered `read_file` tool, then
 * reports the tool's output once the request carries it; without the tool it says it cannot read.
 */
function agent(req: RecordedRequest): Reply {
  const lastUser = req.messages.map((m) => m.role).lastIndexOf('user');
  const text = (req.messages[lastUser]?.content ?? '').split('\n[resource]')[0] ?? '';
  const result = req.messages.slice(lastUser + 1).find((m) => m.role === 'tool');
  const readFile = req.tools.find((t) => t.name.endsWith('read_file'));
  const path = /^Read (\S+)/.exec(text)?.[1];
  if (result) return { content: `It says: ${result.content}`, usage: AGENT_USAGE };
  if (path && readFile) {
    const call: Reply = { toolCalls: [{ name: readFile.name, arguments: { path } }], usage: AGENT_USAGE };
    // A slow file: the model takes its time choosing the call.
    return path === 'slow.log' ? { delayMs: SLOW_MS, then: call } : call;
  }
  if (path) return { content: `No file tool is loaded, so I cannot read ${path}.`, usage: AGENT_USAGE };
  return { content: `Ready: ${text}`, usage: AGENT_USAGE };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'speculation-'));
  journal = join(dir, 'journal.log');
  const connected = await connectedCatalog({
    fixture: fixtureMcpEntry(dir, ['echo', 'add', 'read_file'], { MCP_FIXTURE_JOURNAL: journal }),
  });
  const catalog = connected.catalog;
  mcp = connected.mcp;
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  server.on(MODEL.agent, agent);
  worker = await startWorker({ models: scriptedModels(server), catalog, mcp });
});

afterAll(async () => {
  await worker?.stop();
  await mcp?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const reads = () => readJournal(journal).filter((l) => l.kind === 'ran' && l.tool === 'read_file').length;

/** The follow-up that continues the first phase: after `initialize` no step is sent ahead, after it one is. */
const FOLLOW_UP = 'Go on';

/**
 * A Session whose first input (its goal) loads the fixture's tools, then, unless `afterInitialize`,
 * a follow-up that continues its phase, then one more input judged `scores`, late.
 */
async function secondInput(
  goal: string,
  text: string,
  scores: [number, number],
  settings: Record<string, unknown> = {},
  /** Runs right after the input is sent, while its relevance reply is held back. */
  meanwhile?: (handle: WorkflowHandle) => Promise<void>,
  afterInitialize = false,
): Promise<{ handle: WorkflowHandle; record: DecisionRecord; relevance: RecordedRequest; agent: RecordedRequest[] }> {
  script.selection.set(goal, { skills: [], toolsets: ['mcp-fixture'] });
  const handle = await startSession(worker, { settings });
  await send(handle, goal);
  await decided(handle, 1);
  let seq = 2;
  if (!afterInitialize) {
    script.relevance.set(FOLLOW_UP, { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 } });
    await send(handle, FOLLOW_UP);
    expect((await decided(handle, seq++)).decision).toBe('continue');
  }
  const relevance = { json: { phaseRelevance: scores[0], sessionRelevance: scores[1] } };
  script.relevance.set(text, { delayMs: RELEVANCE_DELAY_MS, then: relevance });
  const agentBefore = server.requests(MODEL.agent).length;
  const relevanceBefore = server.requests(MODEL.relevance).length;
  await send(handle, text);
  await meanwhile?.(handle);
  const record = await decided(handle, seq);
  const judged = server.requests(MODEL.relevance).slice(relevanceBefore);
  expect(judged.map((r) => userJson<{ message: string }>(r).message)).toEqual([text]);
  return { handle, record, relevance: judged[0]!, agent: server.requests(MODEL.agent).slice(agentBefore) };
}

const offers = (req: RecordedRequest | undefined, tool: string) =>
  (req?.tools ?? []).some((t) => t.name.endsWith(tool));

/**
 * Activities and patch markers of a Session's run, and the history events and billable actions (as
 * the bench counts them) from the last input's signal on: how the Session's first input splits into
 * workflow tasks (its message may arrive in the start's first task or the next, which moves an upsert
 * and a local-activity batch) is timing, not what the last input cost.
 */
async function historyCounts(handle: WorkflowHandle) {
  const all = (await handle.fetchHistory()).events ?? [];
  let lastSignal = 0;
  all.forEach((e, i) => {
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) lastSignal = i;
  });
  const events = all.slice(lastSignal);
  const activities = all.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).length;
  const markers = all.filter(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED &&
      e.markerRecordedEventAttributes?.markerName === 'core_patch',
  ).length;
  // Workflow tasks come and go with timing (a loaded machine splits them differently); the rest of the
  // history is what the workflow did.
  const workflowTask = /^EVENT_TYPE_WORKFLOW_TASK_/;
  const done = events.filter((e) => !workflowTask.test(EventType[e.eventType ?? 0] ?? '')).length;
  return { events: done, actions: billableActions(events), activities, markers };
}

describe('the speculative first agent step', () => {
  let onCounts: Awaited<ReturnType<typeof historyCounts>>;
  let onRecord: DecisionRecord;

  it('starts the first step before relevance has answered, and on continue it is the turn’s step', async () => {
    const readsBefore = reads();
    const { handle, record, relevance, agent } = await secondInput(
      'Exercise the fixture tools: read the notes',
      'Read notes.md',
      [0.9, 0.9],
    );
    expect(record.decision).toBe('continue');
    // Sent while the relevance reply was still held back by the server.
    expect(agent[0]!.receivedAt).toBeLessThan(relevance.receivedAt + RELEVANCE_DELAY_MS);
    expect(record.speculation).toEqual({ outcome: 'adopted', reason: null });
    expect(record.agent).toMatchObject({
      outcome: 'replied',
      reply: 'It says: contents of notes.md',
      steps: 2,
      toolCalls: [{ tool: 'read_file', status: 'ok' }],
    });
    // Two model steps, as without speculation: the early step was the first, not an extra one.
    expect(agent).toHaveLength(2);
    expect(reads() - readsBefore).toBe(1);
    expect(record.usage?.byRole.agent?.calls).toBe(2);
    expect(record.usage?.speculative).toBeUndefined();
    onRecord = record;
    onCounts = await historyCounts(handle);
  });

  it('with speculativeAgentStep off, the first step waits for the decision, and the turn is the same', async () => {
    const { handle, record, relevance, agent } = await secondInput(
      'Exercise the fixture tools: read the notes',
      'Read notes.md',
      [0.9, 0.9],
      { speculativeAgentStep: false },
    );
    expect(record.decision).toBe('continue');
    expect(agent[0]!.receivedAt).toBeGreaterThanOrEqual(relevance.receivedAt + RELEVANCE_DELAY_MS - 5);
    expect(record.speculation).toBeUndefined();
    const turn = (r: DecisionRecord) => ({
      outcome: r.agent?.outcome,
      reply: r.agent?.reply,
      steps: r.agent?.steps,
      calls: r.agent?.toolCalls.map((c) => [c.tool, c.arguments, c.status, c.result]),
      agentCalls: r.usage?.byRole.agent?.calls,
    });
    expect(turn(onRecord)).toEqual(turn(record));
    // The same activities: the early step is the turn's step, not one more. Both runs ask the patch at
    // their start (the setting is read later), so markers are equal too, and from the input's signal on
    // so are billable actions and every event but the workflow tasks (an early answer may wake the
    // workflow once more, and a loaded machine splits workflow tasks differently in any run).
    const offCounts = await historyCounts(handle);
    expect(onCounts.activities).toBe(offCounts.activities);
    expect(onCounts.markers).toBe(offCounts.markers);
    expect(onCounts.actions).toBe(offCounts.actions);
    expect(onCounts.events).toBe(offCounts.events);
  });

  it('discards the step on a new phase: its tool call never runs, and its tokens count as speculative', async () => {
    const text = 'Read release.log';
    // The new phase loads no tools.
    script.selection.set(text, { skills: [], toolsets: [] });
    const readsBefore = reads();
    const { handle, record, relevance, agent } = await secondInput(
      'Exercise the fixture tools: read the changelog',
      text,
      [0.2, 0.9],
    );
    expect(record.decision).toBe('new-phase');
    expect(record.diff?.removed).toContain('toolset:mcp-fixture');
    expect(record.speculation).toEqual({ outcome: 'discarded', reason: 'decision new-phase' });

    // The early step saw the old tools and asked for read_file; it answered before the decision.
    const [early, real] = agent;
    expect(agent).toHaveLength(2);
    expect(early!.receivedAt).toBeLessThan(relevance.receivedAt + RELEVANCE_DELAY_MS);
    expect(offers(early, 'read_file')).toBe(true);
    // The real step ran in the new environment, after orchestration changed it.
    const orchestrated = server
      .requests(MODEL.orchestration)
      .filter((r) => userJson<{ task: { phaseGoal: string } }>(r).task.phaseGoal === text);
    expect(orchestrated).toHaveLength(1);
    expect(real!.receivedAt).toBeGreaterThanOrEqual(orchestrated[0]!.receivedAt);
    expect(offers(real, 'read_file')).toBe(false);

    // Nothing of the early step was used: no tool ran, no call was proposed, the reply is the real one.
    expect(reads()).toBe(readsBefore);
    expect(record.agent).toMatchObject({
      outcome: 'replied',
      reply: 'No file tool is loaded, so I cannot read release.log.',
      steps: 1,
      toolCalls: [],
    });
    const events = await handle.query(eventsQuery, { limit: 500 });
    expect(events.events.filter((e) => e.kind.startsWith('tool.'))).toEqual([]);

    // Accounting: both agent calls were spent; the early one is the speculative part.
    expect(record.usage?.byRole.agent).toMatchObject({ calls: 2, promptTokens: 1400, completionTokens: 60 });
    expect(record.usage?.speculative).toMatchObject({
      discarded: 1,
      unknown: 0,
      usage: { calls: 1, promptTokens: AGENT_USAGE.prompt, completionTokens: AGENT_USAGE.completion },
    });
    const view = await handle.query(snapshotQuery);
    expect(view.usage?.speculative?.discarded).toBe(1);
    expect(view.usage?.speculative?.usage.promptTokens).toBe(AGENT_USAGE.prompt);
  });
  it('sends nothing ahead right after initialize: a new phase there costs one agent step, and no action more', async () => {
    const text = 'Read draft.log';
    script.selection.set(text, { skills: [], toolsets: [] });
    const { handle, record, relevance, agent } = await secondInput(
      'Exercise the fixture tools: read the draft',
      text,
      [0.2, 0.9],
      {},
      undefined,
      true,
    );
    expect(record.decision).toBe('new-phase');
    expect(record.speculation).toBeUndefined();
    expect(agent).toHaveLength(1);
    expect(agent[0]!.receivedAt).toBeGreaterThanOrEqual(relevance.receivedAt + RELEVANCE_DELAY_MS - 5);
    expect(offers(agent[0], 'read_file')).toBe(false);
    expect(record.usage?.speculative).toBeUndefined();
    const events = (await handle.fetchHistory()).events ?? [];
    const scheduled = events
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
    // One agent step per input: the goal's and the new phase's; none was sent ahead and thrown away.
    expect(scheduled.filter((name) => name === 'agentStep')).toHaveLength(2);
  });

  it('cancels a discarded step that is still running, without waiting for it, and counts it as of unknown usage', async () => {
    const text = 'Read slow.log';
    script.selection.set(text, { skills: [], toolsets: [] });
    const readsBefore = reads();
    const { record, agent } = await secondInput('Exercise the fixture tools: read slowly', text, [0.2, 0.9]);
    expect(record.decision).toBe('new-phase');
    expect(record.speculation).toEqual({ outcome: 'discarded', reason: 'decision new-phase' });
    const [early, real] = agent;
    expect(offers(early, 'read_file')).toBe(true);
    // The turn ended on the real step long before the early one could have answered.
    expect(real!.receivedAt).toBeLessThan(early!.receivedAt + SLOW_MS);
    expect(record.agent?.endedAt).toBeLessThan(early!.receivedAt + SLOW_MS);
    expect(record.agent).toMatchObject({ outcome: 'replied', toolCalls: [], steps: 1 });
    expect(record.usage?.speculative).toMatchObject({ discarded: 1, unknown: 1, usage: { calls: 0 } });
    expect(record.usage?.byRole.agent?.calls).toBe(1);
    expect(reads()).toBe(readsBefore);
  });

  it('discards the step when the turn’s first request differs (set-goals while relevance ran) and runs the real one', async () => {
    const phase = 'Read the guide, chapter by chapter';
    const readsBefore = reads();
    const { record, agent } = await secondInput(
      'Exercise the fixture tools: read the guide',
      'Read guide.md',
      [0.9, 0.9],
      {},
      (handle) => handle.signal(commandSignal, { commandId: uniqueId('cmd'), name: 'set-goals', args: { phase } }),
    );
    expect(record.decision).toBe('continue');
    expect(record.speculation).toEqual({
      outcome: 'discarded',
      reason: 'the first request differed from the one sent ahead',
    });
    // The early step, the real first step (under the new phase goal) and the step after the tool.
    expect(agent).toHaveLength(3);
    expect(agent[0]!.messages[0]?.content).not.toContain(phase);
    expect(agent[1]!.messages[0]?.content).toContain(phase);
    // Only the real step's call ran.
    expect(reads() - readsBefore).toBe(1);
    expect(record.agent).toMatchObject({ outcome: 'replied', steps: 2, toolCalls: [{ tool: 'read_file' }] });
    expect(record.usage?.speculative).toMatchObject({ discarded: 1, unknown: 0 });
    expect(record.usage?.byRole.agent?.calls).toBe(3);
  });
});
