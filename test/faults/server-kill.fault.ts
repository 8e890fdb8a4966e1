/**
 * kill -9 of the Temporal dev server mid-run, restarted on the same SQLite file and ports. Senders
 * retry failed signals with the same messageId (at-least-once delivery, as a backend service would),
 * the worker process reconnects on its own, and every input completes once, in order.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, inject, it } from 'vitest';
import { startDevServer, type DevServer } from '../../dev/dev-server.js';
import { messageSignal, snapshotQuery } from '../../contract/api.js';
import { message, uniqueId } from '../support/harness.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { freePorts } from '../support/ports.js';
import { spawnWorker, type WorkerProcess } from '../support/spawn-worker.js';
import { until } from './audit.js';
import { inputText, scriptFaultRoles } from './roles.js';
import { auditSessions, expectAuditClean, settled, startSessions, writeAuditRow } from './sessions.js';

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
  let client = new Client({ connection });

  const sessions = await startSessions(client, { count: SESSIONS, prefix: 'srv', taskQueue, settings });
  const sending = Promise.all(
    sessions.map(async (session, s) => {
      for (let k = 0; k < INPUTS; k++) {
        const m = message(inputText(s, k));
        // Each try has a deadline, as SessionClient's calls do: a call made while the server restarts
        // can otherwise wait forever for a connection that never completes (grpc/grpc-node#2785).
        await persist(() =>
          session.handle.client.withDeadline(Date.now() + 10_000, () => session.handle.signal(messageSignal, m)),
        );
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
  await server.kill();
  server = await startDevServer(serverOptions);
  // A fresh channel for the senders and the audit: the old one may sit in gRPC's reconnect backoff
  // (up to 120 s between tries) long after a slow restart on a loaded machine has finished.
  const stale = connection;
  connection = await Connection.connect({ address: server.address });
  client = new Client({ connection });
  for (const session of sessions) session.handle = client.workflow.getHandle(session.handle.workflowId);
  // The old channel is closed only once no sender can still be using it: a call in the SDK's retry
  // backoff when its channel closes never settles, deadline or not (its next try throws "Channel has
  // been shut down" from a timer, see SessionClient.close).
  await sending;
  await stale.close();

  // A worker that died instead of reconnecting would leave every query unanswered: say so at once.
  await Promise.race([settled(sessions, INPUTS), worker.died]);
  const audit = await auditSessions(client, sessions);
  writeAuditRow(audit, {
    scenario: '2 dev server kill -9 + restart',
    sessions: SESSIONS,
    inputs: SESSIONS * INPUTS,
    started,
    kills: ['temporal server start-dev at ~25% bound'],
    missed: [],
    notes: 'restarted on the same SQLite file and ports',
  });
  expectAuditClean(audit);
});
