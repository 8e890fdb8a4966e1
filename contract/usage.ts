/**
 * Token and cost accounting: what one model call used (reported by the activity that made it), the
 * sums a decision record and a Session keep of them, and the budgets that cap them.
 *
 * Tokens follow the OpenAI usage fields: `cachedTokens` are part of `promptTokens`
 * (`prompt_tokens_details.cached_tokens`) and `reasoningTokens` part of `completionTokens`
 * (`completion_tokens_details.reasoning_tokens`); a budget counts prompt plus completion tokens.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';

const tokens = z.number().int().nonnegative();

/** One model call as its activity reports it. `costUsd` is null when the price table has no row for the model. */
export const ModelUsage = z.object({
  /** The model name the provider answered for; `local` for the offline provider. */
  model: z.string(),
  promptTokens: tokens,
  completionTokens: tokens,
  cachedTokens: tokens,
  reasoningTokens: tokens,
  latencyMs: z.number().nonnegative(),
  costUsd: z.number().nonnegative().nullable(),
  /** Set when a budget was exhausted and a helper role was answered by the local provider instead. */
  budgetFallback: z.string().optional(),
});
export type ModelUsage = z.infer<typeof ModelUsage>;

/**
 * A sum of model calls. `costUsd` sums the priced calls; it is null only when there were calls and
 * none of them was priced, and `unpricedCalls` says how many calls the cost leaves out.
 */
export const UsageSum = z.object({
  calls: z.number().int().nonnegative(),
  promptTokens: tokens,
  completionTokens: tokens,
  cachedTokens: tokens,
  reasoningTokens: tokens,
  latencyMs: z.number().nonnegative(),
  costUsd: z.number().nonnegative().nullable(),
  unpricedCalls: z.number().int().nonnegative(),
});
export type UsageSum = z.infer<typeof UsageSum>;

/**
 * Speculative agent steps that were discarded (workflows/agent/speculation.ts): sent beside the relevance
 * call, then not used because the decision was not `continue` or the request had changed.
 */
export const SpeculativeSum = z.object({
  /** Steps discarded. */
  discarded: z.number().int().nonnegative(),
  /** Of them, cancelled before their usage was known (their tokens, if any, are not in `usage`). */
  unknown: z.number().int().nonnegative(),
  /** The discarded steps whose usage is known; these calls are also in `total` and `byRole.agent`. */
  usage: UsageSum,
});
export type SpeculativeSum = z.infer<typeof SpeculativeSum>;

/**
 * Sums by model role (`relevance`, `extraction`, `orchestration`, `compaction`, `agent`) and in all;
 * `speculative` is the part of them spent on discarded speculative steps (absent while there were none).
 */
export const UsageTotals = z.object({
  total: UsageSum,
  byRole: z.record(z.string(), UsageSum),
  speculative: SpeculativeSum.optional(),
});
export type UsageTotals = z.infer<typeof UsageTotals>;

/** A sum of no calls. */
export function emptySum(): UsageSum {
  return {
    calls: 0,
    promptTokens: 0,
    completionTokens: 0,
    cachedTokens: 0,
    reasoningTokens: 0,
    latencyMs: 0,
    costUsd: 0,
    unpricedCalls: 0,
  };
}

/** Totals of no calls. */
export function emptyTotals(): UsageTotals {
  return { total: emptySum(), byRole: {} };
}

/** Adds one call to a sum, in place. */
export function addToSum(sum: UsageSum, usage: ModelUsage): void {
  sum.calls++;
  sum.promptTokens += usage.promptTokens;
  sum.completionTokens += usage.completionTokens;
  sum.cachedTokens += usage.cachedTokens;
  sum.reasoningTokens += usage.reasoningTokens;
  sum.latencyMs += Math.round(usage.latencyMs);
  if (usage.costUsd === null) {
    sum.unpricedCalls++;
    if (sum.unpricedCalls === sum.calls) sum.costUsd = null;
  } else {
    sum.costUsd = (sum.costUsd ?? 0) + usage.costUsd;
  }
}

/** Adds one call of `role` to totals, in place. */
export function addUsage(totals: UsageTotals, role: string, usage: ModelUsage): void {
  addToSum(totals.total, usage);
  addToSum((totals.byRole[role] ??= emptySum()), usage);
}

