/**
 * The look-ahead's decisions, without Temporal: which queued inputs it judges and when, against which
 * goals, and when a judgment made ahead may stand in for the one made at the input's turn. The
 * relevance function is the activity proxy's shape; here it records each request and answers from it.
 * test/lookahead.test.ts checks on a real server that judging ahead changes no decision.
 */
import { describe, expect, it } from 'vitest';
import type { RelevanceRequest } from '../../contract/relevance.js';
import { bindNext, intake } from '../../workflows/ledger/intake.js';
import { initialState } from '../../workflows/run/state.js';
import { makeLookahead, relevanceRequest } from '../../workflows/understanding/lookahead.js';
import type { SessionState } from '../../contract/state.js';

interface Scores {
  phaseRelevance: number;
  sessionRelevance: number;
}

/** A relevance role that records its requests; each answer names the call that made it. */
function recordingRelevance(fail: (request: RelevanceRequest) => boolean = () => false) {
  const calls: RelevanceRequest[] = [];
  const relevance = (request: RelevanceRequest): Promise<Scores> => {
    calls.push(request);
    if (fail(request)) return Promise.reject(new Error(`relevance failed for ${request.message.text}`));
    return Promise.resolve({ phaseRelevance: calls.length / 100, sessionRelevance: 0.5 });
  };
  return { calls, relevance };
}

/** A Session with goals, one input bound, and `queued` inputs waiting. */
function sessionWithQueue(queued: number, relevanceLookahead = 4): SessionState {
  const state = initialState({
    sessionId: 'ahead',
    goals: { session: 'Own the Q3 report', phase: 'Draft the outline' },
    settings: { relevanceLookahead },
  });
  intake(state, { messageId: 'first', text: 'start the report' }, 'signal', 0);
  bindNext(state, 0);
  for (let i = 1; i <= queued; i++) {
    intake(state, { messageId: `q${i}`, text: `step ${i}`, resources: [{ uri: `file:///s${i}.md` }] }, 'signal', i);
  }
  return state;
}

const texts = (calls: RelevanceRequest[]) => calls.map((c) => c.message.text);

