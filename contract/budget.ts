/**
 * Byte bounds for the state a Session carries across continue-as-new and returns from queries.
 * Temporal refuses a continue-as-new input or a workflow task completion over its gRPC limit (the
 * run is terminated or its task fails forever), so counts alone are not enough: a few pasted
 * documents in Chinese can weigh more than hundreds of short English inputs.
 *
 * Every list has its own share (CARRIED_LISTS in state.ts), trimmed oldest-first (the newest item
 * stays), every free text is clipped where it enters state, and a final check keeps the whole
 * carried JSON under CARRIED_CAP, trimming history and decisions first and never the queue.
 *
 * Pure module: safe to import from workflow code.
 */
import { CARRIED_LIST_ROWS, type CARRIED_LISTS, type SessionState } from './state.js';
import { clipBytes, jsonBytes } from './text.js';

/** The carried state's hard cap. Temporal's limit is 2 MB per payload (4 MB per gRPC message). */
export const CARRIED_CAP = 1024 * 1024;

type Rows = typeof CARRIED_LISTS;

/** Shares of the carried state, in bytes. Their sum exceeds the cap on purpose: the cap decides last. */
export const BUDGET = {
  /** One share per carried list (CARRIED_LISTS), e.g. `BUDGET.queue`, `BUDGET.history`. */
  ...(Object.fromEntries(CARRIED_LIST_ROWS.map(([name, row]) => [name, row.bytes])) as {
    [K in keyof Rows]: Rows[K]['bytes'];
  }),
  /** One goal's text (the full input stays in history while it lasts). */
  goal: 16 * 1024,
  /** One goal's resource references. */
  goalResources: 8 * 1024,
  /** A sub-session's goal as remembered for routing. */
  childGoal: 1024,
  /** An earlier phase's goal text. */
  pastGoal: 2 * 1024,
  /** Longest failure or rejection reason kept. */
  reason: 500,
} as const;

/** Drops the oldest items while the list's JSON exceeds `maxBytes`; the newest item always stays. */
export function trimToBytes<T>(list: T[], maxBytes: number): void {
  let total = list.reduce((sum, item) => sum + jsonBytes(item) + 1, 0);
  while (list.length > 1 && total > maxBytes) total -= jsonBytes(list.shift()) + 1;
}

/** Trims every list of the state to its byte share. Called after each input and before continue-as-new. */
export function enforceBudget(state: SessionState): void {
  const current = state.phases.at(-1);
  for (const goal of [state.goals.session, state.goals.phase, current?.goal]) {
    if (!goal) continue;
    goal.text = clipBytes(goal.text, BUDGET.goal);
    trimToBytes(goal.resources, BUDGET.goalResources);
  }
  for (const phase of state.phases.slice(0, -1)) {
    phase.goal.text = clipBytes(phase.goal.text, BUDGET.pastGoal);
    phase.goal.resources = [];
    if (phase.summary) phase.summary = clipBytes(phase.summary, BUDGET.pastGoal * 2);
  }
  for (const child of state.children) child.goal = clipBytes(child.goal, BUDGET.childGoal);
  for (const [name, row] of CARRIED_LIST_ROWS) if (row.share === 'trim') trimToBytes<unknown>(state[name], row.bytes);
}

/** A reason or note as records keep it. */
export function clipReason(text: string): string {
  return clipBytes(text, BUDGET.reason);
}