/**
 * Adds one discarded speculative step of `role` to totals, in place: its usage when known (it was
 * spent like any call's, so it counts in `total` and the role too), or one more step of unknown usage.
 */
export function addDiscarded(totals: UsageTotals, role: string, usage: ModelUsage | undefined): void {
  const speculative = (totals.speculative ??= { discarded: 0, unknown: 0, usage: emptySum() });
  speculative.discarded++;
  if (!usage) {
    speculative.unknown++;
    return;
  }
  addUsage(totals, role, usage);
  addToSum(speculative.usage, usage);
}

/** The tokens a budget counts: prompt plus completion (cached and reasoning tokens are inside them). */
export function budgetTokens(sum: UsageSum): number {
  return sum.promptTokens + sum.completionTokens;
}

/** Token and cost limits per turn (one input's processing) and per Session. Unset = unlimited. */
export const Budget = z
  .object({
    turnTokens: z.number().int().positive().optional(),
    sessionTokens: z.number().int().positive().optional(),
    turnCostUsd: z.number().positive().optional(),
    sessionCostUsd: z.number().positive().optional(),
  })
  .strict();
export type Budget = z.infer<typeof Budget>;

/** What a model-call activity is told about its Session's budget: what is spent, and the Session's limits. */
export const BudgetCheck = z
  .object({
    limits: Budget,
    turn: z.object({ tokens: z.number().nonnegative(), costUsd: z.number().nonnegative() }).strict(),
    session: z.object({ tokens: z.number().nonnegative(), costUsd: z.number().nonnegative() }).strict(),
  })
  .strict();
export type BudgetCheck = z.infer<typeof BudgetCheck>;

/** The budget check an activity gets, from the turn's and the Session's sums. */
export function budgetCheck(limits: Budget, turn: UsageSum, session: UsageSum): BudgetCheck {
  return {
    limits,
    turn: { tokens: budgetTokens(turn), costUsd: turn.costUsd ?? 0 },
    session: { tokens: budgetTokens(session), costUsd: session.costUsd ?? 0 },
  };
}

/** The tighter of two limits; undefined when neither is set. */
function tighter(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

/**
 * Why the budget is exhausted, or null when it is not. `max` is the worker's maximum, which holds
 * whatever the Session set. A budget is checked before each call, so the call that crosses a limit
 * completes and the next one is refused. Cost counts priced calls only.
 */
export function exhausted(check: BudgetCheck, max: Budget = {}): string | null {
  const rows: Array<[string, number, number | undefined, string]> = [
    ['turn token budget', check.turn.tokens, tighter(check.limits.turnTokens, max.turnTokens), 'tokens'],
    ['session token budget', check.session.tokens, tighter(check.limits.sessionTokens, max.sessionTokens), 'tokens'],
    ['turn cost budget', check.turn.costUsd, tighter(check.limits.turnCostUsd, max.turnCostUsd), 'USD'],
    ['session cost budget', check.session.costUsd, tighter(check.limits.sessionCostUsd, max.sessionCostUsd), 'USD'],
  ];
  for (const [name, spent, limit, unit] of rows) {
    if (limit !== undefined && spent >= limit) {
      const shown = unit === 'USD' ? `$${round6(spent)} of $${limit}` : `${spent} of ${limit} tokens`;
      return `${name} exhausted (${shown})`;
    }
  }
  return null;
}

function round6(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}

/** A sum in one line: `1234 tokens (prompt 1000, cached 200, completion 234, reasoning 0) · $0.0012 · 3 calls`. */
export function describeSum(sum: UsageSum): string {
  const cost =
    sum.costUsd === null
      ? 'cost unknown (no price)'
      : `$${sum.costUsd.toFixed(6)}${sum.unpricedCalls > 0 ? ` + ${sum.unpricedCalls} unpriced calls` : ''}`;
  return (
    `${budgetTokens(sum)} tokens (prompt ${sum.promptTokens}, cached ${sum.cachedTokens}, ` +
    `completion ${sum.completionTokens}, reasoning ${sum.reasoningTokens}) · ${cost} · ${sum.calls} calls`
  );
}
