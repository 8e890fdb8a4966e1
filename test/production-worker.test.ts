/**
 * The deployable build: `npm run build` emits dist/ and the workflow bundles; `node
 * dist/worker/main.js` (no tsx, no webpack at start) processes a Session on the run's dev server,
 * writes JSON logs carrying workflow and run ids, and serves Prometheus metrics whose numbers match
 * the scenario. SIGTERM drains it and it exits 0. Without OTEL_EXPORTER_OTLP_ENDPOINT it installs
 * no tracing; with it, it loads dist/workflow-bundle-traced.js and exports workflow and activity
 * spans (test/tracing.test.ts covers tracing in depth).
 *
 * It runs what `npm run build` left in dist/. `npm test` builds before vitest starts: a build inside
 * this file's hook, beside other files running in parallel, once failed the suite on a fresh clone.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../client/session-client.js';
import { workflowIdFor } from '../contract/ids.js';
import { MODEL, uniqueId, waitFor } from './support/harness.js';
import { startLoggedProcess, type LoggedProcess } from './support/logged-process.js';
import { ScriptedModelServer } from './support/model-server.js';
import { workerEnv } from './support/spawn-worker.js';
import { OtlpReceiver } from './support/otlp-receiver.js';
import { freePorts } from './support/ports.js';

let models: ScriptedModelServer;
let worker: LoggedProcess;
let client: SessionClient;
let metricsPort: number;
const taskQueue = uniqueId('prod');
/** What `npm run build` writes and this file runs. */
const BUILT = ['dist/worker/main.js', 'dist/workflow-bundle.js', 'dist/workflow-bundle-traced.js'];

/** The built worker, configured only through the environment. */
function startBuiltWorker(queue: string, env: NodeJS.ProcessEnv): LoggedProcess {
  return startLoggedProcess(['dist/worker/main.js'], {
    PATH: process.env.PATH,
    HOME: mkdtempSync(join(tmpdir(), 'prod-home-')),
    HARNESS_DATA_DIR: mkdtempSync(join(tmpdir(), 'prod-data-')),
    ...workerEnv(queue, models),
    ...env,
  });
}

/** The header fields of the activities a Session's workflow scheduled. */
async function activityHeaders(sessionClient: SessionClient, sessionId: string): Promise<string[][]> {
  const history = await sessionClient.client.workflow.getHandle(workflowIdFor(sessionId)).fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.activityTaskScheduledEventAttributes)
    .map((e) => Object.keys(e.activityTaskScheduledEventAttributes?.header?.fields ?? {}));
}

/** `name{labels} value` samples of one metric from a Prometheus text scrape. */
function samples(text: string, name: string): Array<{ labels: string; value: number }> {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .map((l) => {
      const value = Number(l.slice(l.lastIndexOf(' ') + 1));
      return { labels: l.slice(name.length, l.lastIndexOf(' ')), value };
    });
}

beforeAll(async () => {
  const missing = BUILT.filter((file) => !existsSync(file));
  if (missing.length > 0) {
    throw new Error(`${missing.join(', ')} missing: run \`npm run build\` first (\`npm test\` builds before it runs)`);
  }
  models = await ScriptedModelServer.start();
  models.on(MODEL.extraction, { json: { terms: ['deploy'] } });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  models.on(MODEL.agent, { content: 'Deployed.' });
  [metricsPort] = (await freePorts(1)) as [number];
  worker = startBuiltWorker(taskQueue, {
    HARNESS_METRICS_PORT: String(metricsPort),
    HARNESS_METRICS_HOST: '127.0.0.1',
    HARNESS_LOG_FORMAT: 'json',
    HARNESS_LOG_LEVEL: 'DEBUG',
  });
  await worker.waitForLine(/worker polling task queue/);
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue, env: {} });
});

afterAll(async () => {
  await client?.close();
  if (worker && worker.child.exitCode === null) worker.child.kill('SIGKILL');
  await models?.close();
});

