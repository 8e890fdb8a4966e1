/**
 * The Session's meter: every model call's usage, as its activity reported it, is added to the
 * Session's totals (`state.usage`, carried across continue-as-new) and to the decision record of
 * the input being processed; and every model call is told the budget it runs under.
 *
 * A relevance call judged ahead for a queued input (lookahead.ts) counts toward the input being
 * processed when it returns: the Session's totals are exact, a record's share of them is by time.
 * A speculative agent step (speculation.ts) counts when it is adopted or discarded, toward the input
 * it was started for; a discarded one also counts in the `speculative` part.
 */
import type { DecisionRecord, SessionState } from '../../contract/state.js';
import {
  addDiscarded,
  addUsage,
  budgetCheck,
  emptySum,
  emptyTotals,
  type BudgetCheck,
  type ModelUsage,
} from '../../contract/usage.js';

export interface UsageMeter {
  /** Counts from now on toward `record` (the input being processed), until the next `open`. */
  open(record: DecisionRecord): void;
  /** Adds one call's usage; a helper answered locally over budget is named in the record's fallbacks. */
  charge(role: string, usage: ModelUsage | undefined): void;
  /** Adds one discarded speculative step: its usage when known, else one step of unknown usage. */
  discard(role: string, usage: ModelUsage | undefined): void;
  /** What the next model call is told about the budget; undefined in Sessions started before budgets. */
  check(): BudgetCheck | undefined;
}

/** The meter of a running Session; `budgets` is false in Sessions started before `patched('model-budgets')`. */
export function makeMeter(state: SessionState, budgets: boolean): UsageMeter {
  let current: DecisionRecord | null = null;
  // The turn's record is the one in state: after continue-as-new it is a new object.
  const target = (): DecisionRecord | null => state.turn?.record ?? current;
  return {
    open(record) {
      current = record;
    },
    charge(role, usage) {
      if (!usage) return;
      addUsage(state.usage, role, usage);
      const record = target();
      if (!record) return;
      addUsage((record.usage ??= emptyTotals()), role, usage);
      if (usage.budgetFallback) {
        const note = `budget: ${role} answered by the local provider (${usage.budgetFallback})`;
        if (!record.fallbacks.some((f) => f.startsWith(`budget: ${role} `))) record.fallbacks.push(note);
      }
    },
    discard(role, usage) {
      addDiscarded(state.usage, role, usage);
      const record = target();
      if (record) addDiscarded((record.usage ??= emptyTotals()), role, usage);
    },
    check() {
      if (!budgets) return undefined;
      return budgetCheck(state.settings.budget ?? {}, target()?.usage?.total ?? emptySum(), state.usage.total);
    },
  };
}
