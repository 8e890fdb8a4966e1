/**
 * Capabilities the agent finds mid-phase, on the real server: the orchestrator leaves out the toolset
 * a step needs, and the honest scripted agent (test/support/honest-agent.ts `capabilityAgent`, which
 * knows only its request) searches with `capabilities_search`, loads what the search listed with
 * `capabilities_load` (once with the worker's policy asking for approval), and calls the loaded tool
 * in the same turn once its request offers it; `capabilities_unload` takes it away again, and the
 * per-turn cap refuses a change too many. The loaded tool is the demo catalog's external `weather`
 * toolset, answered by the `toolResult` signal as a backend would.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolPolicy } from '../capabilities/tool-policy.js';
import { approvalSignal, eventsQuery, resultUpdate, snapshotQuery, toolResultSignal } from '../contract/api.js';
import type { TurnResult } from '../contract/queries.js';
import {
  MODEL,
  decided,
  scriptedModels,
  send,
  startSession,
  startWorker,
  waitFor,
  type TestWorker,
} from './support/harness.js';
import { capabilityAgent } from './support/honest-agent.js';
import { ScriptedModelServer, type RecordedRequest } from './support/model-server.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

let server: ScriptedModelServer;
let script: RoleScript;
let worker: TestWorker;
/** A worker whose approval policy asks a person before the agent loads anything. */
let guarded: TestWorker;

beforeAll(async () => {
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  server.on(MODEL.agent, capabilityAgent);
  const models = scriptedModels(server);
  worker = await startWorker({ models });
  guarded = await startWorker({
    models,
    toolPolicy: ToolPolicy.parse(
      { rules: [{ id: 'loads-need-approval', effect: 'approve', tool: 'capabilities_load', toolset: 'builtin' }] },
      'test policy',
    ),
  });
});

afterAll(async () => {
  await worker?.stop();
  await guarded?.stop();
  await server?.close();
});

const FORECAST = 'Use get_forecast {"location":"Oslo, NO","days":2}';

/** A Session whose first input the orchestrator equips with `toolsets` (never the weather toolset). */
async function sessionWith(w: TestWorker, goal: string, toolsets: string[], settings: Record<string, unknown> = {}) {
  script.selection.set(goal, { skills: [], toolsets });
  const handle = await startSession(w, { settings });
  await send(handle, goal);
  await decided(handle, 1);
  expect((await handle.query(snapshotQuery)).capabilities.toolsets.map((c) => c.id)).toEqual(toolsets);
  return handle;
}

/** Sends an input judged `continue` and waits until its turn ends or waits for someone. */
async function turn(handle: WorkflowHandle, seq: number, text: string): Promise<TurnResult> {
  script.relevance.set(text, [0.9, 0.9]);
  await send(handle, text);
  return handle.executeUpdate(resultUpdate, { args: [{ seq, timeoutMs: 60_000 }] });
}

/** Answers the external call of `tool` the turn waits for, as the backend that runs it would. */
async function answer(handle: WorkflowHandle, tool: string, output: string): Promise<void> {
  const view = await waitFor(
    () => handle.query(snapshotQuery),
    (s) => s.pendingToolCalls.some((c) => c.tool === tool),
  );
  const call = view.pendingToolCalls.find((c) => c.tool === tool)!;
  await handle.signal(toolResultSignal, { callId: call.callId, resultId: call.resultId, output });
}

/** The agent model requests of the turn for `text`, in order. */
const requestsFor = (text: string): RecordedRequest[] =>
  server
    .requests(MODEL.agent)
    .filter((r) => [...r.messages].reverse().find((m) => m.role === 'user')?.content === text);

const toolNames = (r: RecordedRequest | undefined) => r?.tools.map((t) => t.name) ?? [];

