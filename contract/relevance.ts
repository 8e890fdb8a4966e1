/**
 * The relevance role's contract: what it may see, what it answers, and the bands the decision table
 * reads its scores in. One schema each, so the workflow, the activity and the models share them.
 *
 * Pure module: safe to import from workflow code.
 */
import { z } from 'zod';
import { ResourceRef, type Thresholds } from './messages.js';

/**
 * What the relevance role may see: the message, its resource refs and the two goals. Nothing else:
 * the activity refuses a request that carries more.
 */
export const RelevanceRequest = z
  .object({
    message: z.object({ text: z.string(), resources: z.array(ResourceRef) }).strict(),
    phaseGoal: z.string(),
    sessionGoal: z.string(),
  })
  .strict();
export type RelevanceRequest = z.infer<typeof RelevanceRequest>;

/** The relevance role's answer: two scores in [0, 1]. */
export const RelevanceScores = z
  .object({
    phaseRelevance: z.number().min(0).max(1),
    sessionRelevance: z.number().min(0).max(1),
  })
  .strip();
export type RelevanceScores = z.infer<typeof RelevanceScores>;

export type Band = 'high' | 'low' | 'uncertain';

/** `high` at or above thresholds.high, `low` at or below thresholds.low, `uncertain` between. */
export function band(score: number, thresholds: Thresholds): Band {
  if (score >= thresholds.high) return 'high';
  if (score <= thresholds.low) return 'low';
  return 'uncertain';
}
