/**
 * Trust boundary (issue 32, item 2): every control item is checked against the worker's configuration
 * at the time it is checked, not the one a run asked at its start. Before, a Session started before
 * signing was turned on kept accepting unsigned approvals after the restart with keys (until it
 * continued as new), a key rotation stranded a waiting approval, a signature with `expiresAt`
 * 8.64e15 was accepted, and a signed `resume` copied from history undid a later `pause`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IndexedCatalog } from '../../capabilities/catalog.js';
import type { McpCatalog } from '../../capabilities/mcp-catalog.js';
import { SessionClient } from '../../client/session-client.js';
import { approvalSignal, commandSignal, notificationSignal, resultUpdate, snapshotQuery } from '../../contract/api.js';
import { signControl, type ControlKey } from '../../contract/control-signature.js';
import type { SessionView, TurnResult } from '../../contract/queries.js';
import type { RoleModels } from '../../models/roles.js';
import {
  MODEL,
  decided,
  scriptedModels,
  send,
  startSession,
  startWorker,
  uniqueId,
  waitFor,
  type TestWorker,
} from '../support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from '../support/mcp-fixture.js';
import { readJournal } from '../support/mcp-fixture-server.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { scriptRoles, type RoleScript } from '../support/scripted-roles.js';

const k1: ControlKey = { id: 'ops-k1', secret: randomBytes(32) };
const k2: ControlKey = { id: 'ops-k2', secret: randomBytes(32) };

let dir: string;
let journal: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let catalog: IndexedCatalog;
let models: RoleModels;
let signed: TestWorker;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'current-control-'));
  journal = join(dir, 'journal.log');
  ({ catalog, mcp } = await connectedCatalog({
    fixture: fixtureMcpEntry(dir, ['echo', 'add'], { MCP_FIXTURE_JOURNAL: journal }),
  }));
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  models = scriptedModels(server);
  signed = await startWorker({ models, catalog, mcp, policy: { controlKeys: [k1] } });
});

afterAll(async () => {
  await signed?.stop();
  await mcp?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const view = (handle: WorkflowHandle): Promise<SessionView> => handle.query(snapshotQuery);
const idOf = (handle: WorkflowHandle) => handle.workflowId.slice('session:'.length);
const refusals = (v: SessionView) => v.counts.rejectedBy['unauthenticated'] ?? 0;
const ranAdds = () => readJournal(journal).flatMap((l) => (l.kind === 'ran' && l.tool === 'add' ? [l.key] : []));

/** A Session whose turn 2 waits for approval of `add(a, b)`. */
async function waitingSession(w: TestWorker, a: number, b: number): Promise<WorkflowHandle> {
  const goal = `Exercise the fixture tools: add ${a} and ${b} (current keys)`;
  script.selection.set(goal, { skills: [], toolsets: ['mcp-fixture'] });
  const handle = await startSession(w);
  await send(handle, goal);
  await decided(handle, 1);
  const text = `now add ${a} and ${b} (current keys)`;
  script.relevance.set(text, [0.9, 0.9]);
  server.enqueue(
    MODEL.agent,
    { toolCalls: [{ id: 'call_1', name: 'add', arguments: { a, b } }] },
    { content: `The sum is ${a + b}.` },
  );
  await send(handle, text);
  const waiting: TurnResult = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2, timeoutMs: 30_000 }] });
  expect(waiting).toMatchObject({ status: 'waiting', outcome: 'waiting-approval' });
  return handle;
}

/** Stops `before` and starts a worker with `policy` on the same task queue: a restart with new configuration. */
async function restart(before: TestWorker, policy: { controlKeys?: ControlKey[] }): Promise<TestWorker> {
  await before.stop();
  return startWorker({ models, catalog, mcp, taskQueue: before.taskQueue, policy });
}

