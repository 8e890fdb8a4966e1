/**
 * How a Session ends on its own: the idle timeout. Pure functions of SessionState; the loop in
 * session.ts owns the timer.
 *
 * A Session is idle when nothing is queued, no agent turn is in progress (a turn waiting for an
 * approval or a tool result is not idle: closing would drop the pending call) and no input or
 * control signal was accepted for the timeout. It then closes exactly as the `close` command does.
 */
import ms from 'ms';
import { LIMITS, keepLast, type SessionState } from '../../contract/state.js';

/** Sub-sessions close after a day without input unless their settings say otherwise. */
export const SUB_SESSION_IDLE_MS = 24 * 60 * 60 * 1000;

/** The idle timeout a profile gets when its settings do not name one. Top-level Sessions: none. */
const PROFILE_IDLE_MS: Readonly<Record<string, number>> = { 'sub-session': SUB_SESSION_IDLE_MS };

/** The effective idle timeout in ms, or null when the Session never closes on its own. */
export function idleTimeoutOf(state: Pick<SessionState, 'settings' | 'profile'>): number | null {
  const ms = state.settings.idleTimeoutMs ?? PROFILE_IDLE_MS[state.profile] ?? 0;
  return ms > 0 ? ms : null;
}

/** True when the Session may close for idleness now (the clock is checked by the caller). */
export function canIdleClose(state: SessionState): boolean {
  return state.status !== 'closed' && state.queue.length === 0 && state.turn === null;
}

/** Closes the Session for idleness and records why, as a command event an operator can see. */
export function closeIdle(state: SessionState, now: number, idleMs: number): void {
  state.status = 'closed';
  state.controlEvents.push({
    at: now,
    kind: 'command',
    id: 'idle-timeout',
    summary: `close: no input for ${ms(idleMs, { long: true })} (idle timeout)`,
  });
  keepLast(state.controlEvents, LIMITS.controlEvents);
  state.counts.controlEvents++;
}
