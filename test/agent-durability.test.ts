/**
 * A turn waiting for approval is workflow state, not process state: it survives a SIGKILL of the
 * worker, a crash and restart of the dev server on the same SQLite file, and continue-as-new, and
 * the tool runs only once a person approves (exactly once), or never when they reject.
 *
 * The stack is the test's own, because the server is killed: a dev server on a temp SQLite file,
 * the scripted model server, and the worker as an OS process configured like `npm run worker`, with
 * the doc-convert demo MCP server behind an approval gate. Every conversion appends a line with its
 * call id to the workspace's `.conversions.log`, which is how the test sees whether the tool ran.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startDevServer, type DevServer } from '../dev/dev-server.js';
import { approvalSignal, messageSignal, resultUpdate, snapshotQuery } from '../contract/api.js';
import type { TurnResult, SessionView } from '../contract/queries.js';
import { MODEL, message, uniqueId, waitFor } from './support/harness.js';
import { ScriptedModelServer, type RecordedRequest, type Reply } from './support/model-server.js';
import { freePorts } from './support/ports.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';
import { spawnWorker, type WorkerProcess } from './support/spawn-worker.js';

const DOC_CONVERT = resolve('examples/doc-convert-mcp/server.ts');
const TOOLSET = 'mcp-doc-convert';

let dir: string;
let workspace: string;
let mcpConfig: string;
let dbFile: string;
let ports: [number, number, number];
let devServer: DevServer;
let connection: Connection;
let client: Client;
let models: ScriptedModelServer;
let script: RoleScript;
let worker: WorkerProcess | undefined;
const taskQueue = uniqueId('durable');

/** What the scripted agent does for an input: convert `file` (call id `callId`), then reply. */
const plans = new Map<string, { callId: string; file: string }>();

const conversions = (callId: string) =>
  existsSync(join(workspace, '.conversions.log'))
    ? readFileSync(join(workspace, '.conversions.log'), 'utf8')
        .split('\n')
        .filter((line) => line.endsWith(`\t${callId}`))
    : [];

/**
 * The agent by content, so concurrent Sessions and restarts never depend on the order of requests:
 * a planned input asks for its conversion; once the call's result is in the request, it replies
 * with what the tool said (or that it will not convert, when the call was rejected).
 */
function agent(req: RecordedRequest): Reply {
  const user = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const text = user.split('\n[resource]')[0] ?? user;
  const plan = plans.get(text);
  const last = req.messages.at(-1);
  if (!plan) return { content: `Noted: ${text}` };
  if (last?.role === 'tool' && last.toolCallId === plan.callId) {
    return {
      content: last.content.includes('rejected by the user') ? 'Understood, I will not convert it.' : last.content,
    };
  }
  return { toolCalls: [{ id: plan.callId, name: 'markdown_to_docx', arguments: { inputPath: plan.file } }] };
}

async function startServer(): Promise<DevServer> {
  const [port, uiPort, httpPort] = ports;
  return startDevServer({
    cliPath: inject('temporalCliPath'),
    dbFile,
    port,
    uiPort,
    httpPort,
    namespace: 'default',
    log: () => {},
  });
}

async function connect(): Promise<void> {
  connection = await Connection.connect({ address: devServer.address });
  client = new Client({ connection, namespace: 'default' });
}

