/**
 * Commands and notifications: applied to state after the shared record (ledger/control-record.ts)
 * admits them. Approvals and tool results take their own path (approvals.ts); none of these ever
 * reach the relevance role or become task inputs.
 */
import { openPhase } from '../environment/phases.js';
import { recordGoalChange } from '../environment/goals.js';
import { STATEMENT_CHARS } from '../../contract/goals.js';
import { clip } from '../../contract/text.js';
import type { ControlKind } from '../../contract/control-signals.js';
import type { BudgetPatch, CommandInput } from '../../contract/messages.js';
import type { Budget } from '../../contract/usage.js';
import type { Goal, SessionState } from '../../contract/state.js';
import {
  admitControl,
  parseControl,
  recordControlEvent,
  type ControlResult,
  type ParsedControl,
} from '../ledger/control-record.js';

export type { ControlKind };

/**
 * Replaces goals by command, each change recorded in the goal history. A new phase goal opens a new
 * phase; nothing is compacted by a command.
 */
export function setGoals(state: SessionState, patch: { session?: string; phase?: string }): void {
  const at = state.boundSeq;
  const goal = (text: string): Goal => ({ text, resources: [], setAtSeq: at });
  const change = (level: 'session' | 'phase', text: string) => ({
    level,
    reason: 'command' as const,
    seq: at,
    old: state.goals[level] ? clip(state.goals[level].text, STATEMENT_CHARS) : null,
    new: clip(text, STATEMENT_CHARS),
    callId: null,
    at: Date.now(),
  });
  if (patch.session !== undefined) {
    recordGoalChange(state, null, change('session', patch.session));
    state.goals.session = goal(patch.session);
  }
  if (patch.phase !== undefined) {
    recordGoalChange(state, null, change('phase', patch.phase));
    openPhase(state, goal(patch.phase), 'skipped');
  } else if (state.goals.phase === null && state.goals.session !== null) {
    openPhase(state, state.goals.session, 'skipped');
  }
}

/** A Session's budget after `set-budget`: given limits replace, `null` removes, absent ones stay. */
export function patchBudget(budget: Budget | undefined, patch: BudgetPatch): Budget {
  const next: Budget = { ...budget };
  for (const key of ['turnTokens', 'sessionTokens', 'turnCostUsd', 'sessionCostUsd'] as const) {
    const value = patch[key];
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  return next;
}

/**
 * Validates, de-duplicates and records a non-task input, applying commands to state. Never throws.
 */
export function applyControl(state: SessionState, kind: ControlKind, raw: unknown, now: number): ControlResult {
  return applyParsed(state, parseControl(kind, raw), now);
}

/** `applyControl` for an item parsed where it arrived: a refused payload is a recorded rejection. */
export function applyParsed(state: SessionState, item: ParsedControl, now: number): ControlResult {
  const { kind } = item;
  const admitted = admitControl(state, item, now);
  if ('ended' in admitted) return admitted.ended;
  const { payload, id } = admitted;

  let command: CommandInput | undefined;
  let interruptTurn = false;
  if (kind === 'command') {
    command = payload as CommandInput;
    switch (command.name) {
      case 'set-goals':
        setGoals(state, command.args);
        break;
      case 'pause':
        if (state.status === 'active') state.status = 'paused';
        break;
      case 'resume':
        if (state.status === 'paused') state.status = 'active';
        break;
      case 'close':
        state.status = 'closed';
        break;
      case 'set-budget':
        state.settings.budget = patchBudget(state.settings.budget, command.args);
        break;
      case 'interrupt':
        // The turn ends `interrupted` at its next check; the model step or tool call that is running
        // is cancelled by the caller, which owns its cancellation scope.
        if (state.turn) {
          state.turn.interrupted = true;
          interruptTurn = true;
        }
        break;
    }
  }
  const event = recordControlEvent(state, kind, id, payload, now);
  return command
    ? { kind: 'applied', event, payload, command, interruptTurn }
    : { kind: 'applied', event, payload, interruptTurn };
}
