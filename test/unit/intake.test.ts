import { describe, expect, it } from 'vitest';
import { bindNext, carryRecent, intake, refusal } from '../../workflows/ledger/intake.js';
import { restoreState } from '../../workflows/run/state.js';
import { userItem } from '../../workflows/agent/step-request.js';
import { initialState } from '../../workflows/run/state.js';
import { BUDGET } from '../../contract/budget.js';
import { jsonBytes } from '../../contract/text.js';
import { LIMITS } from '../../contract/state.js';

const fresh = (settings = {}) => initialState({ sessionId: 's1', settings });

describe('intake', () => {
  it('assigns gap-free increasing seqs in arrival order and binds them FIFO', () => {
    const state = fresh();
    const seqs = ['a', 'b', 'c'].map((id) => intake(state, { messageId: id, text: `text ${id}` }, 'signal', 1));
    expect(seqs).toEqual([
      { kind: 'accepted', seq: 1 },
      { kind: 'accepted', seq: 2 },
      { kind: 'accepted', seq: 3 },
    ]);
    expect([bindNext(state, 2)?.messageId, bindNext(state, 2)?.messageId, bindNext(state, 2)?.messageId]).toEqual([
      'a',
      'b',
      'c',
    ]);
    expect(bindNext(state, 2)).toBeUndefined();
    expect(state.boundSeq).toBe(3);
    expect(state.history.map((h) => h.seq)).toEqual([1, 2, 3]);
  });

  it('recognises a repeated messageId as a duplicate with the original seq, without queueing it', () => {
    const state = fresh();
    intake(state, { messageId: 'a', text: 'one' }, 'signal', 1);
    expect(intake(state, { messageId: 'a', text: 'one again' }, 'update', 2)).toEqual({ kind: 'duplicate', seq: 1 });
    expect(state.queue).toHaveLength(1);
    expect(state.counts.duplicates).toBe(1);
    expect(state.nextSeq).toBe(2);
  });

  it('forgets the ids of bound inputs beyond the de-duplication window, oldest first', () => {
    const state = fresh({ dedupeWindow: 10 });
    for (let i = 0; i < 11; i++) {
      intake(state, { messageId: `m${i}`, text: 'x' }, 'signal', 1);
      bindNext(state, 1);
    }
    carryRecent(state);
    expect(state.recent).toHaveLength(10);
    expect(intake(state, { messageId: 'm10', text: 'x' }, 'signal', 1).kind).toBe('duplicate');
    expect(intake(state, { messageId: 'm0', text: 'x' }, 'signal', 1)).toEqual({ kind: 'accepted', seq: 12 });
  });

  it('remembers every queued id, and a bound id until dedupeWindow (default 2,000) later inputs are bound', () => {
    const state = fresh();
    expect(state.settings.dedupeWindow).toBe(2_000);
    intake(state, { messageId: 'report', text: 'write the report' }, 'signal', 1);
    bindNext(state, 1);
    // A backlog of 2,600 queued behind it: queued ids are always known, and 'report' is still in the
    // window because nothing after it has been bound yet.
    for (let i = 0; i < 2_600; i++) intake(state, { messageId: `m${i}`, text: 'x' }, 'signal', 2);
    expect(intake(state, { messageId: 'm2599', text: 'x' }, 'signal', 3)).toEqual({ kind: 'duplicate', seq: 2_601 });
    expect(intake(state, { messageId: 'report', text: 'again' }, 'signal', 3)).toEqual({ kind: 'duplicate', seq: 1 });
    // 1,999 later inputs bound: 'report' is the oldest of the last 2,000, still a duplicate.
    for (let i = 0; i < 1_999; i++) bindNext(state, 4);
    expect(intake(state, { messageId: 'report', text: 'again' }, 'signal', 5)).toEqual({ kind: 'duplicate', seq: 1 });
    // The 2,000th later input pushes it out: re-sent now, it is a new input with a new seq.
    bindNext(state, 6);
    expect(intake(state, { messageId: 'report', text: 'again' }, 'signal', 7)).toEqual({
      kind: 'accepted',
      seq: 2_602,
    });
    // The window now holds exactly the 2,000 backlog inputs bound so far, the oldest of them included.
    expect(intake(state, { messageId: 'm1999', text: 'x' }, 'signal', 8)).toEqual({ kind: 'duplicate', seq: 2_001 });
    expect(intake(state, { messageId: 'm0', text: 'x' }, 'signal', 8)).toEqual({ kind: 'duplicate', seq: 2 });
    expect(state.counts.accepted).toBe(2_602);
  });

  it.each([
    [undefined, 'expected object'],
    ['just a string', 'expected object'],
    [{ text: 'no id' }, 'messageId'],
    [{ messageId: '', text: 'x' }, 'messageId: messageId must not be empty'],
    [{ messageId: 'a', text: '   ' }, 'text: text must not be empty'],
    [{ messageId: 'a', text: 'x', resources: [{ title: 'no uri' }] }, 'resources.0.uri'],
    [{ messageId: 'a', text: 'x', colour: 'red' }, 'colour'],
    [{ messageId: 'a', text: 'x'.repeat(16_001) }, 'at most 16000'],
  ])('rejects %j with a reason naming the problem (%s), and records it', (raw, fragment) => {
    const state = fresh();
    const result = intake(state, raw, 'signal', 5);
    expect(result.kind).toBe('rejected');
    if (result.kind !== 'rejected') return;
    expect(result.reason).toContain(fragment);
    expect(state.rejections.at(-1)).toMatchObject({ at: 5, via: 'signal', reason: result.reason });
    expect(state.queue).toHaveLength(0);
    expect(state.nextSeq).toBe(1);
  });

  it('keeps only the newest rejections', () => {
    const state = fresh();
    for (let i = 0; i < LIMITS.rejections + 5; i++) intake(state, { messageId: `bad${i}` }, 'signal', i);
    expect(state.rejections).toHaveLength(LIMITS.rejections);
    expect(state.counts.rejected).toBe(LIMITS.rejections + 5);
    expect(state.rejections.at(-1)?.messageId).toBe(`bad${LIMITS.rejections + 4}`);
  });

  it('refuses new messages once closed, but still answers duplicates', () => {
    const state = fresh();
    intake(state, { messageId: 'a', text: 'x' }, 'signal', 1);
    state.status = 'closed';
    expect(refusal(state, { messageId: 'b', text: 'x' })).toContain('closed');
    expect(refusal(state, { messageId: 'a', text: 'x' })).toBeNull();
  });

  it('refuses input beyond the queue byte budget, counting resources and UTF-8 bytes', () => {
    const state = fresh();
    const chinese = '研'.repeat(5_000); // 15,000 bytes of text in 5,000 characters
    const resources = [{ uri: `https://example.com/${'x'.repeat(2_000)}` }];
    let accepted = 0;
    for (let i = 0; i < 100; i++) {
      if (intake(state, { messageId: `m${i}`, text: chinese, resources }, 'signal', 1).kind === 'accepted') accepted++;
    }
    expect(accepted).toBeGreaterThan(20);
    expect(accepted).toBeLessThan(40);
    expect(jsonBytes(state.queue)).toBeLessThanOrEqual(BUDGET.queue);
    expect(state.rejections.at(-1)?.reason).toContain('queue is full');
  });

  it('never forgets the id of a queued input, however many are waiting', () => {
    const state = fresh({ dedupeWindow: 10 });
    for (let i = 0; i < 12; i++) intake(state, { messageId: `m${i}`, text: 'x' }, 'signal', 1);
    expect(intake(state, { messageId: 'm0', text: 'x' }, 'signal', 1)).toEqual({ kind: 'duplicate', seq: 1 });
    expect(state.queue).toHaveLength(12);
    for (let i = 0; i < 12; i++) bindNext(state, 2);
    intake(state, { messageId: 'm12', text: 'x' }, 'signal', 3);
    carryRecent(state);
    expect(state.recent.length).toBeLessThanOrEqual(10);
  });

  it('keeps the window in its index during a run and writes it out, oldest first, when the state is carried', () => {
    const state = fresh({ dedupeWindow: 10 });
    for (let i = 0; i < 12; i++) {
      intake(state, { messageId: `m${i}`, text: 'x' }, 'signal', 1);
      bindNext(state, 1);
    }
    // No [key, seq] pair per bound input while the run lasts: the index holds the window.
    expect(state.recent).toEqual([]);
    carryRecent(state);
    expect(state.recent).toEqual(Array.from({ length: 10 }, (_, i) => [`:m${i + 2}`, i + 3]));
    // The next run de-duplicates against what was carried, and binds after it.
    const restored = restoreState(JSON.parse(JSON.stringify(state)));
    if (!restored.ok) throw new Error(restored.reason);
    const next = restored.state;
    expect(intake(next, { messageId: 'm2', text: 'x' }, 'signal', 2)).toEqual({ kind: 'duplicate', seq: 3 });
    expect(intake(next, { messageId: 'm1', text: 'x' }, 'signal', 2)).toEqual({ kind: 'accepted', seq: 13 });
    bindNext(next, 2);
    carryRecent(next);
    expect(next.recent.map(([key]) => key)).toEqual([...Array.from({ length: 9 }, (_, i) => `:m${i + 3}`), ':m1']);
  });

  it('keys handed-over inputs by their origin, so they cannot collide with the receiver own messageIds', () => {
    const state = fresh();
    intake(state, { messageId: '1', text: 'from the user' }, 'signal', 1);
    const routed = {
      messageId: '1',
      text: 'from a sub-session',
      routed: { fromSessionId: 'child', reason: 'out-of-scope' },
    };
    expect(intake(state, routed, 'signal', 2)).toEqual({ kind: 'accepted', seq: 2 });
    expect(intake(state, routed, 'signal', 3)).toEqual({ kind: 'duplicate', seq: 2 });
  });

  it('accepts null resources and from as absent (Temporal HTTP API shorthand)', () => {
    const state = fresh();
    expect(intake(state, { messageId: 'n', text: 'x', resources: null, from: null }, 'signal', 1).kind).toBe(
      'accepted',
    );
    expect(state.queue[0]).toMatchObject({ resources: [], from: null });
  });
});

