/**
 * The record every control item shares, whatever its kind: its payload parsed once where it arrives
 * (against its row's schema in contract/control-signals.ts), a refused payload recorded as a
 * rejection, notifications and commands de-duplicated by their ids, and the control event an applied
 * item leaves, or the refusal of an item its signature or edit check turned down. What an item then does (a command to state, an approval to the waiting call) is its
 * own module's: control/commands.ts and control/approvals.ts. Holds no command or approval logic.
 *
 * Pure module: safe to import from workflow code.
 */
import { CONTROL_SIGNALS, controlIdOf, type ControlKind } from '../../contract/control-signals.js';
import type { CommandInput } from '../../contract/messages.js';
import { BUDGET, clipReason } from '../../contract/budget.js';
import { clipBytes, describeIssues } from '../../contract/text.js';
import { undecodableReason } from '../../contract/undecodable.js';
import { LIMITS, keepLast, type ControlEvent, type SessionState } from '../../contract/state.js';
import { recordRejection, type RejectionCause } from './intake.js';

/** What applying a control item did: applied (with its event), a repeated delivery, or refused. */
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
 * Admits a parsed item: its payload and id, or the result that ends it here (a refused payload,
 * recorded as a rejection, or a repeated notification or command).
 */
export function admitControl(
  state: SessionState,
  item: ParsedControl,
  now: number,
): { payload: Record<string, unknown>; id: string } | { ended: Exclude<ControlResult, { kind: 'applied' }> } {
  const { kind } = item;
  if (!item.ok) {
    const cause = item.undecodable ? 'undecodable' : 'invalid';
    recordRejection(state, { at: now, via: kind, messageId: null, reason: item.reason }, cause);
    return { ended: { kind: 'rejected', reason: item.reason } };
  }
  const payload = item.payload;
  const id = controlIdOf(kind, payload);
  const key = `${kind}:${id}`;
  // Approvals and tool results are idempotent through the call they name (a repeat finds no waiting
  // call), and models reuse call ids across turns ("call_0"): an id-window would swallow a later
  // turn's approval as a duplicate. Notifications and commands are de-duplicated by their ids.
  if (kind === 'notification' || kind === 'command') {
    if (state.recentControl.includes(key)) return { ended: { kind: 'duplicate', id: key } };
    state.recentControl.push(key);
    keepLast(state.recentControl, LIMITS.recentControl);
  }
  return { payload, id };
}

/** Records the control event of an admitted item, summarised by its row. */
export function recordControlEvent(
  state: SessionState,
  kind: ControlKind,
  id: string,
  payload: Record<string, unknown>,
  now: number,
): ControlEvent {
  // The row's summary takes its own payload type; the parse where it arrived guarantees it.
  const summary = (CONTROL_SIGNALS[kind].summary as (p: unknown) => string)(payload);
  const event: ControlEvent = { at: now, kind, id, summary };
  state.controlEvents.push(event);
  keepLast(state.controlEvents, LIMITS.controlEvents);
  state.counts.controlEvents++;
  return event;
}

/** Records a refused control item: a rejection with its reason and a control event `refused: …`. */
export function refuseControl(
  state: SessionState,
  kind: 'approval' | 'toolResult' | 'notification' | 'command',
  id: string,
  reason: string,
  now: number,
  cause: RejectionCause = 'unauthenticated',
): void {
  recordRejection(state, { at: now, via: kind, messageId: id, reason }, cause);
  state.controlEvents.push({ at: now, kind, id, summary: clipReason(`refused: ${reason}`) });
  keepLast(state.controlEvents, LIMITS.controlEvents);
  state.counts.controlEvents++;
}
