/**
 * OpenTelemetry tracing for real: a worker process (`worker/main.ts`, bundling the workflows with
 * the tracing interceptor module at start) with OTEL_EXPORTER_OTLP_ENDPOINT pointed at a local
 * OTLP/HTTP receiver runs a Session on the run's dev server; the client library, with `tracing`
 * on under this process's own OpenTelemetry SDK, starts the trace. The batch delay is set far
 * beyond the test, so the spans can only arrive through the flush on SIGTERM.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../client/session-client.js';
import { workflowIdFor } from '../contract/ids.js';
import { MODEL, uniqueId } from './support/harness.js';
import { startLoggedProcess, type LoggedProcess } from './support/logged-process.js';
import { ScriptedModelServer } from './support/model-server.js';
import { workerEnv } from './support/spawn-worker.js';
import { OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.js';

let models: ScriptedModelServer;
let receiver: OtlpReceiver;
let worker: LoggedProcess;
let client: SessionClient;
const clientSpans = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(clientSpans)] });
const taskQueue = uniqueId('otel');

beforeAll(async () => {
  // What a backend service does once at start: its own SDK, registered globally.
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  receiver = await OtlpReceiver.start();
  models = await ScriptedModelServer.start();
  models.on(MODEL.extraction, { json: { terms: ['release'] } });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  models.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 } });
  models.on(MODEL.agent, { content: 'Done.' });
  worker = startLoggedProcess(['--import', 'tsx', 'worker/main.ts'], {
    PATH: process.env.PATH,
    HOME: mkdtempSync(join(tmpdir(), 'otel-home-')),
    HARNESS_DATA_DIR: mkdtempSync(join(tmpdir(), 'otel-data-')),
    ...workerEnv(taskQueue, models),
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '600000',
  });
  // Includes bundling the workflows with webpack, which the built worker skips.
  await worker.waitForLine(/worker polling task queue/, 150_000);
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue, env: {}, tracing: true });
}, 180_000);

afterAll(async () => {
  await client?.close();
  if (worker && worker.child.exitCode === null) worker.child.kill('SIGKILL');
  await provider.shutdown();
  await models?.close();
  await receiver?.close();
});

const only = (name: string): ReceivedSpan => {
  const found = receiver.named(name);
  expect(found, `spans named ${name} among ${receiver.spans.map((s) => s.name).join(', ')}`).toHaveLength(1);
  return found[0]!;
};

describe('a worker with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('says where spans go, and loads the tracing workflow interceptors', () => {
    expect(worker.lines.some((l) => l.includes(`tracing: spans to ${receiver.endpoint}/v1/traces`))).toBe(true);
    expect(worker.lines.join('\n')).not.toMatch(/workflow bundle has no/);
  });

  it('exports one trace per client call, from the client through the workflow to the activity', async () => {
    const sessionId = uniqueId('otel');
    const workflowId = workflowIdFor(sessionId);
    const first = await client.submit(sessionId, { text: 'Ship the worker image' }, { wait: true });
    expect(first.decision?.decision).toBe('initialize');
    const second = await client.submit(sessionId, { text: 'Also tag the release' }, { wait: true });
    expect(second.decision?.decision).toBe('continue');
    await client.command(sessionId, { name: 'close' });
    await client.client.workflow.getHandle(workflowId).result();

    // The scheduled activities carry the trace context in their headers.
    const history = await client.client.workflow.getHandle(workflowId).fetchHistory();
    const scheduled = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes);
    expect(scheduled.length).toBeGreaterThan(0);
    for (const e of scheduled) {
      expect(Object.keys(e.activityTaskScheduledEventAttributes?.header?.fields ?? {})).toContain('_tracer-data');
    }

    // Nothing leaves before the flush on shutdown (the batch delay is ten minutes).
    expect(receiver.spans).toEqual([]);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);

    expect(receiver.unexpected).toBe(0);
    expect(receiver.contentTypes.length).toBeGreaterThan(0);
    for (const type of receiver.contentTypes) expect(type).toMatch(/^application\/json/);
    for (const span of receiver.spans) expect(span.resource['service.name']).toBe('session-harness-worker');

    // The workflow run continues the trace that the client's update-with-start began.
    const started = clientSpans.getFinishedSpans().filter((s) => s.name === 'UpdateWithStartWorkflow:submit');
    expect(started).toHaveLength(2);
    const run = only('RunWorkflow:session');
    expect(run.traceId).toBe(started[0]!.spanContext().traceId);
    expect(run.parentSpanId).toBe(started[0]!.spanContext().spanId);

    // The relevance activity (second input only): scheduled by the run, executed under that span.
    const start = only('StartActivity:relevance');
    const exec = only('RunActivity:relevance');
    expect(start.traceId).toBe(run.traceId);
    expect(start.parentSpanId).toBe(run.spanId);
    expect(exec.traceId).toBe(run.traceId);
    expect(exec.parentSpanId).toBe(start.spanId);
    expect(exec.attributes).toMatchObject({ temporalWorkflowId: workflowId });

    // Each submit's update handler joins its own client call's trace.
    const handled = receiver.named('HandleUpdate:submit');
    expect(handled.map((s) => s.traceId).sort()).toEqual(started.map((s) => s.spanContext().traceId).sort());
  });
});
