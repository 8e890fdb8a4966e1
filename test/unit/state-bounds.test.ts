/**
 * Hard bounds on carried state and a de-duplication index that holds under a backlog. Worst cases
 * are built on the pure modules: every list full, every string at its limit in 4-byte characters.
 */
import { emptySum, type UsageTotals } from '../../contract/usage.js';
import { ROLES } from '../../models/roles.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BUDGET, CARRIED_CAP, enforceBudget } from '../../contract/budget.js';
import { capCarriedState } from '../../workflows/run/carried.js';
import { applyControl } from '../../workflows/control/commands.js';
import { bindNext, carryRecent, intake } from '../../workflows/ledger/intake.js';
import { initialState, restoreState } from '../../workflows/run/state.js';
import { ChildSession, LIMITS, type SessionState } from '../../contract/state.js';
import { jsonBytes, utf8Length } from '../../contract/text.js';

const emoji = (chars: number) => '😀'.repeat(chars / 2);
const fresh = (settings = {}) => initialState({ sessionId: 'bounds', settings });

/** Usage totals with every role and large numbers in every field. */
function fullUsage(): UsageTotals {
  const sum = () => ({ ...emptySum(), calls: 1e9, promptTokens: 1e15, completionTokens: 1e15, costUsd: 123456.789012 });
  return { total: sum(), byRole: Object.fromEntries(ROLES.map((r) => [r, sum()])) };
}

/** A state with every list at its count limit and every string at its length limit. */
function buildWorstCase(): SessionState {
  const state = fresh({ keepDecisions: 1000, dedupeWindow: 10_000 });
  const long = emoji(16_000);
  const resources = Array.from({ length: 32 }, (_, i) => ({ uri: `u${i}:${emoji(2_000)}`, title: emoji(500) }));
  // Bound inputs (history, dedupe window, decisions), then a full queue.
  for (let i = 0; i < 400; i++) {
    intake(state, { messageId: `${emoji(190)}${i}`, text: long, resources }, 'signal', i);
    const bound = bindNext(state, i);
    if (!bound) throw new Error('nothing bound');
    state.decisions.push({
      seq: bound.seq,
      messageId: bound.messageId,
      decision: 'degraded',
      scores: null,
      bands: null,
      degraded: emoji(BUDGET.reason),
      diff: { added: [emoji(200)], removed: [emoji(200)], kept: [] },
      dropped: [emoji(200)],
      fallbacks: [emoji(400)],
      stages: [],
      agent: null,
      route: null,
      // Every role's sums: a usage block is bounded by the five roles.
      usage: fullUsage(),
    });
    state.outOfScope.push({ ...bound, status: 'pending', routedTo: null, note: null });
    state.children.push(
      ChildSession.parse({ sessionId: `c${i}`, goal: long, createdAtSeq: i, lastRoutedSeq: i, routed: 1 }),
    );
    state.transcript.push({ kind: 'user', seq: bound.seq, text: long, resources });
    state.artifacts.push({
      uri: `${emoji(512)}${i}`,
      kind: 'file',
      source: 'argument',
      tool: emoji(100),
      callId: emoji(100),
      seq: bound.seq,
      phaseIndex: i,
      title: emoji(100),
      mimeType: null,
    });
    state.phases.push({
      index: i + 1,
      goal: { text: long, resources, setAtSeq: i },
      startedAtSeq: i,
      endedAtSeq: null,
      compaction: 'compacted',
      summary: long,
    });
  }
  state.goals.session = { text: long, resources, setAtSeq: 1 };
  state.goals.phase = { text: long, resources, setAtSeq: 1 };
  for (let i = 0; i < 600; i++) {
    applyControl(state, 'notification', { notificationId: `${emoji(190)}${i}`, kind: 'k', text: long }, i);
    applyControl(state, 'approval', { approvalId: `a${i}`, approved: true, [`x${i}`]: emoji(5_000) }, i);
  }
  let i = 0;
  while (intake(state, { messageId: `q${i}`, text: long, resources }, 'signal', i).kind === 'accepted') i++;
  return state;
}

