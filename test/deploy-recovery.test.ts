/**
 * Safe deploys: a worker that cannot read a Session's carried state fails the workflow task with a
 * plain Error, so Temporal retries it and the Session stays running; once a worker that can read
 * the state is deployed, the Session goes on where it stopped, with every input signalled in the
 * meantime processed once and seq gap-free.
 */
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decisionsQuery, snapshotQuery } from '../contract/api.js';
import { ScriptedModelServer } from './support/model-server.js';
import {
  MODEL,
  scriptedModels,
  send,
  startSession,
  startWorker,
  uniqueId,
  waitFor,
  type TestWorker,
} from './support/harness.js';

let models: ScriptedModelServer;
const workers: TestWorker[] = [];

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  models.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 } });
  models.on(MODEL.extraction, { json: { terms: ['invoices'] } });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
});

afterAll(async () => {
  for (const w of workers) await w.stop().catch(() => undefined);
  await models?.close();
});

/** The failure messages of the workflow tasks that failed in the Session's current run. */
async function failedTasks(w: TestWorker, workflowId: string): Promise<string[]> {
  const { events } = await w.client.workflow.getHandle(workflowId).fetchHistory();
  return (events ?? []).flatMap((e) =>
    e.workflowTaskFailedEventAttributes ? [e.workflowTaskFailedEventAttributes.failure?.message ?? ''] : [],
  );
}

it('a worker that cannot read the carried state leaves the Session running until a fixed worker takes it over', async () => {
  const taskQueue = uniqueId('deploy');
  const faulty = await bundleWorkflowCode({
    workflowsPath: join(import.meta.dirname, 'fixtures', 'unreadable-carried-workflows.ts'),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  const broken = await startWorker({ models: scriptedModels(models), taskQueue, workflowBundle: faulty });
  workers.push(broken);

  // Two inputs complete run 1, which then continues as new; the faulty build cannot read run 2's state.
  const handle = await startSession(broken, { settings: { continueAsNewAfter: 2, agentTurn: false } });
  const workflowId = handle.workflowId;
  const firstRunId = (await handle.describe()).runId;
  const sent = [await send(handle, 'Reconcile the supplier invoices for March'), await send(handle, 'and April')];
  const failures = await waitFor(
    async () => {
      const { runId, status } = await handle.describe();
      if (status.name !== 'RUNNING')
        throw new Error(`the Session is ${status.name}; it should wait for a fixed worker`);
      return runId === firstRunId ? [] : failedTasks(broken, workflowId);
    },
    (messages) => messages.length > 0,
    60_000,
  );
  expect(failures[0]).toContain('carried state is invalid');
  expect(failures[0]).toContain('schemaVersion');

  // Inputs sent while the Session cannot run are recorded by the server, not lost.
  sent.push(await send(handle, 'flag any invoice paid twice'), await send(handle, 'and list the credit notes'));
  const wedged = await handle.describe();
  expect(wedged.status.name).toBe('RUNNING');
  expect(wedged.runId).not.toBe(firstRunId);

  // Deploy the fixed build (the suite's real bundle) on the same task queue.
  await broken.stop();
  const fixed = await startWorker({ models: scriptedModels(models), taskQueue });
  workers.push(fixed);
  const decisions = await waitFor(
    () => fixed.client.workflow.getHandle(workflowId).query(decisionsQuery),
    (d) => d.length === sent.length,
    90_000,
  );
  expect(decisions.map((d) => d.seq)).toEqual([1, 2, 3, 4]);
  expect(decisions.map((d) => d.messageId)).toEqual(sent.map((m) => m.messageId));
  const snapshot = await fixed.client.workflow.getHandle(workflowId).query(snapshotQuery);
  expect(snapshot.seq).toEqual({ lastAccepted: 4, lastBound: 4 });
  expect(snapshot.counts.duplicates).toBe(0);
  expect(snapshot.run).toBeGreaterThanOrEqual(2);
  expect((await fixed.client.workflow.getHandle(workflowId).describe()).status.name).toBe('RUNNING');
  // In the run the faulty build wedged, a workflow task completed after the failed ones.
  const { events } = await fixed.client.workflow.getHandle(workflowId, wedged.runId).fetchHistory();
  const kinds = (events ?? []).map((e) =>
    e.workflowTaskFailedEventAttributes ? 'failed' : e.workflowTaskCompletedEventAttributes ? 'completed' : '',
  );
  const lastFailed = kinds.lastIndexOf('failed');
  const lastCompleted = kinds.lastIndexOf('completed');
  expect(lastFailed).toBeGreaterThan(0);
  expect(lastCompleted).toBeGreaterThan(lastFailed);
}, 180_000);