describe('the agent finds and loads a capability mid-phase', () => {
  it('searches, loads the toolset the search listed, and calls its tool in the same turn; then unloads it', async () => {
    const handle = await sessionWith(worker, 'Find places and routes for a weekend in Oslo', ['maps']);

    expect(await turn(handle, 2, FORECAST)).toMatchObject({ status: 'waiting', outcome: 'waiting-tool' });
    await answer(handle, 'get_forecast', 'Saturday rain, Sunday sun, 12 °C.');
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2, timeoutMs: 60_000 }] });

    expect(done.record?.decision).toBe('continue');
    expect(done.record?.agent).toMatchObject({ outcome: 'replied', reply: 'Done. Saturday rain, Sunday sun, 12 °C.' });
    expect(done.record?.agent?.toolCalls.map((c) => [c.tool, c.status])).toEqual([
      ['capabilities_search', 'ok'],
      ['capabilities_load', 'ok'],
      ['get_forecast', 'ok'],
    ]);
    const [search, load] = done.record?.agent?.toolCalls ?? [];
    expect(JSON.parse(search?.arguments ?? '{}')).toEqual({ query: 'get forecast' });
    expect(JSON.parse(load?.arguments ?? '{}')).toEqual({ kind: 'toolset', id: 'weather' });
    expect(load?.result).toContain('toolset weather loaded');

    // The request before the load lacked the tool; the one after it carries it.
    const requests = requestsFor(FORECAST);
    const loadStep = requests.findIndex((r) => r.messages.at(-1)?.content.includes('"id":"weather"'));
    expect(loadStep).toBeGreaterThanOrEqual(0);
    expect(toolNames(requests[loadStep])).not.toContain('get_forecast');
    expect(toolNames(requests[loadStep + 1])).toContain('get_forecast');
    expect(toolNames(requests[0])).toEqual(
      expect.arrayContaining(['capabilities_search', 'capabilities_load', 'capabilities_unload']),
    );

    // The orchestration result stays the base; the agent's load is a revision of its own.
    const view = await handle.query(snapshotQuery);
    expect(view.capabilities.toolsets.map((c) => c.id)).toEqual(['maps', 'weather']);
    expect(view.capabilityRevisions.map((r) => [r.reason, r.seq, r.added, r.removed])).toEqual([
      ['orchestration', 1, ['toolset:maps'], []],
      ['agent', 2, ['toolset:weather'], []],
    ]);
    expect(view.capabilityRevisions[1]).toMatchObject({ revision: view.capabilities.revision, callId: load?.callId });
    const events = (await handle.query(eventsQuery, {})).events.filter((e) => e.kind === 'capabilities.changed');
    expect(events.at(-1)).toMatchObject({ added: ['toolset:weather'], reason: 'agent' });

    // Unloaded, the toolset's tools leave the very next request.
    const unload = 'We are done with the forecast: unload the weather toolset';
    const unloaded = await turn(handle, 3, unload);
    expect(unloaded.record?.agent?.toolCalls.map((c) => [c.tool, c.status])).toEqual([['capabilities_unload', 'ok']]);
    expect(toolNames(requestsFor(unload).at(-1))).not.toContain('get_forecast');
    const after = await handle.query(snapshotQuery);
    expect(after.capabilities.toolsets.map((c) => c.id)).toEqual(['maps']);
    expect(after.capabilityRevisions.at(-1)).toMatchObject({ reason: 'agent', seq: 3, removed: ['toolset:weather'] });
  });

  it('waits for approval of the load where the policy asks for it, then uses the tool in the same turn', async () => {
    const handle = await sessionWith(guarded, 'Find places and routes for a walk in Bergen', ['maps']);
    const text = 'Use get_forecast {"location":"Bergen, NO"}';

    expect(await turn(handle, 2, text)).toMatchObject({ status: 'waiting', outcome: 'waiting-approval' });
    const waiting = (await handle.query(snapshotQuery)).pendingApprovals;
    expect(waiting.map((p) => [p.tool, JSON.parse(p.arguments) as unknown])).toEqual([
      ['capabilities_load', { kind: 'toolset', id: 'weather' }],
    ]);
    // Nothing is loaded before the approval.
    expect((await handle.query(snapshotQuery)).capabilities.toolsets.map((c) => c.id)).toEqual(['maps']);

    await handle.signal(approvalSignal, {
      approvalId: waiting[0]?.approvalId,
      argumentsHash: waiting[0]?.argumentsHash,
      approved: true,
      approver: 'ops-alice',
    });
    await answer(handle, 'get_forecast', 'Showers all day.');
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2, timeoutMs: 60_000 }] });

    expect(done.record?.agent).toMatchObject({ outcome: 'replied', reply: 'Done. Showers all day.' });
    expect(done.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({ tool: 'capabilities_search', status: 'ok', approval: null }),
      expect.objectContaining({
        tool: 'capabilities_load',
        status: 'ok',
        approval: expect.objectContaining({ approved: true, by: 'ops-alice' }),
        policy: expect.objectContaining({ effect: 'approve', rule: 'loads-need-approval' }),
      }),
      expect.objectContaining({ tool: 'get_forecast', status: 'ok' }),
    ]);
    expect((await handle.query(snapshotQuery)).capabilityRevisions.at(-1)).toMatchObject({
      reason: 'agent',
      added: ['toolset:weather'],
    });
  });

  it('refuses a change over the per-turn cap, and the agent says so', async () => {
    const handle = await sessionWith(worker, 'Plan a day in Tromsø', [], { maxCapabilityChangesPerTurn: 1 });
    const text = 'Use get_forecast {"location":"Tromso, NO"} then search_places {"query":"aurora tours"}';

    expect(await turn(handle, 2, text)).toMatchObject({ status: 'waiting', outcome: 'waiting-tool' });
    await answer(handle, 'get_forecast', 'Clear skies tonight.');
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2, timeoutMs: 60_000 }] });

    expect(done.record?.agent?.toolCalls.map((c) => [c.tool, c.status])).toEqual([
      ['capabilities_search', 'ok'],
      ['capabilities_load', 'ok'],
      ['get_forecast', 'ok'],
      ['capabilities_search', 'ok'],
      ['capabilities_load', 'error'],
    ]);
    const refused = done.record?.agent?.toolCalls.at(-1);
    expect(JSON.parse(refused?.arguments ?? '{}')).toEqual({ kind: 'toolset', id: 'maps' });
    expect(refused?.result).toContain('refused: at most 1 capability loads and unloads per turn, and this turn made 1');
    expect(done.record?.agent).toMatchObject({ outcome: 'replied' });
    expect(done.record?.agent?.reply).toContain('refused: at most 1');
    const view = await handle.query(snapshotQuery);
    expect(view.capabilities.toolsets.map((c) => c.id)).toEqual(['weather']);
    expect(view.capabilityRevisions.filter((r) => r.reason === 'agent')).toHaveLength(1);
  });
});
