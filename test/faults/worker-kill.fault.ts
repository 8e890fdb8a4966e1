/**
 * kill -9 of the worker process inside each stage (understanding, extraction, orchestration,
 * compaction, an agent step) while 30 Sessions each work through 20 inputs. A trap holds one model
 * request of the chosen role open, so the kill lands exactly there; a new worker process takes over.
 * Every input still gets exactly one decision record, in order, and no workflow task fails.
 */
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { decisionsQuery, messageSignal, snapshotQuery } from '../../workflows/api.js';
import type { Role } from '../../models/roles.js';
import { message, uniqueId } from '../support/harness.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { spawnWorker, type WorkerProcess } from '../support/spawn-worker.js';
import { DecisionLog, auditInputs, runHistories, until, workflowTaskFailures } from './audit.js';
import { inputText, scriptFaultRoles } from './roles.js';
import { writeRow } from './rows.js';

const SESSIONS = 30;
const INPUTS = 20;
const STAGES: Role[] = ['relevance', 'extraction', 'orchestration', 'compaction', 'agent'];
/** Small timeouts so the attempt a kill orphans is retried within seconds. */
const settings = { modelTimeoutMs: 3_000, agentTimeoutMs: 5_000, modelAttempts: 3 };

let models: ScriptedModelServer;
let connection: Connection;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  connection = await Connection.connect({ address: inject('temporalAddress') });
});

afterAll(async () => {
  await worker?.kill();
  await connection?.close();
  await models?.close();
});

it('loses and repeats nothing when the worker is SIGKILLed inside every stage', async () => {
  const started = Date.now();
  const trap = scriptFaultRoles(models);
  const client = new Client({ connection, namespace: inject('temporalNamespace') });
  const taskQueue = uniqueId('faults-kill');
  worker = await spawnWorker({ taskQueue, models });

  const sessions = await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      const sessionId = uniqueId(`kill-${s}`);
      const handle = await client.workflow.start('session', {
        workflowId: `session:${sessionId}`,
        taskQueue,
        args: [{ sessionId, settings }],
      });
      return { handle, firstRunId: handle.firstExecutionRunId, sent: [] as string[] };
    }),
  );
  // Each Session's inputs in order; the Sessions side by side.
  const sending = Promise.all(
    sessions.map(async (session, s) => {
      for (let k = 0; k < INPUTS; k++) {
        const m = message(inputText(s, k));
        await session.handle.signal(messageSignal, m);
        session.sent.push(m.messageId);
      }
    }),
  );

  const kills: string[] = [];
  const missed: string[] = [];
  for (const round of [1, 2]) {
    for (const stage of STAGES) {
      const hit = await Promise.race([
        trap.arm(stage).then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 60_000)),
      ]);
      if (!hit) {
        trap.disarm();
        missed.push(`${stage}#${round}`);
        continue;
      }
      await worker.kill();
      kills.push(`${stage}#${round}`);
      worker = await spawnWorker({ taskQueue, models });
    }
  }
  await sending;

  const snapshots = await Promise.all(
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
  let degraded = 0;
  const ours: string[] = [];
  let server = 0;
  const problems: string[] = [];
  for (const [i, session] of sessions.entries()) {
    const log = new DecisionLog();
    const records = await session.handle.query(decisionsQuery);
    log.add(records);
    const audit = auditInputs(log, session.sent);
    lost += audit.lost;
    duplicated += audit.duplicated;
    if (!audit.gapFree || !audit.inOrder) problems.push(`session ${i}: ${JSON.stringify(audit)}`);
    degraded += records.filter(
      (r) => r.degraded !== null || r.fallbacks.length > 0 || r.agent?.outcome !== 'replied',
    ).length;
    const failures = workflowTaskFailures(await runHistories(client, session.handle.workflowId, session.firstRunId));
    ours.push(...failures.ours);
    server += failures.server;
    if (snapshots[i]!.counts.bound !== INPUTS) problems.push(`session ${i}: bound ${snapshots[i]!.counts.bound}`);
  }
  writeRow({
    scenario: '1 worker kill -9 per stage',
    sessions: SESSIONS,
    inputs: SESSIONS * INPUTS,
    lost,
    duplicated,
    failedTasks: ours.length,
    serverFailedTasks: server,
    timeMs: Date.now() - started,
    notes: `kills ${kills.length} (${kills.join(', ')})${missed.length ? `; missed ${missed.join(', ')}` : ''}; inputs degraded or with a failed/fallback stage: ${degraded}`,
  });

  expect(missed).toEqual([]);
  expect(kills).toHaveLength(STAGES.length * 2);
  expect(problems).toEqual([]);
  expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
  expect(ours).toEqual([]);
});