async function startWorkerProcess(): Promise<WorkerProcess> {
  return spawnWorker({
    taskQueue,
    models,
    env: { TEMPORAL_ADDRESS: devServer.address, TEMPORAL_NAMESPACE: 'default', HARNESS_MCP_CONFIG: mcpConfig },
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-durability-'));
  workspace = join(dir, 'workspace');
  mkdirSync(workspace, { recursive: true });
  dbFile = join(dir, 'temporal.db');
  mcpConfig = join(dir, 'mcp.json');
  writeFileSync(
    mcpConfig,
    JSON.stringify({
      mcpServers: {
        'doc-convert': {
          command: process.execPath,
          args: ['--import', 'tsx', DOC_CONVERT],
          env: { DOC_CONVERT_WORKSPACE: workspace },
          description: 'Convert Markdown files in the workspace to Word (.docx) and HTML.',
          tags: ['convert', 'markdown', 'word', 'docx', 'html'],
          approvalRequired: ['markdown_to_docx'],
          timeoutMs: 60_000,
        },
      },
    }),
  );
  models = await ScriptedModelServer.start();
  script = scriptRoles(models);
  models.on(MODEL.agent, agent);
  ports = (await freePorts(3)) as [number, number, number];
  devServer = await startServer();
  await connect();
  worker = await startWorkerProcess();
});

afterAll(async () => {
  await worker?.kill();
  await connection?.close();
  await devServer?.stop();
  await models?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Starts a Session whose first input asks to convert `<name>.md`; resolves once it waits for approval. */
async function waitingForApproval(name: string, settings: Record<string, unknown> = {}) {
  const text = `Convert ${name}.md to Word`;
  const callId = `call_${name}_${uniqueId('c').slice(2)}`;
  writeFileSync(join(workspace, `${name}.md`), `# ${name}\n\nA short guide.\n`);
  plans.set(text, { callId, file: `${name}.md` });
  script.selection.set(text, { skills: [], toolsets: [TOOLSET] });
  const sessionId = uniqueId(name);
  const handle = await client.workflow.start('session', {
    workflowId: `session:${sessionId}`,
    taskQueue,
    args: [{ sessionId, settings }],
  });
  await handle.signal(messageSignal, message(text));
  const waiting = await handle.executeUpdate(resultUpdate, { args: [{ seq: 1 }] });
  expect(waiting).toMatchObject({ status: 'waiting', outcome: 'waiting-approval' });
  return { sessionId, callId, file: name };
}

const handleOf = (sessionId: string): WorkflowHandle => client.workflow.getHandle(`session:${sessionId}`);

function expectWaiting(snapshot: SessionView, callId: string): void {
  expect(snapshot.stage).toBe('Waiting for approval');
  expect(snapshot.pendingApprovals).toEqual([
    expect.objectContaining({ approvalId: `1:1:${callId}`, callId, seq: 1, tool: 'markdown_to_docx' }),
  ]);
}

describe('a turn waiting for approval', () => {
  it('survives a worker SIGKILL and a dev-server restart; approved it runs once, rejected never', async () => {
    const approved = await waitingForApproval('approved');
    const rejected = await waitingForApproval('rejected');

    // The worker dies without draining, then the server process crashes; both come back on the same file and ports.
    await worker?.kill();
    worker = undefined;
    await devServer.kill();
    await connection.close();
    devServer = await startServer();
    await connect();
    worker = await startWorkerProcess();

    for (const s of [approved, rejected]) {
      const snapshot = await handleOf(s.sessionId).query(snapshotQuery);
      expectWaiting(snapshot, s.callId);
      expect(snapshot.run).toBe(1);
      expect(conversions(s.callId)).toEqual([]);
      expect(existsSync(join(workspace, `${s.file}.docx`))).toBe(false);
    }

    await handleOf(approved.sessionId).signal(approvalSignal, { approvalId: `1:1:${approved.callId}`, approved: true });
    const done: TurnResult = await handleOf(approved.sessionId).executeUpdate(resultUpdate, { args: [{ seq: 1 }] });
    expect(done).toMatchObject({ status: 'done', outcome: 'replied' });
    expect(done.record?.agent?.reply).toContain('Wrote approved.docx');
    expect(done.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({ callId: approved.callId, tool: 'markdown_to_docx', status: 'ok' }),
    ]);
    expect(conversions(approved.callId)).toHaveLength(1);
    expect(existsSync(join(workspace, 'approved.docx'))).toBe(true);

    await handleOf(rejected.sessionId).signal(approvalSignal, {
      approvalId: `1:1:${rejected.callId}`,
      approved: false,
      note: 'keep it Markdown',
    });
    const refused = await handleOf(rejected.sessionId).executeUpdate(resultUpdate, { args: [{ seq: 1 }] });
    expect(refused).toMatchObject({ status: 'done', outcome: 'replied' });
    expect(refused.record?.agent?.reply).toBe('Understood, I will not convert it.');
    expect(refused.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        callId: rejected.callId,
        status: 'rejected',
        result: 'rejected by the user: keep it Markdown',
      }),
    ]);
    expect((await handleOf(rejected.sessionId).query(snapshotQuery)).pendingApprovals).toEqual([]);
    expect(conversions(rejected.callId)).toEqual([]);
    expect(existsSync(join(workspace, 'rejected.docx'))).toBe(false);
    // Still exactly once after everything settled: no retry or replay ran the approved call again.
    expect(conversions(approved.callId)).toHaveLength(1);
  });

  it('is carried into the next run by continue-as-new and completes once approved', async () => {
    // continueAsNewAfter 1: the run continues as new as soon as its one input waits.
    const carried = await waitingForApproval('carried', { continueAsNewAfter: 1 });
    const handle = handleOf(carried.sessionId);
    const next = await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.run >= 2 && s.stage === 'Waiting for approval',
    );
    expectWaiting(next, carried.callId);
    expect(conversions(carried.callId)).toEqual([]);

    // A message sent meanwhile waits its turn, carried along with the waiting call.
    const later = 'Then tell me the file size';
    script.relevance.set(later, [0.9, 0.9]);
    await handle.signal(messageSignal, message(later));
    await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.queueLength === 1,
    );

    await handle.signal(approvalSignal, { approvalId: `1:1:${carried.callId}`, approved: true });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 1 }] });
    expect(done).toMatchObject({ status: 'done', outcome: 'replied' });
    expect(done.record?.agent?.toolCalls).toEqual([expect.objectContaining({ callId: carried.callId, status: 'ok' })]);
    const second = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
    expect(second).toMatchObject({ status: 'done', outcome: 'replied' });
    expect(second.record?.agent?.reply).toBe(`Noted: ${later}`);
    expect(conversions(carried.callId)).toHaveLength(1);
    // The second input was the next run's one input, so the Session moved on to a third run.
    const settled = await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.run > next.run && s.stage === 'Idle',
    );
    expect(settled.counts.bound).toBe(2);
    expect(settled.pendingApprovals).toEqual([]);
  });
});
