/** How an activity calls a role model: within the attempt's time budget, with failures typed for Temporal. */
import { Context } from '@temporalio/activity';
import { toModelFailure } from '../models/model-errors.js';
import type { CallOptions, Role } from '../models/roles.js';
import { recordModelCall } from './metrics.js';

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
    throw failure;
  }
}
