/**
 * Byte budgets for the state a Session carries across continue-as-new. Temporal refuses a
 * continue-as-new input over 2 MB (and terminates the run), so counts alone are not enough: a few
 * pasted documents in Chinese can weigh more than hundreds of short English inputs. Each list is
 * trimmed oldest-first to its share of the budget, always keeping the newest item.
 *
 * Pure module: safe to import from workflow code.
 */
import type { SessionState } from './state.js';

/** UTF-8 size of a string, without TextEncoder (kept dependency-free for the workflow sandbox). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4; // a surrogate pair is one 4-byte code point
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** UTF-8 size of a value's JSON form. */
export function jsonBytes(value: unknown): number {
  return utf8Length(JSON.stringify(value) ?? '');
}

/** Cuts text to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function clipBytes(text: string, maxBytes: number): string {
  if (utf8Length(text) <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = utf8Length(char);
    if (bytes + size > maxBytes - 3) break;
    bytes += size;
    end += char.length;
  }
  return `${text.slice(0, end)}…`;
}

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
