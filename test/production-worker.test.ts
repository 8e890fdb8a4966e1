/**
 * The deployable build: `npm run build` emits dist/ and dist/workflow-bundle.js; `node
 * dist/worker/main.js` (no tsx, no webpack at start) processes a Session on the run's dev server,
 * writes JSON logs carrying workflow and run ids, and serves Prometheus metrics whose numbers match
 * the scenario. SIGTERM drains it and it exits 0.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../client/session-client.js';
import { MODEL, uniqueId } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';
import { freePorts } from './support/ports.js';

let models: ScriptedModelServer;
let worker: ChildProcess;
let client: SessionClient;
let metricsPort: number;
const lines: string[] = [];
const taskQueue = uniqueId('prod');
let exited: Promise<number | null>;

function waitForLine(pattern: RegExp, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const deadline = Date.now() + timeoutMs;
    const check = () => {
      const hit = lines.find((l) => pattern.test(l));
      if (hit) return resolvePromise(hit);
      if (Date.now() > deadline || worker.exitCode !== null) {
        return reject(new Error(`no line ${String(pattern)}; got:\n${lines.join('\n')}`));
      }
      setTimeout(check, 100);
    };
    check();
  });
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
  execFileSync('npm', ['run', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] });
  expect(existsSync('dist/workflow-bundle.js')).toBe(true);
  models = await ScriptedModelServer.start();
  models.on(MODEL.extraction, { json: { terms: ['deploy'] } });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  models.on(MODEL.agent, { content: 'Deployed.' });
  [metricsPort] = (await freePorts(1)) as [number];
  worker = spawn(process.execPath, ['dist/worker/main.js'], {
    env: {
      PATH: process.env.PATH,
      HOME: mkdtempSync(join(tmpdir(), 'prod-home-')),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      HARNESS_TASK_QUEUE: taskQueue,
      HARNESS_DATA_DIR: mkdtempSync(join(tmpdir(), 'prod-data-')),
      HARNESS_METRICS_PORT: String(metricsPort),
      HARNESS_METRICS_HOST: '127.0.0.1',
      HARNESS_LOG_FORMAT: 'json',
      HARNESS_LOG_LEVEL: 'DEBUG',
      OPENAI_BASE_URL: models.baseURL,
      OPENAI_API_KEY: 'test',
      HARNESS_EXTRACTION_MODEL: MODEL.extraction,
      HARNESS_ORCHESTRATION_MODEL: MODEL.orchestration,
      HARNESS_RELEVANCE_MODEL: MODEL.relevance,
      HARNESS_COMPACTION_MODEL: MODEL.compaction,
      HARNESS_AGENT_MODEL: MODEL.agent,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  exited = new Promise((r) => worker.once('exit', (code) => r(code)));
  let partial = '';
  const collect = (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter(Boolean));
  };
  worker.stdout?.on('data', collect);
  worker.stderr?.on('data', collect);
  await waitForLine(/worker polling task queue/);
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue, env: {} });
}, 300_000);

afterAll(async () => {
  await client?.close();
  if (worker && worker.exitCode === null) worker.kill('SIGKILL');
  await models?.close();
});

describe('the built worker', () => {
  it('loads the prebuilt bundle and processes a Session', async () => {
    const bundle = await waitForLine(/workflows: /);
    expect((JSON.parse(bundle) as { msg: string }).msg).toBe(
      `workflows: prebuilt bundle ${resolve('dist/workflow-bundle.js')}`,
    );
    const sessionId = uniqueId('prod');
    const result = await client.submit(sessionId, { text: 'Ship the worker image' }, { wait: true });
    expect(result.decision?.decision).toBe('initialize');
    expect(result.decision?.agent?.outcome).toBe('replied');

    // JSON logs: the SDK's activity logs carry the workflow and run ids.
    const { runId } = await client.describe(sessionId);
    const activityLog = await waitForLine(new RegExp(`"workflowId":"session:${sessionId}"`));
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
    expect(scrape).toMatch(new RegExp(`temporal_activity_execution_latency[^\\n]*task_queue="${taskQueue}"`));
  });

  it('drains and exits 0 on SIGTERM', async () => {
    worker.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
