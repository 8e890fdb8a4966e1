/**
 * Trust boundary: an approval answers exactly one waiting tool call. Each test here failed before
 * approvals had their own ids: the approval named only the model's call id, which models reuse
 * across turns, and it was accepted for calls that did not wait for it yet.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { McpCatalog } from '../../capabilities/mcp-catalog.js';
import { approvalSignal, resultUpdate, snapshotQuery } from '../../contract/api.js';
import type { TurnResult } from '../../contract/queries.js';
import type { SessionView } from '../../contract/queries.js';
import {
  MODEL,
  decided,
  scriptedModels,
  send,
  startSession,
  startWorker,
  waitFor,
  type TestWorker,
} from '../support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from '../support/mcp-fixture.js';
import { readJournal } from '../support/mcp-fixture-server.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { scriptRoles, type RoleScript } from '../support/scripted-roles.js';

let dir: string;
let journal: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let worker: TestWorker;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'approvals-'));
  journal = join(dir, 'journal.log');
  const connected = await connectedCatalog({
    fixture: fixtureMcpEntry(dir, ['echo', 'add'], { MCP_FIXTURE_JOURNAL: journal }),
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

/** A Session with the fixture's tools loaded (`add` needs approval). */
async function fixtureSession(): Promise<WorkflowHandle> {
  const goal = 'Exercise the fixture tools: echo and add numbers';
  script.selection.set(goal, { skills: [], toolsets: ['mcp-fixture'] });
  const handle = await startSession(worker);
  await send(handle, goal);
  await decided(handle, 1);
  return handle;
}

/** Sends a continue-shaped input and waits until its turn ends or waits for someone. */
async function turn(handle: WorkflowHandle, seq: number, text: string): Promise<TurnResult> {
  script.relevance.set(text, [0.9, 0.9]);
  await send(handle, text);
  return handle.executeUpdate(resultUpdate, { args: [{ seq, timeoutMs: 30_000 }] });
}

const view = (handle: WorkflowHandle): Promise<SessionView> => handle.query(snapshotQuery);
/** The keys (`<sessionId>:<seq>:<callId>`) the fixture's `add` really ran with, in order. */
const ranAdds = () => readJournal(journal).flatMap((l) => (l.kind === 'ran' && l.tool === 'add' ? [l.key] : []));

