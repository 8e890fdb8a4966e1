/**
 * Token and cost accounting and budgets on the real server: a worker process configured through the
 * environment (a price table, Prometheus metrics), every role served by the scripted
 * OpenAI-compatible model server with fixed `usage` blocks, cached tokens included.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../client/session-client.js';
import { MODEL, uniqueId, waitFor } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';
import { freePorts } from './support/ports.js';
import { spawnWorker, type WorkerProcess } from './support/spawn-worker.js';

/** USD per million tokens. The extraction model has no row: its calls have tokens and no cost. */
const PRICE = {
  relevance: { input: 1, output: 2 },
  orchestration: { input: 2, cached: 1, output: 8 },
  agent: { input: 3, cached: 0.5, output: 15 },
};
const PRICES = {
  [MODEL.relevance]: PRICE.relevance,
  [MODEL.orchestration]: PRICE.orchestration,
  [MODEL.agent]: PRICE.agent,
};
const USAGE = {
  relevance: { prompt: 300, completion: 5, cached: 100 },
  extraction: { prompt: 400, completion: 10 },
  orchestration: { prompt: 200, completion: 20, cached: 50 },
  agent: { prompt: 1000, completion: 50, cached: 600, reasoning: 20 },
};

let models: ScriptedModelServer;
let worker: WorkerProcess;
let client: SessionClient;
let metricsPort: number;
const taskQueue = uniqueId('acct');

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  models.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 }, usage: USAGE.relevance });
  models.on(MODEL.extraction, { json: { terms: ['deploy'] }, usage: USAGE.extraction });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] }, usage: USAGE.orchestration });
  models.on(MODEL.agent, { content: 'Done.', usage: USAGE.agent });
  [metricsPort] = (await freePorts(1)) as [number];
  worker = await spawnWorker({
    taskQueue,
    models,
    env: {
      HARNESS_MODEL_PRICES: JSON.stringify(PRICES),
      HARNESS_METRICS_PORT: String(metricsPort),
      HARNESS_BUDGET_MAX_SESSION_TOKENS: '1000000',
    },
  });
  await worker.line(/worker ready/);
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue, env: {} });
});

afterAll(async () => {
  await client?.close();
  await worker?.kill();
  await models?.close();
});

const cost = (
  u: { prompt: number; completion: number; cached?: number },
  p: { input: number; cached?: number; output: number },
) => ((u.prompt - (u.cached ?? 0)) * p.input + (u.cached ?? 0) * (p.cached ?? p.input) + u.completion * p.output) / 1e6;

