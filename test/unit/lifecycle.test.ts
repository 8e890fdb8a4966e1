import { describe, expect, it } from 'vitest';
import { intake } from '../../workflows/ledger/intake.js';
import { initialState } from '../../workflows/run/state.js';
import { SUB_SESSION_IDLE_MS, canIdleClose, closeIdle, idleTimeoutOf } from '../../workflows/run/lifecycle.js';
import { SessionStart } from '../../contract/messages.js';
import { renderDetails } from '../../workflows/view/view.js';

const start = (extra: Partial<SessionStart> = {}) => initialState(SessionStart.parse({ sessionId: 's1', ...extra }));

describe('idle timeout', () => {
  it('is off for top-level Sessions and a day for sub-sessions unless the settings name one', () => {
    expect(idleTimeoutOf(start())).toBeNull();
    expect(idleTimeoutOf(start({ profile: 'research' }))).toBeNull();
    expect(idleTimeoutOf(start({ profile: 'sub-session' }))).toBe(SUB_SESSION_IDLE_MS);
    expect(SUB_SESSION_IDLE_MS).toBe(86_400_000);
    expect(idleTimeoutOf(start({ settings: { idleTimeoutMs: 5_000 } }))).toBe(5_000);
    expect(idleTimeoutOf(start({ profile: 'sub-session', settings: { idleTimeoutMs: 0 } }))).toBeNull();
  });

  it('rejects timeouts that would close a Session between two keystrokes, or never fire', () => {
    for (const idleTimeoutMs of [1, 999, -5, 1.5, 366 * 86_400_000]) {
      const parsed = SessionStart.safeParse({ sessionId: 's1', settings: { idleTimeoutMs } });
      expect(parsed.success, String(idleTimeoutMs)).toBe(false);
    }
  });

  it('never closes a Session with queued input or a turn in progress', () => {
    const state = start({ settings: { idleTimeoutMs: 1_000 } });
    expect(canIdleClose(state)).toBe(true);
    intake(state, { messageId: 'a', text: 'hello' }, 'signal', 1);
    expect(canIdleClose(state)).toBe(false);
    state.queue = [];
    state.turn = { seq: 1 } as never;
    expect(canIdleClose(state)).toBe(false);
  });

  it('closes like the close command and says why, in state and in the Web UI details', () => {
    const state = start({ profile: 'sub-session' });
    closeIdle(state, 42, SUB_SESSION_IDLE_MS);
    expect(state.status).toBe('closed');
    expect(canIdleClose(state)).toBe(false);
    expect(state.controlEvents).toEqual([
      { at: 42, kind: 'command', id: 'idle-timeout', summary: 'close: no input for 1 day (idle timeout)' },
    ]);
    expect(state.counts.controlEvents).toBe(1);
    expect(renderDetails(state, 'Closed')).toContain('**Closed by:** close: no input for 1 day (idle timeout)');
    // A later input is refused, with the reason recorded.
    expect(intake(state, { messageId: 'late', text: 'still there?' }, 'signal', 43)).toMatchObject({
      kind: 'rejected',
      cause: 'closed',
    });
  });
});
