/**
 * kill -9 of the Temporal dev server mid-run, restarted on the same SQLite file and ports. Senders
 * retry failed signals with the same messageId (at-least-once delivery, as a backend service would),
 * the worker process reconnects on its own, and every input completes once, in order.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, expect, inject, it } from 'vitest';
import { startDevServer, type DevServer } from '../../dev/dev-server.js';
import { decisionsQuery, messageSignal, snapshotQuery } from '../../workflows/api.js';
import { message, uniqueId } from '../support/harness.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { freePorts } from '../support/ports.js';
import { spawnWorker, type WorkerProcess } from '../support/spawn-worker.js';
import { DecisionLog, auditInputs, runHistories, until, workflowTaskFailures } from './audit.js';
import { inputText, scriptFaultRoles } from './roles.js';
import { writeRow } from './rows.js';

const SESSIONS = 10;
const INPUTS = 20;
const settings = { modelTimeoutMs: 3_000, agentTimeoutMs: 5_000, modelAttempts: 3 };

let server: DevServer | undefined;
let worker: WorkerProcess | undefined;
let models: ScriptedModelServer | undefined;
let connection: Connection | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'harness-faults-server-'));

afterAll(async () => {
  await worker?.kill();
  await connection?.close();
  await server?.stop();
  await models?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Retries a call through a server outage; the payload's messageId makes a repeat harmless. */
async function persist(call: () => Promise<unknown>): Promise<void> {
  for (;;) {
    try {
      await call();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

it('completes every input once after the dev server is SIGKILLed and restarted on the same file', async () => {
  const started = Date.now();
  const [port, uiPort, httpPort] = (await freePorts(3)) as [number, number, number];
  const serverOptions = {
    cliPath: inject('temporalCliPath'),
    dbFile: join(dataDir, 'temporal.db'),
    port,
    uiPort,
    httpPort,
    namespace: 'default',
    log: () => {},
  };
  server = await startDevServer(serverOptions);
  models = await ScriptedModelServer.start();
  scriptFaultRoles(models);
  const taskQueue = uniqueId('faults-server');
  worker = await spawnWorker({ taskQueue, models, env: { TEMPORAL_ADDRESS: server.address } });
  connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });

  const sessions = await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      const sessionId = uniqueId(`srv-${s}`);
      const handle = await client.workflow.start('session', {
        workflowId: `session:${sessionId}`,
        taskQueue,
        args: [{ sessionId, settings }],
      });
      return { handle, firstRunId: handle.firstExecutionRunId, sent: [] as string[] };
    }),
  );
  const sending = Promise.all(
    sessions.map(async (session, s) => {
      for (let k = 0; k < INPUTS; k++) {
        const m = message(inputText(s, k));
        await persist(() => session.handle.signal(messageSignal, m));
        session.sent.push(m.messageId);
        // Spread the inputs over the run, so the kill lands with work queued, in flight and still to send.
        await new Promise((r) => setTimeout(r, 150));
      }
    }),
  );

  // Kill once about a quarter of all inputs are decided.
  await until(
    async () => {
      const views = await Promise.all(sessions.map((x) => x.handle.query(snapshotQuery)));
      return views.reduce((n, v) => n + v.seq.lastBound, 0);
    },
    (bound) => bound >= (SESSIONS * INPUTS) / 4,
    300_000,
  );
  server.child.kill('SIGKILL');
  await server.exited;
  server = await startDevServer(serverOptions);
  await sending;

  await Promise.all(
    sessions.map(({ handle }) =>
      until(
        () => handle.query(snapshotQuery),
        (v) => v.seq.lastBound === INPUTS && v.stage === 'Idle' && v.turn === null,
        600_000,
      ),
    ),
  );
  let lost = 0;
  let duplicated = 0;
  let serverFailed = 0;
  const ours: string[] = [];
  const problems: string[] = [];
  for (const [i, session] of sessions.entries()) {
    const log = new DecisionLog();
    log.add(await session.handle.query(decisionsQuery));
    const audit = auditInputs(log, session.sent);
    lost += audit.lost;
    duplicated += audit.duplicated;
    if (!audit.gapFree || !audit.inOrder) problems.push(`session ${i}: ${JSON.stringify(audit)}`);
    const failures = workflowTaskFailures(await runHistories(client, session.handle.workflowId, session.firstRunId));
    ours.push(...failures.ours);
    serverFailed += failures.server;
  }
  writeRow({
    scenario: '2 dev server kill -9 + restart',
    sessions: SESSIONS,
    inputs: SESSIONS * INPUTS,
    lost,
    duplicated,
    failedTasks: ours.length,
    serverFailedTasks: serverFailed,
    timeMs: Date.now() - started,
    notes: 'one SIGKILL of temporal server start-dev at ~25% bound, restarted on the same SQLite file',
  });
  expect(problems).toEqual([]);
  expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
  expect(ours).toEqual([]);
});