describe('accounting', () => {
  it('sums tokens per role in the record, prices them, carries Session totals across continue-as-new and exports them', async () => {
    const sessionId = uniqueId('acct');
    // continueAsNewAfter 1: the Session continues as new after each input.
    const first = await client.submit(
      sessionId,
      { text: 'Ship the worker image to staging' },
      { wait: true, start: { settings: { continueAsNewAfter: 1 } } },
    );
    const record = first.decision;
    expect(record?.decision).toBe('initialize');
    expect(record?.agent?.outcome).toBe('replied');
    const byRole = record?.usage?.byRole ?? {};
    expect(Object.keys(byRole).sort()).toEqual(['agent', 'extraction', 'orchestration']);
    expect(byRole.agent).toMatchObject({
      calls: 1,
      promptTokens: 1000,
      completionTokens: 50,
      cachedTokens: 600,
      reasoningTokens: 20,
      unpricedCalls: 0,
    });
    expect(byRole.agent?.costUsd).toBeCloseTo(cost(USAGE.agent, PRICE.agent), 12);
    expect(byRole.orchestration?.costUsd).toBeCloseTo(cost(USAGE.orchestration, PRICE.orchestration), 12);
    // No price for the extraction model: its tokens count, its cost is unknown, never a guess.
    expect(byRole.extraction).toMatchObject({
      promptTokens: 400,
      completionTokens: 10,
      costUsd: null,
      unpricedCalls: 1,
    });
    expect(record?.usage?.total).toMatchObject({
      calls: 3,
      promptTokens: 1600,
      completionTokens: 80,
      cachedTokens: 650,
      unpricedCalls: 1,
    });
    expect(record?.usage?.total.costUsd).toBeCloseTo(
      cost(USAGE.agent, PRICE.agent) + cost(USAGE.orchestration, PRICE.orchestration),
      12,
    );
    expect(byRole.agent?.latencyMs).toBeGreaterThanOrEqual(0);

    const second = await client.submit(sessionId, { text: 'Also tag the staging image' }, { wait: true });
    expect(second.decision?.decision).toBe('continue');
    expect(Object.keys(second.decision?.usage?.byRole ?? {}).sort()).toEqual(['agent', 'relevance']);

    // The Session's totals span both inputs, though each ran in its own run.
    const view = await waitFor(
      () => client.snapshot(sessionId),
      (v) => v.run >= 2 && (v.usage?.total.calls ?? 0) === 5,
    );
    expect(view.usage?.total).toMatchObject({
      calls: 5,
      promptTokens: 1600 + 300 + 1000,
      completionTokens: 80 + 5 + 50,
      cachedTokens: 650 + 100 + 600,
      reasoningTokens: 40,
      unpricedCalls: 1,
    });
    expect(view.usage?.byRole.agent?.calls).toBe(2);

    // Prometheus: tokens by role, model and kind, and the cost counter in micro-USD.
    const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const sample = (name: string, labels: string[]) =>
      scrape
        .split('\n')
        .filter((l) => l.startsWith(`${name}{`) && labels.every((x) => l.includes(x)))
        .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    const agent = ['role="agent"', `model="${MODEL.agent}"`];
    expect(sample('harness_model_tokens_total', [...agent, 'kind="prompt"'])).toBe(2000);
    expect(sample('harness_model_tokens_total', [...agent, 'kind="cached"'])).toBe(1200);
    expect(sample('harness_model_tokens_total', [...agent, 'kind="reasoning"'])).toBe(40);
    expect(sample('harness_model_tokens_total', ['role="extraction"', 'kind="completion"'])).toBe(10);
    expect(sample('harness_model_cost_microusd_total', agent)).toBe(
      2 * Math.round(cost(USAGE.agent, PRICE.agent) * 1e6),
    );
    // No cost series for a model without a price.
    expect(scrape).not.toMatch(/harness_model_cost_microusd_total\{[^}]*role="extraction"/);
  });

  it('ends a turn budget-exceeded, tells the caller, answers helpers locally, and runs the next input once the budget is raised', async () => {
    const sessionId = uniqueId('budget');
    // Extraction alone spends 410 tokens: orchestration then runs on the local provider and the
    // agent's step is refused.
    const first = await client.submit(
      sessionId,
      { text: 'Ship the worker image to staging' },
      { wait: true, start: { settings: { budget: { turnTokens: 300 } } } },
    );
    const record = first.decision;
    expect(record?.agent?.outcome).toBe('budget-exceeded');
    expect(record?.agent?.reason).toBe('turn token budget exhausted (410 of 300 tokens)');
    expect(record?.fallbacks).toContain(
      'budget: orchestration answered by the local provider (turn token budget exhausted (410 of 300 tokens))',
    );
    expect(record?.usage?.byRole.orchestration).toMatchObject({ calls: 1, promptTokens: 0, costUsd: 0 });
    expect(record?.usage?.byRole.agent).toBeUndefined();
    // Nothing is lost: the input is bound and its goals set.
    const history = await client.history(sessionId);
    expect(history.map((h) => h.text)).toEqual(['Ship the worker image to staging']);
    expect((await client.goals(sessionId)).session?.text).toBe('Ship the worker image to staging');

    await client.command(sessionId, { name: 'set-budget', args: { turnTokens: 5000 } });
    const second = await client.submit(sessionId, { text: 'Also tag the staging image' }, { wait: true });
    expect(second.decision?.agent?.outcome).toBe('replied');
    expect(second.decision?.fallbacks).toEqual([]);
    expect((await client.snapshot(sessionId)).settings.budget).toEqual({ turnTokens: 5000 });
  });
});
