/**
 * Routing's pure decisions: which sub-sessions an out-of-scope request may go to, and which of the
 * scored ones takes it. The rest of routeOutOfScope is interleaved with activity calls and patched()
 * and is not unit-tested: forwarding to the parent and replacing a finished sub-session are covered
 * on a real server by test/sub-sessions.test.ts; not sending a request back to the parent it came
 * from has no test.
 */
import { describe, expect, it } from 'vitest';
import { bestFit, routingCandidates } from '../../workflows/children/routing.js';
import { ChildSession, LIMITS } from '../../contract/state.js';

const thresholds = { high: 0.65, low: 0.35 };
const child = (n: number): ChildSession =>
  ChildSession.parse({ sessionId: `sub-${n}`, goal: `goal ${n}`, createdAtSeq: n, lastRoutedSeq: n, routed: 1 });
const children = (count: number) => Array.from({ length: count }, (_, i) => child(i + 1));
const ids = (list: ChildSession[]) => list.map((c) => c.sessionId);

describe('routingCandidates', () => {
  it('offers the most recent sub-sessions, oldest first, up to the limit', () => {
    expect(LIMITS.routingCandidates).toBe(5);
    expect(ids(routingCandidates(children(8), undefined))).toEqual(['sub-4', 'sub-5', 'sub-6', 'sub-7', 'sub-8']);
    expect(ids(routingCandidates(children(2), undefined))).toEqual(['sub-1', 'sub-2']);
    expect(routingCandidates([], undefined)).toEqual([]);
  });

  it('never offers the sub-session the request came from, and lets the next older one in instead', () => {
    expect(ids(routingCandidates(children(8), 'sub-7'))).toEqual(['sub-3', 'sub-4', 'sub-5', 'sub-6', 'sub-8']);
    expect(ids(routingCandidates(children(1), 'sub-1'))).toEqual([]);
    // An id that is not a sub-session (a user, another top-level Session) excludes nothing.
    expect(ids(routingCandidates(children(3), 'elsewhere'))).toEqual(['sub-1', 'sub-2', 'sub-3']);
  });
});

describe('bestFit', () => {
  it('takes the highest session relevance among those in the high band', () => {
    const scored = [
      { child: child(1), score: 0.7 },
      { child: child(2), score: 0.95 },
      { child: child(3), score: 0.8 },
    ];
    expect(bestFit(scored, thresholds)).toEqual({ child: child(2), score: 0.95 });
  });

  it('takes none when no score reaches the high band; the threshold itself is high', () => {
    expect(
      bestFit(
        [
          { child: child(1), score: 0.6499 },
          { child: child(2), score: 0.2 },
        ],
        thresholds,
      ),
    ).toBeUndefined();
    expect(bestFit([], thresholds)).toBeUndefined();
    expect(bestFit([{ child: child(1), score: 0.65 }], thresholds)?.child.sessionId).toBe('sub-1');
  });

  it('keeps the earlier candidate on a tie', () => {
    const scored = [
      { child: child(1), score: 0.9 },
      { child: child(2), score: 0.9 },
    ];
    expect(bestFit(scored, thresholds)?.child.sessionId).toBe('sub-1');
  });

  it("uses the Session's own thresholds", () => {
    const scored = [{ child: child(1), score: 0.8 }];
    expect(bestFit(scored, { high: 0.85, low: 0.35 })).toBeUndefined();
    expect(bestFit(scored, { high: 0.75, low: 0.35 })?.score).toBe(0.8);
  });
});
