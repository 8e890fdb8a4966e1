/** How an activity calls a role model: within the attempt's time budget, with failures typed for Temporal. */
import { Context } from '@temporalio/activity';
import { toModelFailure } from '../models/model-errors.js';
import type { CallOptions, Role } from '../models/roles.js';

/** Time left for one model call inside this activity attempt, and its cancellation signal. */
export function callOptions(): CallOptions {
  const ctx = Context.current();
  const budget = ctx.info.startToCloseTimeoutMs;
  // Leave a little of the attempt's budget so the model client's own timeout fires first and the
  // failure is classified as a model timeout rather than a bare activity timeout.
  const timeoutMs = Math.max(100, budget > 1_000 ? budget - 250 : Math.floor(budget * 0.8));
  return { timeoutMs, signal: ctx.cancellationSignal };
}

export async function asModelCall<T>(role: Role, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    // A cancelled attempt (worker shutdown, workflow cancelled) is not a model failure.
    if (Context.current().cancellationSignal.aborted) throw err;
    throw toModelFailure(err, role);
  }
}
