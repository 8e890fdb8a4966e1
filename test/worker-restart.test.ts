/**
 * Killing the worker process mid-input and starting a new one: Temporal replays the Session and
 * retries the lost activity; the input completes once, with one decision record, and nothing
 * signalled meanwhile is lost.
 */
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { capabilitiesQuery, decisionsQuery, messageSignal, snapshotQuery } from '../contract/api.js';
import { MODEL, message, uniqueId, userJson, waitFor } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';
import { scriptRoles } from './support/scripted-roles.js';
import { spawnWorker, type WorkerProcess } from './support/spawn-worker.js';

let server: ScriptedModelServer;
let connection: Connection;
const workers: WorkerProcess[] = [];
const taskQueue = uniqueId('restart');

beforeAll(async () => {
  server = await ScriptedModelServer.start();
  connection = await Connection.connect({ address: inject('temporalAddress') });
});

afterAll(async () => {
  for (const worker of workers) await worker.kill();
  await connection?.close();
  await server?.close();
});

it('completes an input once after the worker is killed while orchestration is in flight', async () => {
  const script = scriptRoles(server);
  const goal = 'Write the customer-support weekly report with charts';
  script.terms.set(goal, ['customer support', 'weekly report', 'charts', 'tickets']);
  // The first orchestration call hangs (the worker dies holding it); the retry answers at once.
  script.selection.set(goal, { skills: ['support-ticket-report', 'weekly-report'], toolsets: ['ticketing', 'charts'] });
  let orchestrationCalls = 0;
  server.on(MODEL.orchestration, (req) => {
    orchestrationCalls++;
    const selection = { skills: ['support-ticket-report', 'weekly-report'], toolsets: ['ticketing', 'charts'] };
    expect(userJson<{ task: { phaseGoal: string } }>(req).task.phaseGoal).toBe(goal);
    return orchestrationCalls === 1 ? { delayMs: 60_000, then: { json: selection } } : { json: selection };
  });
  const client = new Client({ connection, namespace: inject('temporalNamespace') });
  const sessionId = uniqueId('restart');
  const first = await spawnWorker({ taskQueue, models: server });
  workers.push(first);
  const handle = await client.workflow.start('session', {
    workflowId: `session:${sessionId}`,
    taskQueue,
    args: [{ sessionId, settings: { modelTimeoutMs: 3_000, modelAttempts: 3 } }],
  });
  await handle.signal(messageSignal, message(goal));
  await waitFor(
    () => Promise.resolve(orchestrationCalls),
    (n) => n === 1,
  );
  expect((await handle.query(snapshotQuery)).stage).toBe('Orchestrating the task');

  await first.kill();
  // Signalled while no worker runs: recorded by the server, bound after the restart.
  const second = message('Add a chart of first-response times');
  script.relevance.set(second.text, [0.9, 0.9]);
  await handle.signal(messageSignal, second);

  workers.push(await spawnWorker({ taskQueue, models: server }));
  const decisions = await waitFor(
    () => handle.query(decisionsQuery),
    (d) => d.length === 2,
    60_000,
  );
  expect(decisions.map((d) => [d.seq, d.decision])).toEqual([
    [1, 'initialize'],
    [2, 'continue'],
  ]);
  expect(decisions[0]?.stages.find((s) => s.stage === 'Orchestrating the task')?.outcome).toBe('ok');
  expect(orchestrationCalls).toBe(2);
  const caps = await handle.query(capabilitiesQuery);
  expect(caps.skills.map((c) => c.id)).toEqual(['support-ticket-report', 'weekly-report']);
  expect(caps.toolsets.map((c) => c.id)).toEqual(['ticketing', 'charts']);
  expect(caps.revision).toBe(1);
  // Exactly one relevance judgment for the second input, one agent turn per input.
  expect(server.requests(MODEL.relevance)).toHaveLength(1);
  expect(server.requests(MODEL.agent)).toHaveLength(2);
});
