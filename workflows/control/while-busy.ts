/**
 * What a message does when it arrives while an agent turn runs (`whileBusy`, the Session's setting
 * or the message's own): from the turn's first step until it ends, waiting for an approval or a tool
 * result included. Decided in the message's handler, as it is taken in:
 * - `enqueue`: it waits behind the turn (as every message did before `while-busy`);
 * - `merge`: it is queued marked for the turn, which judges it at its next step boundary (agent/merge.ts);
 * - `interrupt`: it is queued, and the turn ends `interrupted` at its next check: the model step in
 *   flight is cancelled, a tool call already running finishes (it may have side effects and is never
 *   run twice), the calls not yet started are not run; then the message starts a turn of its own;
 * - `reject`: it is refused with cause `busy` and uses no seq; a `submit` fails with `SessionBusy`.
 * A duplicate is a duplicate whatever the mode, and a message that arrives between turns is queued.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { FAILURE } from '../../contract/failures.js';
import type { MessageInput } from '../../contract/messages.js';
import type { PendingInput, SessionState, VerifiedClaims } from '../../contract/state.js';
import { intake, type BusyMode, type IntakeResult } from '../ledger/intake.js';

/** The mode a new message gets now: null while no turn runs. */
export function busyModeOf(state: SessionState): BusyMode {
  return (message: MessageInput) =>
    state.turn === null ? null : { mode: message.whileBusy ?? state.settings.whileBusy, turn: state.turn.seq };
}

/** How a run takes messages in. */
export interface MessageIntakeOptions {
  /** `while-busy` (patches.ts): runs recorded before it queue every message. */
  readonly enabled: boolean;
  /** Cancels the turn's running model call, if that is what runs (control-plane.ts). */
  readonly control: { cancelModelCall(): void };
  /** Shows the stage anew after each message. */
  readonly stage: { show(): void };
  /** Moves the idle clock: a message was accepted. */
  readonly touch: () => void;
}

/** Takes a `message` signal or `submit` update in: intake, then an interrupting message's effect on the turn. */
export function messageIntake(
  state: SessionState,
  { enabled, control, stage, touch }: MessageIntakeOptions,
): (raw: unknown, via: PendingInput['via'], verified?: VerifiedClaims) => IntakeResult {
  return (raw, via, verified) => {
    const result = intake(state, raw, via, Date.now(), verified, enabled ? busyModeOf(state) : undefined);
    if (result.kind === 'accepted') {
      interruptFor(state, state.queue.at(-1), () => control.cancelModelCall());
      touch();
    }
    stage.show();
    return result;
  };
}

/** A message queued with `interrupt` ends the turn it names at the turn's next check. */
function interruptFor(state: SessionState, queued: PendingInput | undefined, cancelModelCall: () => void): void {
  const turn = state.turn;
  if (queued?.busy?.mode !== 'interrupt' || turn === null || turn.seq !== queued.busy.turn || turn.interrupted) return;
  turn.interrupted = true;
  turn.interruptedBy = queued.messageId;
  cancelModelCall();
}

/**
 * A `submit` update's answer: its seq, or the failure it fails with: `SessionBusy` for a message
 * refused because a turn runs, `InvalidMessage` for every other refusal.
 */
export function submitAnswer(result: IntakeResult): { seq: number; duplicate: boolean } {
  if (result.kind === 'rejected') {
    throw ApplicationFailure.nonRetryable(
      result.reason,
      result.cause === 'busy' ? FAILURE.SessionBusy : FAILURE.InvalidMessage,
    );
  }
  return { seq: result.seq, duplicate: result.kind === 'duplicate' };
}