describe('an approval answers exactly one waiting call', () => {
  it('a retried approval from an earlier turn does not approve a later turn that reuses the call id', async () => {
    const handle = await fixtureSession();
    const sessionId = handle.workflowId.slice('session:'.length);
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_1', name: 'add', arguments: { a: 2, b: 3 } }] },
      { content: 'The sum is 5.' },
    );
    expect(await turn(handle, 2, 'add 2 and 3')).toMatchObject({ status: 'waiting', outcome: 'waiting-approval' });
    const [first] = (await view(handle)).pendingApprovals;
    expect(first).toMatchObject({ approvalId: '2:1:call_1', callId: 'call_1', seq: 2, tool: 'add' });
    const turnOneApproval = {
      approvalId: first?.approvalId,
      argumentsHash: first?.argumentsHash,
      approved: true,
      approver: 'alice',
    };
    await handle.signal(approvalSignal, turnOneApproval);
    // The approval applies once the worker checked it (a local activity), not within the signal's task.
    await waitFor(
      () => view(handle),
      (v) => v.pendingApprovals.length === 0,
    );
    expect((await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] })).record?.agent?.outcome).toBe('replied');

    // Turn 3: the model reuses call_1 for a different action, which waits for its own approval.
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_1', name: 'add', arguments: { a: 40, b: 2 } }] },
      { content: 'The sum is 42.' },
    );
    expect(await turn(handle, 3, 'add 40 and 2')).toMatchObject({ status: 'waiting' });
    // A client retries the turn-1 signal (at-least-once delivery, or a replay): it approves nothing.
    await handle.signal(approvalSignal, turnOneApproval);
    const refused = await waitFor(
      () => view(handle),
      (v) => v.counts.rejectedBy['unknown-id'] === 1,
    );
    expect(refused.stage).toBe('Waiting for approval');
    expect(refused.pendingApprovals).toEqual([
      expect.objectContaining({ approvalId: '3:1:call_1', arguments: '{"a":40,"b":2}' }),
    ]);
    expect(refused.recentRejections.at(-1)).toMatchObject({ via: 'approval', messageId: '2:1:call_1' });
    expect(refused.recentRejections.at(-1)?.reason).toContain('waiting now: 3:1:call_1');
    expect(refused.recentControlEvents.at(-1)?.summary).toMatch(/^refused: approval 2:1:call_1 matches no tool call/);
    expect(ranAdds()).toEqual([`${sessionId}:2:call_1`]);

    // Its own approval runs it, once.
    await handle.signal(approvalSignal, { approvalId: '3:1:call_1', approved: true, approver: 'bob' });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 3 }] });
    expect(done.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        callId: 'call_1',
        status: 'ok',
        result: '42',
        approval: expect.objectContaining({ by: 'bob' }),
      }),
    ]);
    expect(ranAdds()).toEqual([`${sessionId}:2:call_1`, `${sessionId}:3:call_1`]);
  });

  it('an approval sent before its call waits is refused, and the call still waits for its own', async () => {
    const handle = await fixtureSession();
    server.enqueue(
      MODEL.agent,
      {
        toolCalls: [
          { id: 'call_a', name: 'add', arguments: { a: 1, b: 1 } },
          { id: 'call_b', name: 'add', arguments: { a: 2, b: 2 } },
        ],
      },
      { content: 'Done: 2 and 4.' },
    );
    expect(await turn(handle, 2, 'add 1 and 1, then 2 and 2')).toMatchObject({ status: 'waiting' });
    // Only the first call waits; the second has not asked for approval yet.
    expect((await view(handle)).pendingApprovals.map((p) => p.approvalId)).toEqual(['2:1:call_a']);
    await handle.signal(approvalSignal, { approvalId: '2:1:call_b', approved: true });
    await waitFor(
      () => view(handle),
      (v) => v.counts.rejectedBy['unknown-id'] === 1,
    );
    await handle.signal(approvalSignal, { approvalId: '2:1:call_a', approved: true });
    const second = await waitFor(
      () => view(handle),
      (v) => v.pendingApprovals[0]?.approvalId === '2:1:call_b',
    );
    expect(second.stage).toBe('Waiting for approval');
    await handle.signal(approvalSignal, {
      approvalId: '2:1:call_b',
      approved: false,
      note: 'enough',
      approver: 'carol',
    });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
    expect(done.record?.agent?.toolCalls.map((c) => [c.callId, c.status, c.approval?.by ?? null])).toEqual([
      ['call_a', 'ok', null],
      ['call_b', 'rejected', 'carol'],
    ]);
    expect(done.record?.agent?.toolCalls[1]?.approval).toMatchObject({ approved: false, note: 'enough' });
  });

  it('an approval whose argument hash is not the waiting call’s approves nothing', async () => {
    const handle = await fixtureSession();
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_1', name: 'add', arguments: { a: 5, b: 5 } }] },
      { content: 'Ten.' },
    );
    expect(await turn(handle, 2, 'add 5 and 5')).toMatchObject({ status: 'waiting' });
    const [pending] = (await view(handle)).pendingApprovals;
    expect(pending?.argumentsHash).toMatch(/^[0-9a-f]{64}$/);
    const other = pending?.argumentsHash.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    await handle.signal(approvalSignal, { approvalId: '2:1:call_1', argumentsHash: other, approved: true });
    const refused = await waitFor(
      () => view(handle),
      (v) => v.counts.rejectedBy['unknown-id'] === 1,
    );
    expect(refused.pendingApprovals).toHaveLength(1);
    expect(refused.recentRejections.at(-1)?.reason).toContain('other than the waiting call');

    await handle.signal(approvalSignal, {
      approvalId: '2:1:call_1',
      argumentsHash: pending?.argumentsHash,
      approved: true,
      approver: 'dave',
      note: 'checked',
    });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
    expect(done.record?.agent?.toolCalls[0]).toMatchObject({
      status: 'ok',
      result: '10',
      approval: { approved: true, by: 'dave', note: 'checked' },
    });
    const events = (await view(handle)).recentControlEvents.filter((e) => e.kind === 'approval');
    expect(events.map((e) => e.summary)).toEqual([
      expect.stringMatching(/^refused: approval 2:1:call_1 names arguments/),
      'approved by dave: checked',
    ]);
  });

  it('harness approve answers the call it shows, records who approved, and refuses what no longer waits', async () => {
    const handle = await fixtureSession();
    const sessionId = handle.workflowId.slice('session:'.length);
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_1', name: 'add', arguments: { a: 7, b: 8 } }] },
      { content: 'Fifteen.' },
    );
    expect(await turn(handle, 2, 'add 7 and 8')).toMatchObject({ status: 'waiting' });

    // The approver is the configured signer name, never a per-call flag.
    const approve = await harness(['approve', sessionId, '2:1:call_1', '--note', 'looks right'], {
      HARNESS_SIGNER_NAME: 'erin',
    });
    expect(approve).toEqual({
      code: 0,
      stdout: `approved add({"a":7,"b":8}) — approval 2:1:call_1 in session ${sessionId}\n`,
      stderr: '',
    });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
    expect(done.record?.agent?.toolCalls[0]).toMatchObject({
      status: 'ok',
      result: '15',
      approval: { approved: true, by: 'erin', note: 'looks right' },
    });
    expect((await view(handle)).recentControlEvents.at(-1)?.summary).toBe('approved by erin: looks right');

    const again = await harness(['approve', sessionId, '2:1:call_1']);
    expect(again).toMatchObject({
      code: 3,
      stderr: `harness: no call waits for approval 2:1:call_1 in session ${sessionId} (waiting: none)\n`,
    });
  });
});

/** Runs `bin/harness.js` against the test server and this file's worker. */
function harness(
  args: string[],
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const connection = ['--address', inject('temporalAddress'), '--task-queue', worker.taskQueue];
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('HARNESS_')),
  );
  const child = spawn(process.execPath, ['bin/harness.js', ...connection, ...args], {
    env: { ...env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
