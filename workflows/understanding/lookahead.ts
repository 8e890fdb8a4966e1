/**
 * Relevance judged ahead: while one input's environment preparation and agent turn run, the next
 * queued inputs are judged against the goals that input's decision left in place. Relevance is
 * stateless (the message and the two goal texts are its whole input), so a judgment made ahead
 * against the same goals is the judgment the Session would make when it gets there. When the goals
 * have changed by then (a new phase, a `set-goals` command), the early judgment is dropped and the
 * input is judged again: decisions are identical to processing one input at a time. A judgment made
 * ahead that failed (a timeout while it ran beside other work, say) is not used either: the input is
 * judged again at its turn, so only a failure at that point degrades it.
 *
 * A judgment outlives the input whose turn started it, so `relevance` is expected to run each call
 * in a scope of its own (process-input.ts passes one that does, run/call-scopes.ts).
 *
 * Judgments live in workflow memory only. Continue-as-new drops them (the next run judges afresh),
 * and nothing here is carried, so state size does not change.
 */
import type { SessionActivityProxies } from '../stages/activity-proxies.js';
import type { Lookahead } from '../stages/session-context.js';
import type { PendingInput, SessionState } from '../../contract/state.js';

type Relevance = SessionActivityProxies['relevance'];
type RelevanceScores = Awaited<ReturnType<Relevance>>;

interface Judgment {
  /** The goal texts it was judged against. */
  goals: string;
  result: Promise<RelevanceScores>;
  /** Its scores, once it has answered. */
  answered?: RelevanceScores;
}

const goalsKey = (phaseGoal: string, sessionGoal: string) => JSON.stringify([phaseGoal, sessionGoal]);

/**
 * The relevance request for an input against two goal texts. One function for the judgment made
 * ahead and the one made at the input's turn: a judgment ahead stands in for the other only because
 * the requests are the same.
 */
export function relevanceRequest(
  input: Pick<PendingInput, 'text' | 'resources'>,
  phaseGoal: string,
  sessionGoal: string,
): Parameters<Relevance>[0] {
  return { message: { text: input.text, resources: input.resources }, phaseGoal, sessionGoal };
}

export function makeLookahead(state: SessionState, relevance: Relevance): Lookahead {
  const judgments = new Map<number, Judgment>();
  const judge = (input: PendingInput, phaseGoal: string, sessionGoal: string): Judgment => {
    const result = relevance(relevanceRequest(input, phaseGoal, sessionGoal));
    const judgment: Judgment = { goals: goalsKey(phaseGoal, sessionGoal), result };
    // Awaited later (or never, if dropped): a failure must not count as an unhandled rejection,
    // which would fail the workflow task. The awaiting stage still sees the failure.
    result.then(
      (scores) => {
        judgment.answered = scores;
      },
      () => undefined,
    );
    return judgment;
  };
  return {
    fill() {
      const width = state.settings.relevanceLookahead;
      const { session, phase } = state.goals;
      // The first input sets the goals and is never judged; nothing can be judged without goals.
      if (width === 0 || !session || !phase || state.counts.bound === 0) return;
      const key = goalsKey(phase.text, session.text);
      for (const input of state.queue.slice(0, width)) {
        const current = judgments.get(input.seq);
        if (current?.goals === key) continue;
        judgments.set(input.seq, judge(input, phase.text, session.text));
      }
    },
    answered(seq, phaseGoal, sessionGoal) {
      const judgment = judgments.get(seq);
      return judgment?.goals === goalsKey(phaseGoal, sessionGoal) ? judgment.answered : undefined;
    },
    take(seq, phaseGoal, sessionGoal) {
      const judgment = judgments.get(seq);
      judgments.delete(seq);
      if (!judgment) return undefined;
      return judgment.goals === goalsKey(phaseGoal, sessionGoal) ? judgment.result : undefined;
    },
  };
}
