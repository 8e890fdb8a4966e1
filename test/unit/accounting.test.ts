import { describe, expect, it } from 'vitest';
import { patchBudget } from '../../workflows/control/commands.js';
import { makeMeter } from '../../workflows/ledger/accounting.js';
import { initialState } from '../../workflows/run/state.js';
import { newRecord } from '../../workflows/ledger/decision-records.js';
import {
  addUsage,
  budgetCheck,
  describeSum,
  emptySum,
  emptyTotals,
  exhausted,
  type ModelUsage,
} from '../../contract/usage.js';
import { costOf, parsePriceTable } from '../../models/prices.js';
import { usageOf } from '../../models/openai-models.js';
import { loadPriceTable } from '../../worker/config.js';

const call = (over: Partial<ModelUsage> = {}): ModelUsage => ({
  model: 'm',
  promptTokens: 100,
  completionTokens: 10,
  cachedTokens: 40,
  reasoningTokens: 5,
  latencyMs: 12.4,
  costUsd: 0.5,
  ...over,
});

describe('summing usage', () => {
  it('adds per role and in all, tokens by kind and latency', () => {
    const totals = emptyTotals();
    addUsage(totals, 'agent', call());
    addUsage(totals, 'agent', call({ promptTokens: 1, completionTokens: 2, cachedTokens: 0, reasoningTokens: 0 }));
    addUsage(totals, 'relevance', call({ costUsd: 0.25 }));
    expect(totals.byRole.agent).toMatchObject({ calls: 2, promptTokens: 101, completionTokens: 12, cachedTokens: 40 });
    expect(totals.byRole.agent?.costUsd).toBe(1);
    expect(totals.total).toMatchObject({ calls: 3, promptTokens: 201, reasoningTokens: 10, latencyMs: 36 });
    expect(totals.total.costUsd).toBe(1.25);
  });

  it('keeps cost null while no call was priced, and counts the unpriced calls of a partial sum', () => {
    const sum = emptySum();
    expect(sum.costUsd).toBe(0);
    const totals = emptyTotals();
    addUsage(totals, 'extraction', call({ costUsd: null }));
    expect(totals.total.costUsd).toBeNull();
    expect(totals.total.unpricedCalls).toBe(1);
    addUsage(totals, 'agent', call({ costUsd: 0.1 }));
    expect(totals.total.costUsd).toBe(0.1);
    expect(totals.total.unpricedCalls).toBe(1);
    expect(totals.byRole.extraction?.costUsd).toBeNull();
    expect(describeSum(totals.total)).toContain('+ 1 unpriced calls');
  });
});

describe('pricing', () => {
  const prices = parsePriceTable(
    JSON.stringify({ 'gpt-x': { input: 2, cached: 0.5, output: 8 }, plain: { input: 1, output: 1 } }),
    'test',
  );

  it('prices uncached, cached and output tokens per million', () => {
    const usage = { model: 'gpt-x', promptTokens: 1_000, completionTokens: 100, cachedTokens: 400, reasoningTokens: 0 };
    expect(costOf(usage, prices)).toBeCloseTo((600 * 2 + 400 * 0.5 + 100 * 8) / 1e6, 15);
  });

  it('charges cached tokens at the input price when the table gives no cached price', () => {
    const usage = { model: 'plain', promptTokens: 10, completionTokens: 0, cachedTokens: 10, reasoningTokens: 0 };
    expect(costOf(usage, prices)).toBeCloseTo(10 / 1e6, 15);
  });

  it('has no cost for an unknown model and a zero cost for the local provider', () => {
    const usage = { model: 'unknown', promptTokens: 10, completionTokens: 1, cachedTokens: 0, reasoningTokens: 0 };
    expect(costOf(usage, prices)).toBeNull();
    expect(costOf({ ...usage, model: 'local' }, prices)).toBe(0);
  });

  it('refuses a malformed table with the variable and the field named', () => {
    expect(() => parsePriceTable('{"m": {"input": -1, "output": 2}}', 'HARNESS_MODEL_PRICES')).toThrow(
      /HARNESS_MODEL_PRICES is not a price table .*m\.input/,
    );
    expect(() => parsePriceTable('{"m": {"input": 1}}', 'HARNESS_MODEL_PRICES')).toThrow(/m\.output/);
    expect(() => parsePriceTable('not json', 'HARNESS_MODEL_PRICES')).toThrow(/HARNESS_MODEL_PRICES is not valid JSON/);
    expect(() => loadPriceTable('/no/such/prices.json')).toThrow(
      /HARNESS_MODEL_PRICES: cannot read \/no\/such\/prices\.json/,
    );
    expect(loadPriceTable(undefined)).toEqual({});
  });

  it('reads usage from a completion, cached and reasoning tokens included, under the requested model name', () => {
    const usage = usageOf(
      {
        model: 'gpt-x-2025-01-01',
        usage: {
          prompt_tokens: 120,
          completion_tokens: 30,
          total_tokens: 150,
          prompt_tokens_details: { cached_tokens: 64 },
          completion_tokens_details: { reasoning_tokens: 12 },
        },
      },
      'gpt-x',
    );
    expect(usage).toEqual({
      model: 'gpt-x',
      promptTokens: 120,
      completionTokens: 30,
      cachedTokens: 64,
      reasoningTokens: 12,
    });
    expect(usageOf({ model: 'x' }, 'x')).toMatchObject({ promptTokens: 0, completionTokens: 0 });
  });
});