let built: SessionState | undefined;
/** A fresh copy of the worst case, which takes seconds to build; each test trims its own copy. */
function worstCase(): SessionState {
  built ??= buildWorstCase();
  return structuredClone(built);
}

describe('carried state', () => {
  it('stays under the cap in the worst case, keeping the whole queue and the current phase', () => {
    const state = worstCase();
    const queued = state.queue.map((q) => q.seq);
    expect(queued.length).toBeGreaterThan(0);
    const size = capCarriedState(state);
    expect(size).toBeLessThanOrEqual(CARRIED_CAP);
    expect(jsonBytes(state)).toBe(size);
    expect(state.queue.map((q) => q.seq)).toEqual(queued);
    expect(state.phases.length).toBeGreaterThanOrEqual(1);
    expect(restoreState(JSON.parse(JSON.stringify(state))).ok).toBe(true);
  });

  it('clips rejection reasons and ids, however many unknown keys a payload carries', () => {
    const state = fresh();
    const payload: Record<string, unknown> = { messageId: `m-${emoji(5_000)}`, text: 'x' };
    for (let k = 0; k < 10_000; k++) payload[`key${k}`] = k;
    for (let n = 0; n < 25; n++) intake(state, payload, 'signal', n);
    expect(state.rejections).toHaveLength(LIMITS.rejections);
    for (const r of state.rejections) {
      expect(utf8Length(r.reason)).toBeLessThanOrEqual(BUDGET.reason);
      expect(utf8Length(r.messageId ?? '')).toBeLessThanOrEqual(256);
    }
    expect(state.counts.rejectedBy).toEqual({ invalid: 25 });
    expect(jsonBytes(state)).toBeLessThan(64 * 1024);
  });

  it('keeps every list within its share after enforceBudget', () => {
    const state = worstCase();
    enforceBudget(state);
    const shares: Array<[unknown[], number]> = [
      [state.history, BUDGET.history],
      [state.decisions, BUDGET.decisions],
      [state.outOfScope, BUDGET.outOfScope],
      [state.rejections, BUDGET.rejections],
      [state.recentControl, BUDGET.recentControl],
      [state.controlEvents, BUDGET.controlEvents],
      [state.children, BUDGET.children],
      [state.artifacts, BUDGET.artifacts],
    ];
    for (const [list, share] of shares) {
      // The newest item always stays, even if it alone is larger than the share.
      if (list.length > 1) expect(jsonBytes(list)).toBeLessThanOrEqual(share + list.length + 2);
    }
    expect(jsonBytes(state.goals.session?.text)).toBeLessThanOrEqual(BUDGET.goal + 2);
  });

  it('stays under the cap for any sequence of inputs, bindings and control signals', () => {
    const step = fc.oneof(
      fc.record({ op: fc.constant('message' as const), id: fc.string({ maxLength: 300 }), text: fc.string() }),
      fc.record({ op: fc.constant('big' as const), id: fc.nat(50), chars: fc.integer({ min: 1, max: 16_000 }) }),
      fc.record({ op: fc.constant('bind' as const) }),
      fc.record({ op: fc.constant('control' as const), id: fc.string({ maxLength: 300 }), junk: fc.nat(3_000) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120 }), (steps) => {
        const state = fresh();
        let accepted = 0;
        for (const s of steps) {
          if (s.op === 'message') {
            if (intake(state, { messageId: s.id, text: s.text }, 'signal', 0).kind === 'accepted') accepted++;
          } else if (s.op === 'big') {
            const r = intake(
              state,
              { messageId: `big${s.id}`, text: emoji(s.chars * 2 > 16_000 ? 16_000 : s.chars * 2) },
              'update',
              0,
            );
            if (r.kind === 'accepted') accepted++;
          } else if (s.op === 'bind') {
            bindNext(state, 0);
          } else {
            const extra = Object.fromEntries(Array.from({ length: s.junk }, (_, k) => [`k${k}`, k]));
            applyControl(state, 'notification', { notificationId: s.id, kind: 'k', text: 't', ...extra }, 0);
          }
        }
        const queuedBefore = state.queue.length;
        expect(capCarriedState(state)).toBeLessThanOrEqual(CARRIED_CAP);
        expect(state.queue).toHaveLength(queuedBefore);
        expect(state.nextSeq - 1).toBe(accepted);
      }),
      { numRuns: 60 },
    );
  });
});

