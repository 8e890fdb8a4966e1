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

/** Retrieval terms as recall gets them: trimmed, de-duplicated, each at most 80 characters. */
export const TaskTerms = z
  .array(z.string())
  .max(64)
  .transform((terms) => [...new Set(terms.map((t) => t.trim()).filter((t) => t.length > 0 && t.length <= 80))]);

/**
 * The relevance activity's result: the two scores and, from a worker that judges relevance and
 * extracts the message's task terms in one call (combined understanding), those terms. Terms that do
 * not parse read as absent: they never degrade the verdict, and a new phase without them gets the
 * separate extraction call.
 */
export const RelevanceResult = RelevanceScores.extend({
  terms: TaskTerms.optional().catch(undefined),
  /**
   * The message's task statement (a new phase's goal), or, when it `refines` the current work, the
   * refined phase goal. Checked by the Session (contract/goals.ts), which falls back to the
   * deterministic statement; absent from workers older than statements and from the local provider.
   */
  goal: z.string().nullish().catch(undefined),
  /** Whether the message refines the current work (a new constraint or detail of the deliverable). */
  refines: z.boolean().optional().catch(undefined),
});
export type RelevanceResult = z.infer<typeof RelevanceResult>;

/**
 * The combined call's answer as the model is asked for it (its JSON Schema in `json_schema` mode):
 * both scores and the terms. It is parsed as RelevanceResult, so bad terms only drop the terms.
 */
export const UnderstandingAnswer = RelevanceScores.extend({
  terms: z.array(z.string()).max(64),
  goal: z.string().nullable(),
  refines: z.boolean(),
});

export type Band = 'high' | 'low' | 'uncertain';

/** `high` at or above thresholds.high, `low` at or below thresholds.low, `uncertain` between. */
export function band(score: number, thresholds: Thresholds): Band {
  if (score >= thresholds.high) return 'high';
  if (score <= thresholds.low) return 'low';
  return 'uncertain';
}