describe('initialState', () => {
  it('uses goals given at start, the phase falling back to the session goal', () => {
    const state = initialState({ sessionId: 's', goals: { session: 'Own the Q3 report' } });
    expect(state.goals.session?.text).toBe('Own the Q3 report');
    expect(state.goals.phase?.text).toBe('Own the Q3 report');
    expect(state.phases).toHaveLength(1);
  });

  it('starts without goals when none are given', () => {
    const state = initialState({ sessionId: 's' });
    expect(state.goals).toEqual({ session: null, phase: null });
    expect(state.settings.thresholds).toEqual({ high: 0.65, low: 0.35 });
  });

  it("a bound input's transcript item keeps its resources, and shares one frozen empty list when it has none", () => {
    const state = fresh();
    const resources = [{ uri: 'file:///tmp/a.txt' }];
    intake(state, { messageId: 'a', text: 'one', resources }, 'signal', 1);
    intake(state, { messageId: 'b', text: 'two' }, 'signal', 1);
    intake(state, { messageId: 'c', text: 'three' }, 'signal', 1);
    const [a, b, c] = [bindNext(state, 2)!, bindNext(state, 2)!, bindNext(state, 2)!].map(userItem);
    expect(a).toMatchObject({ kind: 'user', seq: 1, text: 'one', resources: [{ uri: 'file:///tmp/a.txt' }] });
    const empty = (item: typeof b) => (item?.kind === 'user' ? item.resources : null);
    expect(empty(b)).toEqual([]);
    expect(empty(b)).toBe(empty(c));
    expect(Object.isFrozen(empty(b))).toBe(true);
    // Carried as plain JSON like any other.
    expect(JSON.parse(JSON.stringify(c))).toEqual({ kind: 'user', seq: 3, text: 'three', resources: [] });
  });
});
