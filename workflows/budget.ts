/**
 * Byte budgets for the state a Session carries across continue-as-new. Temporal refuses a
 * continue-as-new input over 2 MB (and terminates the run), so counts alone are not enough: a few
 * pasted documents in Chinese can weigh more than hundreds of short English inputs. Each list is
 * trimmed oldest-first to its share of the budget, always keeping the newest item.
 *
 * Pure module: safe to import from workflow code.
 */
import type { SessionState } from './state.js';
import { jsonBytes } from './text.js';

/** Shares of the carried-state budget, in bytes. Together they stay well under Temporal's 2 MB. */
export const BUDGET = {
  /** Pending inputs, resources included. Beyond it new inputs are refused ("queue is full"). */
  queue: 512 * 1024,
  history: 256 * 1024,
  decisions: 256 * 1024,
  outOfScope: 128 * 1024,
  phases: 128 * 1024,
  recent: 192 * 1024,
  /** Longest failure reason kept in a decision record. */
  reason: 500,
} as const;

/** Drops the oldest items while the list's JSON exceeds `maxBytes`; the newest item always stays. */
export function trimToBytes<T>(list: T[], maxBytes: number): void {
  let total = list.reduce((sum, item) => sum + jsonBytes(item), 0);
  while (list.length > 1 && total > maxBytes) total -= jsonBytes(list.shift());
}

/** Trims every list of the state to its byte share. Called after each input and before continue-as-new. */
export function enforceBudget(state: SessionState): void {
  trimToBytes(state.history, BUDGET.history);
  trimToBytes(state.decisions, BUDGET.decisions);
  trimToBytes(state.outOfScope, BUDGET.outOfScope);
  trimToBytes(state.phases, BUDGET.phases);
  // Only ids of inputs already bound may be forgotten: a queued input must stay de-duplicated.
  let bytes = jsonBytes(state.recent);
  while (bytes > BUDGET.recent && state.recent.length > 0 && (state.recent[0]?.[1] ?? 0) <= state.boundSeq) {
    bytes -= jsonBytes(state.recent.shift()) + 1;
  }
}