describe('de-duplication', () => {
  it('holds for every queued input under a 5,000-input backlog, and for just-bound ids', () => {
    const state = fresh();
    for (let i = 0; i < 5_000; i++) {
      expect(intake(state, { messageId: `m${i}`, text: 'x' }, 'signal', i).kind).toBe('accepted');
    }
    expect(intake(state, { messageId: 'm0', text: 'again' }, 'signal', 1)).toEqual({ kind: 'duplicate', seq: 1 });
    expect(intake(state, { messageId: 'm2500', text: 'again' }, 'signal', 1)).toEqual({
      kind: 'duplicate',
      seq: 2501,
    });
    // Bind a few: a re-sent id that was just processed is still a duplicate.
    for (let i = 0; i < 3; i++) bindNext(state, 2);
    expect(intake(state, { messageId: 'm1', text: 'again' }, 'signal', 3)).toEqual({ kind: 'duplicate', seq: 2 });
    expect(state.counts.accepted).toBe(5_000);
  });

  it('remembers long ids in 4-byte characters, within the window byte share', () => {
    const state = fresh({ dedupeWindow: 10_000 });
    const id = (i: number) => `${emoji(190)}${i}`;
    for (let i = 0; i < 2_000; i++) {
      intake(state, { messageId: id(i), text: 'x' }, 'signal', i);
      bindNext(state, i);
    }
    carryRecent(state);
    expect(jsonBytes(state.recent)).toBeLessThanOrEqual(BUDGET.recent + 1024);
    expect(intake(state, { messageId: id(1_999), text: 'x' }, 'signal', 0).kind).toBe('duplicate');
  });

  it('never confuses a user id that looks routed with a routed input', () => {
    const state = fresh();
    const routed = { fromSessionId: 'other', reason: 'out-of-scope' as const };
    expect(intake(state, { messageId: 'x', text: 'a', routed }, 'signal', 0).kind).toBe('accepted');
    expect(intake(state, { messageId: 'routed:other:x', text: 'b' }, 'signal', 0).kind).toBe('accepted');
    expect(intake(state, { messageId: ':x', text: 'c' }, 'signal', 0).kind).toBe('accepted');
    expect(intake(state, { messageId: 'x', text: 'd' }, 'signal', 0).kind).toBe('accepted');
    expect(intake(state, { messageId: 'x', text: 'e', routed }, 'signal', 0).kind).toBe('duplicate');
    bindNext(state, 0);
    bindNext(state, 0);
    expect(intake(state, { messageId: 'routed:other:x', text: 'b' }, 'signal', 0).kind).toBe('duplicate');
    expect(intake(state, { messageId: 'x', text: 'e', routed }, 'signal', 0).kind).toBe('duplicate');
  });

  it('survives continue-as-new: the index is rebuilt from carried state', () => {
    const state = fresh();
    for (let i = 0; i < 50; i++) intake(state, { messageId: `m${i}`, text: 'x' }, 'signal', i);
    for (let i = 0; i < 20; i++) bindNext(state, i);
    // As session.ts carries it: the cap writes the window out of intake's index first.
    capCarriedState(state);
    const restored = restoreState(JSON.parse(JSON.stringify(state)));
    if (!restored.ok) throw new Error(restored.reason);
    expect(intake(restored.state, { messageId: 'm5', text: 'x' }, 'signal', 0).kind).toBe('duplicate');
    expect(intake(restored.state, { messageId: 'm45', text: 'x' }, 'signal', 0).kind).toBe('duplicate');
    expect(intake(restored.state, { messageId: 'm50', text: 'x' }, 'signal', 0)).toEqual({
      kind: 'accepted',
      seq: 51,
    });
  });
});
