/** How an activity calls a role model: within the attempt's time budget, with failures typed for Temporal. */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../contract/failures.js';
import { exhausted, type Budget, type BudgetCheck, type ModelUsage } from '../contract/usage.js';
import { toModelFailure } from '../models/model-errors.js';
import { costOf, type PriceTable } from '../models/prices.js';
import type { CallOptions, CallUsage, Role, RoleModels } from '../models/roles.js';
import { recordModelCall, recordModelConfigError, recordModelUsage } from './metrics.js';

/** Time left for one model call inside this activity attempt, and its cancellation signal. */
export function callOptions(): CallOptions {
  const ctx = Context.current();
  const budget = ctx.info.startToCloseTimeoutMs;
  // Leave a little of the attempt's budget so the model client's own timeout fires first and the
  // failure is classified as a model timeout rather than a bare activity timeout.
  const timeoutMs = Math.max(100, budget > 1_000 ? budget - 250 : Math.floor(budget * 0.8));
  return { timeoutMs, signal: ctx.cancellationSignal };
}

/** Calls a role model, timing it (harness_model_latency by role and outcome) and typing its failure. */
export async function asModelCall<T>(role: Role, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    const result = await fn();
    recordModelCall(role, 'ok', performance.now() - started);
    return result;
  } catch (err) {
    // A cancelled attempt (worker shutdown, workflow cancelled, interrupt) is not a model failure.
    if (Context.current().cancellationSignal.aborted) {
      recordModelCall(role, 'cancelled', performance.now() - started);
      throw err;
    }
    const failure = toModelFailure(err, role);
    recordModelCall(role, failure.type ?? 'error', performance.now() - started);
    if (failure.type === FAILURE.ModelConfigError) recordModelConfigError(role);
    throw failure;
  }
}

/** What metering a model call needs from the activity's dependencies. */
export interface MeterDeps {
  models: RoleModels;
  /** The local provider, which answers helper roles once a budget is exhausted. */
  fallbackModels?: RoleModels;
  prices?: PriceTable;
  /** The worker's maximum budget: it holds whatever a Session set. */
  budgetMax?: Budget;
}

/** Why the call's budget is exhausted (Session limits held to the worker's maximum), or null. */
export function budgetExhausted(deps: MeterDeps, check: BudgetCheck | undefined): string | null {
  // Sessions started before budgets existed send no check: nothing is spent as far as they know.
  return check ? exhausted(check, deps.budgetMax ?? {}) : null;
}

/**
 * Calls a role model as asModelCall does, and measures it: tokens as the provider reports them,
 * latency, and cost from the price table. Tokens and cost go to Prometheus as soon as the answer
 * arrives, even when the answer then proves invalid; the usage returned is the activity result's.
 * A speculative step's tokens are labelled as such when they arrive; whether the workflow then
 * adopted or discarded the step is in its own metrics (`harness_session_speculative_*`).
 */
export async function meteredCall<T>(
  role: Role,
  deps: MeterDeps,
  models: RoleModels,
  fn: (models: RoleModels, call: CallOptions) => Promise<T>,
  /** A speculative agent step (workflows/speculation.ts): its tokens are labelled `speculative="true"`. */
  speculative = false,
): Promise<{ value: T; usage: ModelUsage | undefined }> {
  let reported: CallUsage | undefined;
  const call: CallOptions = {
    ...callOptions(),
    onUsage: (usage) => {
      reported = usage;
      recordModelUsage(role, usage, costOf(usage, deps.prices ?? {}), speculative);
    },
  };
  const started = performance.now();
  const value = await asModelCall(role, () => fn(models, call));
  const latencyMs = Math.round(performance.now() - started);
  const usage = reported ? { ...reported, latencyMs, costUsd: costOf(reported, deps.prices ?? {}) } : undefined;
  return { value, usage };
}

/**
 * A helper role's call, metered; over budget it is answered by the local provider, and its usage
 * says so (`budgetFallback`), so the Session records the fallback.
 */
export async function helperCall<T extends object>(
  role: Exclude<Role, 'agent'>,
  deps: MeterDeps,
  budget: BudgetCheck | undefined,
  fn: (models: RoleModels, call: CallOptions) => Promise<T>,
): Promise<T & { usage?: ModelUsage }> {
  const reason = budgetExhausted(deps, budget);
  if (reason !== null && !deps.fallbackModels) {
    throw ApplicationFailure.nonRetryable(
      `${role}: ${reason}, and this worker has no local provider to fall back to`,
      FAILURE.ModelNotConfigured,
    );
  }
  const models = reason !== null && deps.fallbackModels ? deps.fallbackModels : deps.models;
  const { value, usage } = await meteredCall(role, deps, models, fn);
  if (!usage) return value;
  return { ...value, usage: reason === null ? usage : { ...usage, budgetFallback: reason } };
}