describe("the worker's configuration at check time", () => {
  it('a Session started before signing was turned on refuses unsigned control after the restart with keys', async () => {
    const open = await startWorker({ models, catalog, mcp });
    const sessionId = idOf(await waitingSession(open, 20, 22));
    const keyed = await restart(open, { controlKeys: [k1] });
    // The stopped worker's client is closed with it.
    const handle = keyed.client.workflow.getHandle(`session:${sessionId}`);
    try {
      await handle.signal(approvalSignal, { approvalId: '2:1:call_1', approved: true, approver: 'mallory' });
      await handle.signal(commandSignal, { commandId: 'pause-unsigned', name: 'pause' });
      const refused = await waitFor(
        () => view(handle),
        (v) => refusals(v) === 2,
      );
      expect(refused.recentRejections.slice(-2).map((r) => r.reason)).toEqual([
        'unsigned approval: this worker accepts only signed control (HARNESS_CONTROL_KEYS)',
        'unsigned command: this worker accepts only signed control (HARNESS_CONTROL_KEYS)',
      ]);
      expect(refused.status).toBe('active');
      expect(refused.run).toBe(1);
      expect(refused.pendingApprovals.map((p) => p.approvalId)).toEqual(['2:1:call_1']);
      expect(ranAdds()).not.toContain(`${sessionId}:2:call_1`);

      const client = new SessionClient(keyed.client, { taskQueue: keyed.taskQueue, controlKey: k1 });
      await client.approve(sessionId, '2:1:call_1', { approver: 'alice' });
      const done = await waitFor(
        () => handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] }),
        (r) => r.status === 'done',
      );
      expect(done.record?.agent?.toolCalls[0]).toMatchObject({ status: 'ok', result: '42' });
    } finally {
      await keyed.stop();
    }
  });

  it('a key rotation (k1 to k2) does not strand a waiting approval', async () => {
    const before = await startWorker({ models, catalog, mcp, policy: { controlKeys: [k1] } });
    const sessionId = idOf(await waitingSession(before, 5, 6));
    const rotated = await restart(before, { controlKeys: [k2] });
    const handle = rotated.client.workflow.getHandle(`session:${sessionId}`);
    try {
      const old = new SessionClient(rotated.client, { taskQueue: rotated.taskQueue, controlKey: k1 });
      await expect(old.approve(sessionId, '2:1:call_1', { approver: 'alice' })).rejects.toThrow(
        /signed with key "ops-k1", which is not one of this worker's control keys/,
      );
      const client = new SessionClient(rotated.client, { taskQueue: rotated.taskQueue, controlKey: k2 });
      await client.approve(sessionId, '2:1:call_1', { approver: 'alice' });
      const done = await waitFor(
        () => handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] }),
        (r) => r.status === 'done',
      );
      expect(done.record?.agent?.toolCalls[0]).toMatchObject({ status: 'ok', result: '11' });
    } finally {
      await rotated.stop();
    }
  });

  it('refuses a signature that outlives the maximum lifetime (expiresAt 8.64e15)', async () => {
    const handle = await startSession(signed);
    const body = { commandId: uniqueId('pause'), name: 'pause' };
    await handle.signal(commandSignal, { ...body, signature: signControl(k1, 'command', idOf(handle), body, 8.64e15) });
    const refused = await waitFor(
      () => view(handle),
      (v) => refusals(v) === 1,
    );
    expect(refused.status).toBe('active');
    expect(refused.recentRejections.at(-1)?.reason).toMatch(
      /^command signature is valid until .*, longer than this worker's maximum signature lifetime of 3600000 ms/,
    );
  });

  it('a signed resume copied from history, replayed after 500 notifications, does not undo a later pause', async () => {
    const handle = await startSession(signed);
    const sessionId = idOf(handle);
    const sign = (body: { commandId: string; name: string }) => ({
      ...body,
      signature: signControl(k1, 'command', sessionId, body, Date.now() + 10 * 60_000),
    });
    const resume = sign({ commandId: 'resume-1', name: 'resume' });
    await handle.signal(commandSignal, sign({ commandId: 'pause-1', name: 'pause' }));
    await handle.signal(commandSignal, resume);
    await handle.signal(commandSignal, sign({ commandId: 'pause-2', name: 'pause' }));
    await waitFor(
      () => view(handle),
      (v) => v.status === 'paused' && v.recentControlEvents.some((e) => e.id === 'pause-2'),
    );
    // Unsigned notifications flush the id window (500 ids) that used to be the only replay defence.
    const notifications = Array.from({ length: 501 }, (_, i) => ({
      notificationId: `n-${i}`,
      kind: 'tick',
      text: 'tick',
    }));
    await Promise.all(notifications.map((n) => handle.signal(notificationSignal, n)));
    await handle.signal(commandSignal, resume);
    const refused = await waitFor(
      () => view(handle),
      (v) => refusals(v) >= 1,
    );
    expect(refused.status).toBe('paused');
    expect(refused.recentRejections.at(-1)?.reason).toMatch(/^command signature was already used/);
  });
});
