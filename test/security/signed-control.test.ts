/**
 * Trust boundary: with control keys on the worker (HARNESS_CONTROL_KEYS), approvals, tool results,
 * commands and a message's user identity count only when signed for this Session and not expired.
 * Before, whoever could signal a Session could approve its calls and claim any user id: an unsigned
 * approval ran the call, and `from.id` chose whose memories were recalled.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { McpCatalog } from '../../capabilities/mcp-catalog.js';
import { MemoryStore } from '../../capabilities/memory-store.js';
import { SessionClient } from '../../client/session-client.js';
import {
  approvalSignal,
  approveUpdate,
  commandSignal,
  historyQuery,
  resultUpdate,
  snapshotQuery,
} from '../../contract/api.js';
import { signControl, unsigned, type ControlKey } from '../../contract/control-signature.js';
import type { SessionView, TurnResult } from '../../contract/queries.js';
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
} from '../support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from '../support/mcp-fixture.js';
import { readJournal } from '../support/mcp-fixture-server.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { scriptRoles, type RoleScript } from '../support/scripted-roles.js';

const key: ControlKey = { id: 'ops-2026', secret: randomBytes(32) };
const keyEnv = `${key.id}:${Buffer.from(key.secret).toString('base64')}`;

let dir: string;
let journal: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let memories: MemoryStore;
let signed: TestWorker;
let open: TestWorker;
let client: SessionClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'signed-control-'));
  journal = join(dir, 'journal.log');
  const connected = await connectedCatalog({
    fixture: fixtureMcpEntry(dir, ['echo', 'add'], { MCP_FIXTURE_JOURNAL: journal }),
  });
  const catalog = connected.catalog;
  mcp = connected.mcp;
  memories = MemoryStore.open(join(dir, 'memory.db'));
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  const models = scriptedModels(server);
  signed = await startWorker({ models, catalog, mcp, memories, policy: { controlKeys: [key] } });
  // The same code with no keys: control is trusted as sent, as before.
  open = await startWorker({ models, catalog, mcp, memories });
  client = new SessionClient(signed.client, { taskQueue: signed.taskQueue, controlKey: key });
});

afterAll(async () => {
  await signed?.stop();
  await open?.stop();
  await mcp?.close();
  await server?.close();
  memories?.close();
  rmSync(dir, { recursive: true, force: true });
});

const view = (handle: WorkflowHandle): Promise<SessionView> => handle.query(snapshotQuery);
const idOf = (handle: WorkflowHandle) => handle.workflowId.slice('session:'.length);
const ranAdds = () => readJournal(journal).flatMap((l) => (l.kind === 'ran' && l.tool === 'add' ? [l.key] : []));

/** A Session whose turn 2 waits for approval of `add(a, b)`. */
async function waitingSession(w: TestWorker, a: number, b: number): Promise<WorkflowHandle> {
  const goal = `Exercise the fixture tools: add ${a} and ${b}`;
  script.selection.set(goal, { skills: [], toolsets: ['mcp-fixture'] });
  const handle = await startSession(w);
  await send(handle, goal);
  await decided(handle, 1);
  const text = `now add ${a} and ${b}`;
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

const refusals = (v: SessionView) => v.counts.rejectedBy['unauthenticated'] ?? 0;

/**
 * The turn's result once the approval just sent has been checked and applied: under signed control
 * the check is a local activity, so a `result` read at once may still see the call waiting.
 */
async function resultAfterApproval(handle: WorkflowHandle): Promise<TurnResult> {
  await waitFor(
    () => view(handle),
    (v) => v.pendingApprovals.length === 0,
  );
  return handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
}

describe('under signed control', () => {
  it('refuses an unsigned approval (the call keeps waiting) and applies a signed one', async () => {
    const handle = await waitingSession(signed, 2, 3);
    const sessionId = idOf(handle);
    await handle.signal(approvalSignal, { approvalId: '2:1:call_1', approved: true, approver: 'mallory' });
    const refused = await waitFor(
      () => view(handle),
      (v) => refusals(v) === 1,
    );
    expect(refused.stage).toBe('Waiting for approval');
    expect(refused.pendingApprovals.map((p) => p.approvalId)).toEqual(['2:1:call_1']);
    expect(refused.recentRejections.at(-1)).toMatchObject({ via: 'approval', messageId: '2:1:call_1' });
    expect(refused.recentRejections.at(-1)?.reason).toBe(
      'unsigned approval: this worker accepts only signed control (HARNESS_CONTROL_KEYS)',
    );
    expect(refused.recentControlEvents.at(-1)?.summary).toMatch(/^refused: unsigned approval/);
    expect(ranAdds()).not.toContain(`${sessionId}:2:call_1`);

    const [pending] = refused.pendingApprovals;
    await client.approve(sessionId, '2:1:call_1', { argumentsHash: pending?.argumentsHash, approver: 'alice' });
    const done = await resultAfterApproval(handle);
    expect(done.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({ status: 'ok', result: '5', approval: expect.objectContaining({ by: 'alice' }) }),
    ]);
    expect(ranAdds()).toContain(`${sessionId}:2:call_1`);
  });

  it('refuses a signed approval replayed from another Session, one that expired, and a tampered one', async () => {
    const handle = await waitingSession(signed, 4, 4);
    const sessionId = idOf(handle);
    const body = { approvalId: '2:1:call_1', approved: true, approver: 'alice' };
    const forOther = { ...body, signature: signControl(key, 'approval', 'another-session', body, Date.now() + 60_000) };
    const expired = { ...body, signature: signControl(key, 'approval', sessionId, body, Date.now() - 1_000) };
    const good = signControl(key, 'approval', sessionId, body, Date.now() + 60_000);
    const tampered = { ...body, approver: 'mallory', signature: good };
    for (const payload of [forOther, expired, tampered]) await handle.signal(approvalSignal, payload);
    const refused = await waitFor(
      () => view(handle),
      (v) => refusals(v) === 3,
    );
    const reasons = refused.recentRejections.slice(-3).map((r) => r.reason);
    expect(reasons[0]).toMatch(/^bad approval signature: the MAC does not match/);
    expect(reasons[1]).toMatch(/^approval signature expired at /);
    expect(reasons[2]).toMatch(/^bad approval signature: the MAC does not match/);
    expect(refused.pendingApprovals.map((p) => p.approvalId)).toEqual(['2:1:call_1']);
    expect(ranAdds()).not.toContain(`${sessionId}:2:call_1`);

    // The same body, signed for this Session and in time, applies.
    await handle.signal(approvalSignal, { ...body, signature: good });
    const done = await resultAfterApproval(handle);
    expect(done.record?.agent?.toolCalls[0]).toMatchObject({ status: 'ok', result: '8' });
  });

  it('refuses an unsigned command and applies a signed one, keeping its id free for the signed retry', async () => {
    const handle = await startSession(signed);
    await handle.signal(commandSignal, { commandId: 'pause-1', name: 'pause' });
    await waitFor(
      () => view(handle),
      (v) => refusals(v) === 1,
    );
    expect((await view(handle)).status).toBe('active');
    await client.command(idOf(handle), { commandId: 'pause-1', name: 'pause' });
    await waitFor(
      () => view(handle),
      (v) => v.status === 'paused',
    );
  });

  it('a close still being checked refuses the submit sent after it', async () => {
    const handle = await startSession(signed);
    const sessionId = idOf(handle);
    await client.submit(sessionId, { text: 'Collect the supplier invoices' });
    // The close is in history before the submit is sent (sent together, the two calls raced and the
    // submit sometimes reached the server first, when accepting it is right); the submit then arrives
    // while the close waits for its signature check (a local activity), or after the close completed
    // the Session. Either way it is refused and never bound.
    await client.command(sessionId, { commandId: 'close-1', name: 'close' });
    const refused = await client.submit(sessionId, { text: 'one more thing' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).not.toBeNull();
    expect(String(refused)).toMatch(/closed|not found/);
    expect(await handle.result()).toMatchObject({ status: 'closed', lastSeq: 1 });
  });

  it("a spoofed user id without a valid signature is dropped: no recall of that user's memories", async () => {
    memories.add({ text: 'Alice keeps the release checklist in the ops vault', scope: { userId: 'alice' } });
    const phaseGoalOf = (r: Parameters<typeof userJson>[0]) =>
      userJson<{ task: { phaseGoal: string } }>(r).task.phaseGoal;
    const recalledFor = (goal: string) =>
      server
        .requests(MODEL.orchestration)
        .filter((r) => phaseGoalOf(r) === goal)
        .flatMap((r) => userJson<{ candidates: { memories: Array<{ name: string }> } }>(r).candidates.memories)
        .map((m) => m.name);

    const spoofed = 'Where is the release checklist kept? (spoofed)';
    script.selection.set(spoofed, { skills: [], toolsets: [] });
    const handle = await startSession(signed);
    await send(handle, spoofed, { from: { kind: 'user', id: 'alice' } });
    await decided(handle, 1);
    expect(recalledFor(spoofed)).toEqual([]);
    const [bound] = await handle.query(historyQuery);
    expect(bound?.from).toEqual({ kind: 'user' });
    const v = await view(handle);
    expect(v.recentRejections.at(-1)).toMatchObject({ via: 'message', messageId: bound?.messageId });
    expect(v.recentRejections.at(-1)?.reason).toBe(
      'identity "alice" dropped: unsigned message: this worker accepts only signed control (HARNESS_CONTROL_KEYS)',
    );

    // Signed by the client, the same claim is trusted and alice's memory is a candidate.
    const genuine = 'Where is the release checklist kept? (signed)';
    script.selection.set(genuine, { skills: [], toolsets: [] });
    const sessionId = uniqueId('s');
    const sent = await client.submit(sessionId, { text: genuine, from: { kind: 'user', id: 'alice' } });
    expect(sent.seq).toBe(1);
    await decided(signed.client.workflow.getHandle(`session:${sessionId}`), 1);
    expect(recalledFor(genuine).join(' ')).toContain('release checklist');
  });

  it('`harness approve` signs with HARNESS_CONTROL_KEY', async () => {
    const handle = await waitingSession(signed, 6, 7);
    const sessionId = idOf(handle);
    const run = await harness(['approve', sessionId, '2:1:call_1'], signed, {
      HARNESS_CONTROL_KEY: keyEnv,
      HARNESS_SIGNER_NAME: 'cli-user',
    });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const done = await resultAfterApproval(handle);
    expect(done.record?.agent?.toolCalls[0]).toMatchObject({
      status: 'ok',
      result: '13',
      approval: expect.objectContaining({ by: 'cli-user' }),
    });
    expect(refusals(await view(handle))).toBe(0);
  });
});

describe('approvals that edit the arguments, under signed control', () => {
  it('the signature covers the edited arguments: an edit altered in transit is refused and the call keeps waiting', async () => {
    const handle = await waitingSession(signed, 10, 10);
    const sessionId = idOf(handle);
    const body = { approvalId: '2:1:call_1', approved: true, approver: 'alice', arguments: '{"a":10,"b":11}' };
    const signature = signControl(key, 'approval', sessionId, body, Date.now() + 60_000);
    const altered = { ...body, arguments: '{"a":1000,"b":11}', signature };
    const refused = await handle.executeUpdate(approveUpdate, { args: [altered] }).then(
      () => null,
      (err: Error & { cause?: Error }) => err,
    );
    expect(refused?.cause?.message).toMatch(/^bad approval signature: the MAC does not match/);
    const still = await view(handle);
    expect(still.pendingApprovals.map((p) => p.approvalId)).toEqual(['2:1:call_1']);
    expect(ranAdds()).not.toContain(`${sessionId}:2:call_1`);

    expect(await handle.executeUpdate(approveUpdate, { args: [{ ...body, signature }] })).toEqual({
      approvalId: '2:1:call_1',
      approved: true,
    });
    const done = await resultAfterApproval(handle);
    expect(done.record?.agent?.toolCalls[0]).toMatchObject({
      status: 'ok',
      result: '21',
      arguments: '{"a":10,"b":11}',
      originalArguments: '{"a":10,"b":10}',
      editedBy: 'alice',
    });
  });

  it('`harness approve --arguments` signs the edit, prints it, and exits 2 with the reason when the worker refuses it', async () => {
    const handle = await waitingSession(signed, 3, 3);
    const sessionId = idOf(handle);
    const env = { HARNESS_CONTROL_KEY: keyEnv };
    const bad = await harness(['approve', sessionId, '2:1:call_1', '--arguments', '{"a":3}'], signed, env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/refused the approval: edit of 2:1:call_1 refused: .*must have required property 'b'/);
    const notJson = await harness(['approve', sessionId, '2:1:call_1', '--arguments', '{a:3}'], signed, env);
    expect(notJson).toMatchObject({ code: 2 });
    expect(notJson.stderr).toMatch(/--arguments is not valid JSON/);
    expect((await view(handle)).pendingApprovals).toHaveLength(1);

    const run = await harness(['approve', sessionId, '2:1:call_1', '--arguments', '{"a":3,"b":4}'], signed, {
      ...env,
      HARNESS_SIGNER_NAME: 'cli-user',
    });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain('approved add({"a":3,"b":3}) with edited arguments {"a":3,"b":4}');
    const done = await resultAfterApproval(handle);
    expect(done.record?.agent?.toolCalls[0]).toMatchObject({
      status: 'ok',
      result: '7',
      originalArguments: '{"a":3,"b":3}',
      editedBy: 'cli-user',
    });
    expect(refusals(await view(handle))).toBe(0);
    const inspect = await harness(['inspect', sessionId], signed, env);
    // The notes column wraps onto the row's next line.
    expect(inspect.stdout).toMatch(/tool add \[ok\][^\n]*\n[^\n]*\(arguments edited by cli-user\)/);
  });
});

describe('without control keys', () => {
  it('applies an unsigned approval and trusts from.id, as before', async () => {
    const handle = await waitingSession(open, 1, 2);
    await handle.signal(approvalSignal, { approvalId: '2:1:call_1', approved: true });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
    expect(done.record?.agent?.toolCalls[0]).toMatchObject({ status: 'ok', result: '3' });
    const other = await startSession(open);
    const text = 'Where is the release checklist kept? (no keys)';
    script.selection.set(text, { skills: [], toolsets: [] });
    await send(other, text, { from: { kind: 'user', id: 'alice' } });
    await decided(other, 1);
    expect((await other.query(historyQuery))[0]?.from).toEqual({ kind: 'user', id: 'alice' });
    expect(refusals(await view(other))).toBe(0);
  });

  it('ignores a signature it cannot check: a signed payload still applies', async () => {
    const handle = await startSession(open);
    const body = { commandId: 'pause-2', name: 'pause' };
    await handle.signal(commandSignal, { ...body, signature: signControl(key, 'command', idOf(handle), body, 1) });
    await waitFor(
      () => view(handle),
      (v) => v.status === 'paused',
    );
    expect(unsigned({ ...body, signature: 1 })).toEqual(body);
  });
});

/** Runs `bin/harness.js` against the test server and a worker's task queue. */
function harness(
  args: string[],
  w: TestWorker,
  extraEnv: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const connection = ['--address', inject('temporalAddress'), '--task-queue', w.taskQueue];
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
