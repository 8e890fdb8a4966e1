/**
 * The decision a message meets when it arrives while an agent turn runs (workflows/control/while-busy.ts)
 * and which queued message a turn takes in at a step boundary (workflows/agent/merge.ts), without Temporal.
 */
import { describe, expect, it } from 'vitest';
import { FAILURE } from '../../contract/failures.js';
import type { ActiveTurn, SessionState } from '../../contract/state.js';
import { waitsToJoin } from '../../workflows/agent/merge.js';
import { messageIntake, submitAnswer } from '../../workflows/control/while-busy.js';
import { newRecord } from '../../workflows/ledger/decision-records.js';
import { initialState } from '../../workflows/run/state.js';

function busy(settings: Record<string, unknown> = {}): SessionState {
  const state = initialState({ sessionId: 's1', settings });
  state.nextSeq = 3;
  const turn: ActiveTurn = {
    seq: 2,
    record: newRecord({ seq: 2, messageId: 'm2' }),
    from: null,
    steps: 1,
    step: null,
    failing: null,
    interrupted: false,
  };
  state.turn = turn;
  return state;
}

function taker(state: SessionState, enabled = true) {
  const log = { cancelled: 0, touched: 0, shown: 0 };
  const take = messageIntake(state, {
    enabled,
    control: { cancelModelCall: () => log.cancelled++ },
    stage: { show: () => log.shown++ },
    touch: () => log.touched++,
  });
  return { take, log };
}

describe('whileBusy', () => {
  it('enqueue (the default) queues a message during a turn as before, unmarked', () => {
    const state = busy();
    const { take, log } = taker(state);
    expect(take({ messageId: 'a', text: 'also this' }, 'signal')).toEqual({ kind: 'accepted', seq: 3 });
    expect(state.queue[0]?.busy).toBeUndefined();
    expect(log).toEqual({ cancelled: 0, touched: 1, shown: 1 });
  });

  it('reject refuses a new message with cause busy and no seq, but a duplicate stays a duplicate', () => {
    const state = busy({ whileBusy: 'reject' });
    const { take } = taker(state);
    state.turn = null;
    expect(take({ messageId: 'a', text: 'between turns' }, 'update')).toEqual({ kind: 'accepted', seq: 3 });
    state.turn = busy().turn;
    expect(take({ messageId: 'a', text: 'between turns' }, 'update')).toEqual({ kind: 'duplicate', seq: 3 });
    const refused = take({ messageId: 'b', text: 'during the turn' }, 'update');
    expect(refused).toMatchObject({ kind: 'rejected', cause: 'busy', messageId: 'b' });
    expect(state.nextSeq).toBe(4);
    expect(state.counts.rejectedBy).toEqual({ busy: 1 });
    expect(state.rejections.at(-1)).toMatchObject({ via: 'update', messageId: 'b' });
    expect(() => submitAnswer(refused)).toThrow(
      expect.objectContaining({ type: FAILURE.SessionBusy, nonRetryable: true }) as Error,
    );
    // A message's own mode wins over the Session's.
    expect(take({ messageId: 'c', text: 'wait for me', whileBusy: 'enqueue' }, 'signal')).toMatchObject({
      kind: 'accepted',
    });
  });

  it('every other refusal stays InvalidMessage', () => {
    const state = busy({ whileBusy: 'reject' });
    const refused = taker(state).take({ messageId: 'x' }, 'update');
    expect(refused).toMatchObject({ kind: 'rejected', cause: 'invalid' });
    expect(() => submitAnswer(refused)).toThrow(expect.objectContaining({ type: FAILURE.InvalidMessage }) as Error);
  });

  it('interrupt queues the message marked, ends the turn at its next check and cancels only a model call', () => {
    const state = busy();
    const { take, log } = taker(state);
    take({ messageId: 'stop', text: 'stop that', whileBusy: 'interrupt' }, 'signal');
    expect(state.queue[0]?.busy).toEqual({ mode: 'interrupt', turn: 2 });
    expect(state.turn).toMatchObject({ interrupted: true, interruptedBy: 'stop' });
    expect(log.cancelled).toBe(1);
    // A second interrupting message is queued; the turn keeps its first interrupter.
    take({ messageId: 'stop2', text: 'and that', whileBusy: 'interrupt' }, 'signal');
    expect(state.turn).toMatchObject({ interruptedBy: 'stop' });
    expect(log.cancelled).toBe(1);
  });

  it('merge marks the message for the running turn, which takes it only from the head of the queue', () => {
    const state = busy({ whileBusy: 'merge' });
    const { take } = taker(state);
    const turn = state.turn!;
    take({ messageId: 'late', text: 'queued first', whileBusy: 'enqueue' }, 'signal');
    take({ messageId: 'join', text: 'also cover X' }, 'signal');
    expect(state.queue.map((q) => q.busy)).toEqual([undefined, { mode: 'merge', turn: 2 }]);
    expect(waitsToJoin(state, turn)).toBe(false);
    state.queue.shift();
    expect(waitsToJoin(state, turn)).toBe(true);
    expect(waitsToJoin(state, { ...turn, seq: 5 })).toBe(false);
    state.queue[0]!.busy!.merged = false;
    expect(waitsToJoin(state, turn)).toBe(false);
  });

  it('runs recorded before while-busy queue every message, whatever the setting', () => {
    const state = busy({ whileBusy: 'reject' });
    const { take, log } = taker(state, false);
    expect(take({ messageId: 'a', text: 'x', whileBusy: 'interrupt' }, 'signal')).toMatchObject({ kind: 'accepted' });
    expect(state.queue[0]?.busy).toBeUndefined();
    expect(state.turn?.interrupted).toBe(false);
    expect(log.cancelled).toBe(0);
  });
});
