/**
 * The decision table: how a bound input relates to the Session's task. Relevance scores are
 * signals, not facts; this pure function turns them into exactly one decision.
 */
import type { Thresholds } from '../../contract/messages.js';
import { band, type Band, type RelevanceScores } from '../../contract/relevance.js';
import type { Decision } from '../../contract/state.js';

/** The relevance role's outcome as the workflow saw it. */
export type RelevanceOutcome = { ok: true; scores: RelevanceScores } | { ok: false; reason: string };

export interface DecisionInput {
  /** True when the Session has never prepared an environment for a task (its first task input). */
  firstTask: boolean;
  /** Absent for a first task input, which needs no relevance judgment. */
  relevance?: RelevanceOutcome;
  thresholds: Thresholds;
}

export interface DecisionOutcome {
  decision: Decision;
  bands: { phase: Band; session: Band } | null;
  degraded: string | null;
}

function validScore(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x) && x >= 0 && x <= 1;
}

/**
 * | phase | session | decision     |
 * |-------|---------|--------------|
 * | high  | high    | continue     |
 * | low   | high    | new-phase    |
 * | low   | low     | out-of-scope |
 * | high  | low     | conflict     |
 * | uncertain in either | uncertain |
 * | failed or invalid   | degraded  |
 */
export function decide(input: DecisionInput): DecisionOutcome {
  if (input.firstTask) return { decision: 'initialize', bands: null, degraded: null };
  const relevance = input.relevance;
  if (!relevance) return { decision: 'degraded', bands: null, degraded: 'no relevance result' };
  if (!relevance.ok) return { decision: 'degraded', bands: null, degraded: relevance.reason };
  const { phaseRelevance, sessionRelevance } = relevance.scores;
  if (!validScore(phaseRelevance) || !validScore(sessionRelevance)) {
    return { decision: 'degraded', bands: null, degraded: 'relevance scores outside [0, 1]' };
  }
  const bands = { phase: band(phaseRelevance, input.thresholds), session: band(sessionRelevance, input.thresholds) };
  return { decision: TABLE[bands.phase][bands.session], bands, degraded: null };
}

const TABLE: Record<Band, Record<Band, Decision>> = {
  high: { high: 'continue', low: 'conflict', uncertain: 'uncertain' },
  low: { high: 'new-phase', low: 'out-of-scope', uncertain: 'uncertain' },
  uncertain: { high: 'uncertain', low: 'uncertain', uncertain: 'uncertain' },
};

/** Decisions after which the environment is prepared (extract, recall, orchestrate, apply). */
export function preparesEnvironment(decision: Decision): boolean {
  return decision === 'initialize' || decision === 'new-phase';
}