describe('the built worker', () => {
  it('loads the prebuilt bundle and processes a Session', async () => {
    const bundle = await worker.waitForLine(/workflows: /);
    expect((JSON.parse(bundle) as { msg: string }).msg).toBe(
      `workflows: prebuilt bundle ${resolve('dist/workflow-bundle.js')}`,
    );
    const sessionId = uniqueId('prod');
    const result = await client.submit(sessionId, { text: 'Ship the worker image' }, { wait: true });
    expect(result.decision?.decision).toBe('initialize');
    expect(result.decision?.agent?.outcome).toBe('replied');

    // JSON logs: the SDK's activity logs carry the workflow and run ids.
    const { runId } = await client.describe(sessionId);
    const activityLog = await worker.waitForLine(new RegExp(`"workflowId":"session:${sessionId}"`));
    expect(JSON.parse(activityLog)).toMatchObject({ workflowId: `session:${sessionId}`, runId });

    // Metrics: one model call per role this input needed, and the SDK's own series for our queue.
    const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const latency = samples(scrape, 'harness_model_latency_count');
    const count = (role: string) =>
      latency
        .filter((s) => s.labels.includes(`role="${role}"`) && s.labels.includes('outcome="ok"'))
        .reduce((n, s) => n + s.value, 0);
    expect({ extraction: count('extraction'), orchestration: count('orchestration'), agent: count('agent') }).toEqual({
      extraction: 1,
      orchestration: 1,
      agent: 1,
    });
    // The workflow's own counter: one decision, counted when the input's record was finished. Workflow
    // metrics reach the exporter shortly after the workflow task that counted them.
    const decisions = await waitFor(
      async () =>
        samples(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(), 'harness_session_decisions')
          .filter((s) => s.labels.includes(`taskQueue="${taskQueue}"`))
          .map((s) => [s.labels.match(/decision="([^"]+)"/)?.[1], s.value]),
      (found) => found.length > 0,
      10_000,
    );
    expect(decisions).toEqual([['initialize', 1]]);
    expect(scrape).toMatch(new RegExp(`temporal_activity_execution_latency[^\\n]*task_queue="${taskQueue}"`));

    // No OTEL_EXPORTER_OTLP_ENDPOINT: no tracing, so no trace context travels with the activities.
    expect(worker.lines.join('\n')).not.toMatch(/tracing: /);
    const headers = await activityHeaders(client, sessionId);
    expect(headers.length).toBeGreaterThan(0);
    expect(headers.flat()).not.toContain('_tracer-data');
  });

  it('drains and exits 0 on SIGTERM', async () => {
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });

  it('with OTEL_EXPORTER_OTLP_ENDPOINT loads the traced bundle and exports spans when it stops', async () => {
    const receiver = await OtlpReceiver.start();
    const tracedQueue = uniqueId('prod-otel');
    const traced = startBuiltWorker(tracedQueue, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint });
    try {
      await traced.waitForLine(/worker polling task queue/);
      expect(traced.lines).toContain(
        `[worker] workflows: prebuilt bundle ${resolve('dist/workflow-bundle-traced.js')}`,
      );
      const tracedClient = await SessionClient.connect({
        address: inject('temporalAddress'),
        taskQueue: tracedQueue,
        env: {},
      });
      const sessionId = uniqueId('prod-otel');
      try {
        const result = await tracedClient.submit(sessionId, { text: 'Trace the worker image' }, { wait: true });
        expect(result.decision?.agent?.outcome).toBe('replied');
        expect((await activityHeaders(tracedClient, sessionId)).every((h) => h.includes('_tracer-data'))).toBe(true);
      } finally {
        await tracedClient.close();
      }
      traced.child.kill('SIGTERM');
      expect(await traced.exited).toBe(0);
      const start = receiver.named('StartActivity:agentStep');
      const run = receiver.named('RunActivity:agentStep');
      expect([start.length, run.length]).toEqual([1, 1]);
      expect(run[0]!.traceId).toBe(start[0]!.traceId);
      expect(run[0]!.parentSpanId).toBe(start[0]!.spanId);
      expect(run[0]!.attributes).toMatchObject({ temporalWorkflowId: workflowIdFor(sessionId) });
    } finally {
      if (traced.child.exitCode === null) traced.child.kill('SIGKILL');
      await receiver.close();
    }
  });
});
