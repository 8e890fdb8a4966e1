/**
 * The price table that turns tokens into cost: per model, USD per million input, cached input and
 * output tokens. A model without a row has no cost (null), never a guessed one.
 */
import { z } from 'zod';
import { describeIssues } from '../contract/text.js';
import type { ModelUsage } from '../contract/usage.js';

const perMillion = z.number({ error: 'must be a number (USD per million tokens)' }).nonnegative();

/** One model's prices in USD per million tokens. `cached` defaults to `input` (no cache discount). */
export const ModelPrice = z.object({ input: perMillion, cached: perMillion.optional(), output: perMillion }).strict();
export type ModelPrice = z.infer<typeof ModelPrice>;

/** Prices by model name, as the provider names the model (`HARNESS_MODEL`, `HARNESS_<ROLE>_MODEL`). */
export const PriceTable = z.record(z.string().min(1), ModelPrice);
export type PriceTable = z.infer<typeof PriceTable>;

/** The local provider runs on the worker: its calls are free, a known price rather than an unknown one. */
export const LOCAL_MODEL = 'local';

/** Parses a price table from JSON text; `source` names where it came from in the error. */
export function parsePriceTable(text: string, source: string): PriceTable {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = PriceTable.safeParse(raw);
  if (!parsed.success) {
    throw new Error(
      `${source} is not a price table ({ "<model>": { "input": n, "cached"?: n, "output": n } } in USD per million tokens): ${describeIssues(parsed.error)}`,
    );
  }
  return parsed.data;
}

/** The cost of one call in USD, or null when the table has no price for its model. */
export function costOf(usage: Omit<ModelUsage, 'costUsd' | 'latencyMs'>, prices: PriceTable): number | null {
  if (usage.model === LOCAL_MODEL) return 0;
  const price = prices[usage.model];
  if (!price) return null;
  const cached = Math.min(usage.cachedTokens, usage.promptTokens);
  const uncached = usage.promptTokens - cached;
  return (
    (uncached * price.input + cached * (price.cached ?? price.input) + usage.completionTokens * price.output) / 1e6
  );
}