describe('makeLookahead', () => {
  it('judges the first relevanceLookahead queued inputs, with the request their turn would make', () => {
    const state = sessionWithQueue(6, 4);
    const { calls, relevance } = recordingRelevance();
    makeLookahead(state, relevance).fill();
    expect(calls).toEqual(
      state.queue.slice(0, 4).map((input) => relevanceRequest(input, 'Draft the outline', 'Own the Q3 report')),
    );
    expect(calls[0]?.message.resources).toEqual([{ uri: 'file:///s1.md' }]);
  });

  it('judges nothing when turned off, without goals, or before the first input is bound', () => {
    const off = sessionWithQueue(3, 0);
    const noGoals = initialState({ sessionId: 'none' });
    intake(noGoals, { messageId: 'a', text: 'first' }, 'signal', 0);
    bindNext(noGoals, 0);
    intake(noGoals, { messageId: 'b', text: 'second' }, 'signal', 0);
    // Goals given at start, but nothing bound yet: the first input still decides alone.
    const unbound = initialState({ sessionId: 'unbound', goals: { session: 'Own the Q3 report' } });
    intake(unbound, { messageId: 'a', text: 'first' }, 'signal', 0);
    for (const state of [off, noGoals, unbound]) {
      const { calls, relevance } = recordingRelevance();
      makeLookahead(state, relevance).fill();
      expect(calls).toEqual([]);
    }
  });

  it('judges each input once per goals: a second fill only reaches inputs that moved into the width', () => {
    const state = sessionWithQueue(5, 2);
    const { calls, relevance } = recordingRelevance();
    const lookahead = makeLookahead(state, relevance);
    lookahead.fill();
    lookahead.fill();
    expect(texts(calls)).toEqual(['step 1', 'step 2']);
    const bound = bindNext(state, 10);
    expect(bound?.text).toBe('step 1');
    void lookahead.take(bound!.seq, 'Draft the outline', 'Own the Q3 report');
    lookahead.fill();
    expect(texts(calls)).toEqual(['step 1', 'step 2', 'step 3']);
  });

  it('hands over a judgment made against the same goals once, then forgets it', async () => {
    const state = sessionWithQueue(3, 3);
    const { relevance } = recordingRelevance();
    const lookahead = makeLookahead(state, relevance);
    lookahead.fill();
    const seq = state.queue[1]!.seq;
    // The second call judged the second input.
    await expect(lookahead.take(seq, 'Draft the outline', 'Own the Q3 report')).resolves.toEqual({
      phaseRelevance: 0.02,
      sessionRelevance: 0.5,
    });
    expect(lookahead.take(seq, 'Draft the outline', 'Own the Q3 report')).toBeUndefined();
    expect(lookahead.take(999, 'Draft the outline', 'Own the Q3 report')).toBeUndefined();
  });

  it('hands over the task terms of a combined judgment made ahead with its scores', async () => {
    const state = sessionWithQueue(1, 1);
    const combined = (request: RelevanceRequest) =>
      Promise.resolve({ phaseRelevance: 0.1, sessionRelevance: 0.9, terms: request.message.text.split(' ') });
    const lookahead = makeLookahead(state, combined);
    lookahead.fill();
    await expect(lookahead.take(state.queue[0]!.seq, 'Draft the outline', 'Own the Q3 report')).resolves.toEqual({
      phaseRelevance: 0.1,
      sessionRelevance: 0.9,
      terms: ['step', '1'],
    });
  });

  it('drops a judgment made against other goals, and does not keep it for the old goals either', () => {
    const state = sessionWithQueue(2, 2);
    const { relevance } = recordingRelevance();
    const lookahead = makeLookahead(state, relevance);
    lookahead.fill();
    const seq = state.queue[0]!.seq;
    expect(lookahead.take(seq, 'Write the appendix', 'Own the Q3 report')).toBeUndefined();
    expect(lookahead.take(seq, 'Draft the outline', 'Own the Q3 report')).toBeUndefined();
    // Only the phase goal and the session goal together match: swapping them is other goals.
    const other = state.queue[1]!.seq;
    expect(lookahead.take(other, 'Own the Q3 report', 'Draft the outline')).toBeUndefined();
  });

  it('judges queued inputs again after the goals changed, and hands over only the new judgment', async () => {
    const state = sessionWithQueue(2, 2);
    const { calls, relevance } = recordingRelevance();
    const lookahead = makeLookahead(state, relevance);
    lookahead.fill();
    state.goals.phase = { text: 'Write the appendix', resources: [], setAtSeq: 2 };
    lookahead.fill();
    expect(calls.map((c) => [c.message.text, c.phaseGoal])).toEqual([
      ['step 1', 'Draft the outline'],
      ['step 2', 'Draft the outline'],
      ['step 1', 'Write the appendix'],
      ['step 2', 'Write the appendix'],
    ]);
    const seq = state.queue[0]!.seq;
    await expect(lookahead.take(seq, 'Write the appendix', 'Own the Q3 report')).resolves.toMatchObject({
      phaseRelevance: 0.03,
    });
  });

  it('keeps a failed judgment from being an unhandled rejection, and hands the failure to whoever takes it', async () => {
    const state = sessionWithQueue(2, 2);
    const { relevance } = recordingRelevance(() => true);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const lookahead = makeLookahead(state, relevance);
      lookahead.fill();
      // One is dropped (the goals moved on), one is taken by the input's turn.
      state.goals.phase = { text: 'Write the appendix', resources: [], setAtSeq: 2 };
      lookahead.fill();
      const taken = lookahead.take(state.queue[1]!.seq, 'Write the appendix', 'Own the Q3 report');
      await expect(taken).rejects.toThrow('relevance failed for step 2');
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('relevanceRequest', () => {
  it('carries the message text, its resources and the two goals, and nothing else of the input', () => {
    const state = sessionWithQueue(1);
    const input = state.queue[0]!;
    expect(relevanceRequest(input, 'phase goal', 'session goal')).toEqual({
      message: { text: 'step 1', resources: [{ uri: 'file:///s1.md' }] },
      phaseGoal: 'phase goal',
      sessionGoal: 'session goal',
    });
  });
});
