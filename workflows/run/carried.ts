/**
 * The final check before continue-as-new: the whole carried JSON stays under CARRIED_CAP. Lists are
 * trimmed in the order their CARRIED_LISTS rows give (contract/state.ts): history, decisions,
 * transcript, out-of-scope requests, phases (never the current one), control records, sub-sessions,
 * and last the de-duplication window. The queue and the turn in progress are never trimmed: they are
 * work the Session has promised to do.
 *
 * Pure module: safe to import from workflow code.
 */
import { CARRIED_CAP, enforceBudget } from '../../contract/budget.js';
import { carryRecent, forgetOldestBound } from '../ledger/intake.js';
import { CARRIED_LIST_ROWS, type SessionState } from '../../contract/state.js';
import { jsonBytes } from '../../contract/text.js';

/** The lists the cap may trim, first given up first, with the newest items each keeps. */
const TRIM_ORDER = CARRIED_LIST_ROWS.flatMap(([name, { share, cap }]) => (cap ? [{ name, share, ...cap }] : [])).sort(
  (a, b) => a.rank - b.rank,
);

/** Trims `state` to fit `cap` bytes of JSON and returns its size; the state is then ready to carry. */
export function capCarriedState(state: SessionState, cap: number = CARRIED_CAP): number {
  enforceBudget(state);
  // The de-duplication window lives in intake's index during a run: written out to be carried.
  carryRecent(state);
  let size = jsonBytes(state);
  for (const { name, share, keep } of TRIM_ORDER) {
    const list: unknown[] = state[name];
    // Bound ids leave through the de-duplication index, which must stay in step with the list.
    const drop = share === 'index' ? (n: number) => forgetOldestBound(state, n) : (n: number) => void list.splice(0, n);
    // Halve the list until the state fits; each step costs one serialisation.
    while (size > cap && list.length > keep) {
      drop(Math.max(1, Math.ceil((list.length - keep) / 2)));
      size = jsonBytes(state);
    }
    if (size <= cap) break;
  }
  return size;
}
