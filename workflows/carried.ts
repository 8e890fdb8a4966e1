/**
 * The final check before continue-as-new: the whole carried JSON stays under CARRIED_CAP. Lists are
 * trimmed in this order: history, decisions, transcript, out-of-scope requests, phases (never the
 * current one), control records, sub-sessions, and last the de-duplication window. The queue and
 * the turn in progress are never trimmed: they are work the Session has promised to do.
 *
 * Pure module: safe to import from workflow code.
 */
import { CARRIED_CAP, enforceBudget } from '../contract/budget.js';
import { forgetOldestBound } from './intake.js';
import type { SessionState } from '../contract/state.js';
import { jsonBytes } from '../contract/text.js';

/** Trims `state` to fit `cap` bytes of JSON and returns its size. */
export function capCarriedState(state: SessionState, cap: number = CARRIED_CAP): number {
  enforceBudget(state);
  let size = jsonBytes(state);
  // [list, items that must stay, how to drop n items]
  const splice = (list: unknown[]) => (n: number) => void list.splice(0, n);
  const lists: Array<[unknown[], number, (n: number) => void]> = [
    [state.history, 0, splice(state.history)],
    [state.decisions, 0, splice(state.decisions)],
    [state.transcript, 0, splice(state.transcript)],
    [state.outOfScope, 0, splice(state.outOfScope)],
    [state.phases, 1, splice(state.phases)],
    [state.controlEvents, 0, splice(state.controlEvents)],
    [state.rejections, 0, splice(state.rejections)],
    [state.recentControl, 0, splice(state.recentControl)],
    [state.children, 0, splice(state.children)],
    [state.recent, 0, (n) => forgetOldestBound(state, n)],
  ];
  for (const [list, keep, drop] of lists) {
    // Halve the list until the state fits; each step costs one serialisation.
    while (size > cap && list.length > keep) {
      drop(Math.max(1, Math.ceil((list.length - keep) / 2)));
      size = jsonBytes(state);
    }
    if (size <= cap) break;
  }
  return size;
}