describe('budgets', () => {
  const spent = (turnTokens: number, sessionTokens: number, turnCost = 0, sessionCost = 0) => {
    const turn = { ...emptySum(), promptTokens: turnTokens, costUsd: turnCost };
    const session = { ...emptySum(), promptTokens: sessionTokens, costUsd: sessionCost };
    return { turn, session };
  };

  it('is exhausted once spending reaches a limit, per turn and per Session, tokens and cost', () => {
    const { turn, session } = spent(300, 900, 0.02, 0.5);
    expect(exhausted(budgetCheck({}, turn, session))).toBeNull();
    expect(exhausted(budgetCheck({ turnTokens: 301 }, turn, session))).toBeNull();
    expect(exhausted(budgetCheck({ turnTokens: 300 }, turn, session))).toBe(
      'turn token budget exhausted (300 of 300 tokens)',
    );
    expect(exhausted(budgetCheck({ sessionTokens: 800 }, turn, session))).toBe(
      'session token budget exhausted (900 of 800 tokens)',
    );
    expect(exhausted(budgetCheck({ turnCostUsd: 0.01 }, turn, session))).toBe(
      'turn cost budget exhausted ($0.02 of $0.01)',
    );
    expect(exhausted(budgetCheck({ sessionCostUsd: 0.5 }, turn, session))).toMatch(/^session cost budget exhausted/);
  });

  it("holds a Session's budget to the worker's maximum, set or not", () => {
    const { turn, session } = spent(300, 900);
    expect(exhausted(budgetCheck({}, turn, session), { sessionTokens: 500 })).toBe(
      'session token budget exhausted (900 of 500 tokens)',
    );
    expect(exhausted(budgetCheck({ sessionTokens: 10_000 }, turn, session), { sessionTokens: 500 })).not.toBeNull();
    expect(exhausted(budgetCheck({ sessionTokens: 500 }, turn, session), { sessionTokens: 10_000 })).not.toBeNull();
  });

  it('set-budget replaces given limits, removes null ones and keeps the rest', () => {
    expect(patchBudget({ turnTokens: 10, sessionCostUsd: 1 }, { turnTokens: 20 })).toEqual({
      turnTokens: 20,
      sessionCostUsd: 1,
    });
    expect(patchBudget({ turnTokens: 10, sessionCostUsd: 1 }, { sessionCostUsd: null })).toEqual({ turnTokens: 10 });
    expect(patchBudget(undefined, { sessionTokens: 5 })).toEqual({ sessionTokens: 5 });
  });
});

describe('the meter', () => {
  it('charges the Session and the open record, names a budget fallback once, and checks only when patched', () => {
    const state = initialState({ sessionId: 'meter', settings: { budget: { turnTokens: 50 } } });
    const record = newRecord({ seq: 1, messageId: 'm1' });
    const meter = makeMeter(state, true);
    meter.open(record);
    meter.charge('extraction', call({ promptTokens: 60, completionTokens: 0 }));
    meter.charge('orchestration', call({ model: 'local', promptTokens: 0, completionTokens: 0, budgetFallback: 'x' }));
    meter.charge('orchestration', call({ model: 'local', promptTokens: 0, completionTokens: 0, budgetFallback: 'x' }));
    meter.charge('agent', undefined);
    expect(state.usage.total.calls).toBe(3);
    expect(record.usage?.byRole.extraction?.promptTokens).toBe(60);
    expect(record.fallbacks).toEqual(['budget: orchestration answered by the local provider (x)']);
    expect(exhausted(meter.check() ?? budgetCheck({}, emptySum(), emptySum()))).toBe(
      'turn token budget exhausted (60 of 50 tokens)',
    );
    expect(makeMeter(state, false).check()).toBeUndefined();
  });
});
