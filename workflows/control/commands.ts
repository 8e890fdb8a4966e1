/**
 * Non-task inputs: approval decisions, tool results, system notifications and deterministic
 * commands. They have their own paths, never reach the relevance role and never become task inputs.
 */
import { openPhase } from '../environment/phases.js';
import { CONTROL_SIGNALS, controlIdOf, type ControlKind } from '../../contract/control-signals.js';
import type { BudgetPatch, CommandInput } from '../../contract/messages.js';
import type { Budget } from '../../contract/usage.js';
import { BUDGET } from '../../contract/budget.js';
import { recordRejection } from '../ledger/intake.js';
import { clipBytes, describeIssues } from '../../contract/text.js';
import { undecodableReason } from '../../contract/undecodable.js';
import { LIMITS, keepLast, type ControlEvent, type Goal, type SessionState } from '../../contract/state.js';

export type { ControlKind };

export type ControlResult =
  | {
      kind: 'applied';
      event: ControlEvent;
      payload: Record<string, unknown>;
      command?: CommandInput;
      /** An `interrupt` met a turn in progress: the caller cancels the model step or tool call running. */
      interruptTurn: boolean;
    }
  | { kind: 'duplicate'; id: string }
  | { kind: 'rejected'; reason: string };

/** Replaces goals by command. A new phase goal opens a new phase; nothing is compacted by a command. */
export function setGoals(state: SessionState, patch: { session?: string; phase?: string }): void {
  const at = state.boundSeq;
  const goal = (text: string): Goal => ({ text, resources: [], setAtSeq: at });
  if (patch.session !== undefined) state.goals.session = goal(patch.session);
  if (patch.phase !== undefined) {
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

/** A control item's payload, parsed once where it arrives: the payload, or why its schema refused it. */
export type ParsedControl =
  | { ok: true; kind: ControlKind; payload: Record<string, unknown> }
  | { ok: false; kind: ControlKind; reason: string; undecodable?: boolean };

/** Parses a control item against its row's schema (contract/control-signals.ts). Never throws. */
export function parseControl(kind: ControlKind, raw: unknown): ParsedControl {
  const parsed = CONTROL_SIGNALS[kind].schema.safeParse(raw);
  if (parsed.success) return { ok: true, kind, payload: parsed.data };
  // A payload the worker's codec could not decode arrives as a marker (contract/undecodable.ts).
  const undecodable = undecodableReason(raw);
  if (undecodable !== null)
    return { ok: false, kind, reason: clipBytes(undecodable, BUDGET.reason), undecodable: true };
  return { ok: false, kind, reason: clipBytes(`invalid ${kind}: ${describeIssues(parsed.error)}`, BUDGET.reason) };
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
  if (!item.ok) {
    const cause = item.undecodable ? 'undecodable' : 'invalid';
    recordRejection(state, { at: now, via: kind, messageId: null, reason: item.reason }, cause);
    return { kind: 'rejected', reason: item.reason };
  }
  const row = CONTROL_SIGNALS[kind];
  const payload = item.payload;
  const id = controlIdOf(kind, payload);
  const key = `${kind}:${id}`;
  // Approvals and tool results are idempotent through the call they name (a repeat finds no waiting
  // call), and models reuse call ids across turns ("call_0"): an id-window would swallow a later
  // turn's approval as a duplicate. Notifications and commands are de-duplicated by their ids.
  if (kind === 'notification' || kind === 'command') {
    if (state.recentControl.includes(key)) return { kind: 'duplicate', id: key };
    state.recentControl.push(key);
    keepLast(state.recentControl, LIMITS.recentControl);
  }

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
  // The row's summary takes its own payload type; the parse above guarantees it.
  const summary = (row.summary as (p: unknown) => string)(payload);
  const event: ControlEvent = { at: now, kind, id, summary };
  state.controlEvents.push(event);
  keepLast(state.controlEvents, LIMITS.controlEvents);
  state.counts.controlEvents++;
  return command
    ? { kind: 'applied', event, payload, command, interruptTurn }
    : { kind: 'applied', event, payload, interruptTurn };
}
