/**
 * The trained conflict check of the local relevance scorer (docs/relevance.md, "The trained
 * conflict check"): a multinomial logistic regression over the rules' verdict, their cues and graded
 * signals, whose weights `scripts/train-relevance.ts` fits on the labelled development files and
 * writes to `relevance-model.json`. Inference is a few dot products: deterministic and cheap.
 *
 * The five class probabilities become two scores: phase relevance is 0.5 + gain × (P(continue) +
 * P(conflict) − P(new-phase) − P(out-of-scope)) / 2, session relevance the same with (P(continue) +
 * P(new-phase) − P(out-of-scope) − P(conflict)). Probability on `uncertain`, or split between
 * opposite answers, keeps a score near 0.5.
 *
 * The model's scores do not reach the decision table on their own (`combineScores`): the rules keep
 * every decision that changes state, and the model may only mark as a conflict a message the rules
 * would continue with. On held-out text the model alone detected conflicts better than the rules
 * but moved state more often where it should have stayed (docs/relevance.md, "The trained conflict
 * check"); a conflict keeps state, so this use gains the first without the second.
 */
import { band, type RelevanceScores } from '../../contract/relevance.js';
import { DEFAULT_THRESHOLDS } from '../../contract/messages.js';
import type { RelevanceEvidence, RelevanceJudgement, RelevanceRule } from './relevance.js';
import { signals } from './relevance-signals.js';
import trained from './relevance-model.json' with { type: 'json' };

/** The decisions the model predicts, in the order of its weight rows. */
export const CLASSES = ['continue', 'new-phase', 'out-of-scope', 'conflict', 'uncertain'] as const;
export type ModelClass = (typeof CLASSES)[number];

const RULES: readonly RelevanceRule[] = [
  'acknowledgement',
  'too-vague',
  'elliptical-question',
  'personal-request',
  'unrelated-request',
  'constraint-conflict',
  'new-step',
  'new-deliverable',
  'continuation',
  'correction',
  'refinement',
  'unlinked',
];

/** The model's inputs by name, in a fixed order (the weight columns). */
export function modelFeatures(evidence: RelevanceEvidence, rules: RelevanceJudgement): Record<string, number> {
  const { f, meaning, sim, message, phase, session } = evidence;
  const flag = (x: boolean | number) => (typeof x === 'number' ? (x > 0 ? 1 : 0) : x ? 1 : 0);
  const s = signals(message, phase, session);
  const out: Record<string, number> = {};
  for (const rule of RULES) out[`rule:${rule}`] = flag(rules.rule === rule);
  Object.assign(out, {
    rulePhase: rules.phaseRelevance,
    ruleSession: rules.sessionRelevance,
    simPhase: sim.phase,
    simSession: sim.session,
    sameGoals: flag(phase.text.trim() === session.text.trim()),
    crossLanguage: flag(message.lang !== session.lang),
    question: flag(message.question),
    stepShift: flag(f.stepShift.length),
    completion: flag(f.completion.length),
    continuation: flag(f.continuation),
    correction: flag(f.correction),
    additive: flag(f.additive),
    personal: flag(f.personal.length),
    worldQuestion: flag(f.worldQuestion),
    workRef: flag(f.workRef.length),
    overlapPhase: flag(f.overlap.phase.length),
    overlapSession: flag(f.overlap.session.length),
    newDeliverable: flag(f.newDeliverables.length),
    textConflict: flag(f.conflict.length),
    // The kinds of conflict cue differ in how much they prove: a negated or rejected goal term
    // is the message contradicting the goal; an override ("instead", "just") often only refines.
    conflictNegates: flag(f.conflict.some((c) => c.startsWith('negates'))),
    conflictDismisses: flag(f.conflict.some((c) => c.startsWith('dismisses') || c.startsWith('rejects'))),
    conflictProhibited: flag(f.conflict.some((c) => c.startsWith('names prohibited'))),
    conflictOverride: flag(f.conflict.some((c) => c.startsWith('overrides'))),
    conceptConflict: flag(evidence.conceptConflicts.length),
    conceptRuledOut: flag(
      evidence.conceptConflicts.some((c) => c.includes('rules out') || c.startsWith('names prohibited')),
    ),
    conceptReplaced: flag(evidence.conceptConflicts.some((c) => c.startsWith('replaces') || c.startsWith('negates'))),
    sharedConcept: flag(meaning.concepts.length),
    sharedDomain: flag(meaning.domains.length),
    relatedWords: flag(meaning.related.length),
    foreignDomain: flag(meaning.foreign.length),
    ...s,
  });
  return out;
}

export interface RelevanceModel {
  version: string;
  /** Feature names, the columns of `weights`. */
  features: string[];
  classes: ModelClass[];
  /** Standardisation: x' = (x − mean) / scale. */
  mean: number[];
  scale: number[];
  /** One row per class. */
  weights: number[][];
  bias: number[];
  /** Multiplies the probability margins before they become scores (see the module comment). */
  gain: number;
  /** Which message-side evidence a conflict needs (see `conflictEvidence`). */
  conflictGate: ConflictGate;
}

/**
 * A conflict needs the message to contradict a stated constraint (eval/README.md, rule 4), not just
 * a goal that states one. Without message-side evidence the model's conflict probability goes to
 * `continue`: the goal's constraint alone says the message *could* break it, not that it does.
 * `strict` counts explicit evidence (a rule's conflict cue, a negated constraint term, a number past
 * the goal's limit, a sibling of what a constraining goal chose); `loose` also a message that merely
 * touches the constraint clause; `none` applies no gate.
 */
export type ConflictGate = 'none' | 'strict' | 'loose';

export function conflictEvidence(x: Record<string, number>, gate: ConflictGate): boolean {
  if (gate === 'none') return true;
  const strict = [
    'textConflict',
    'conceptConflict',
    'negatesConstraint',
    'exceedsLimit',
    'belowFloor',
    'siblingUnderConstraint',
  ];
  if (strict.some((name) => (x[name] ?? 0) > 0)) return true;
  if (gate === 'strict') return false;
  return (
    (x.goalConstraint ?? 0) > 0 &&
    ((x.touchesConstraint ?? 0) > 0 || (x.constraintHan ?? 0) > 0 || (x.vecConstraint ?? 0) >= 0.55)
  );
}

/** Moves the conflict probability to `continue` when the message carries no evidence of a conflict. */
export function gateConflict(p: number[], x: Record<string, number>, gate: ConflictGate): number[] {
  if (conflictEvidence(x, gate)) return p;
  const k = CLASSES.indexOf('conflict');
  return p.map((v, i) => (i === 0 ? v + (p[k] ?? 0) : i === k ? 0 : v));
}

export const MODEL = trained as RelevanceModel;

/** Class probabilities for named features (softmax of the linear scores). */
export function classify(model: RelevanceModel, features: Record<string, number>): number[] {
  const x = model.features.map((name, i) => ((features[name] ?? 0) - (model.mean[i] ?? 0)) / (model.scale[i] || 1));
  const z = model.weights.map((row, k) => row.reduce((sum, w, i) => sum + w * (x[i] ?? 0), model.bias[k] ?? 0));
  const max = Math.max(...z);
  const e = z.map((v) => Math.exp(v - max));
  const total = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / total);
}

/** The two scores for class probabilities in CLASSES order (see the module comment). */
export function scoresFromProbabilities(p: number[], gain: number): RelevanceScores {
  const [cont = 0, next = 0, away = 0, conflict = 0] = p;
  const score = (margin: number) => Math.round(Math.min(1, Math.max(0, 0.5 + (gain * margin) / 2)) * 1000) / 1000;
  return {
    phaseRelevance: score(cont + conflict - next - away),
    sessionRelevance: score(cont + next - away - conflict),
  };
}

/** The model's scores for one message's features: class probabilities after the conflict gate. */
export function modelScores(
  model: RelevanceModel,
  x: Record<string, number>,
): { p: number[]; scores: RelevanceScores } {
  const p = gateConflict(classify(model, x), x, model.conflictGate);
  return { p, scores: scoresFromProbabilities(p, model.gain) };
}

/**
 * The scores the scorer returns: the rules', except where the rules would continue (both bands
 * high at the Session's default thresholds) and the model reads a conflict (phase high, session
 * low). Then the session score drops to the model's, and the decision becomes `conflict`, which
 * keeps goals and capabilities as they are. The model never starts a new phase, never routes a
 * message away and never makes one uncertain.
 */
export function combineScores(rules: RelevanceScores, model: RelevanceScores): RelevanceScores {
  const of = (s: RelevanceScores) =>
    `${band(s.phaseRelevance, DEFAULT_THRESHOLDS)}/${band(s.sessionRelevance, DEFAULT_THRESHOLDS)}`;
  if (of(rules) === 'high/high' && of(model) === 'high/low')
    return { phaseRelevance: rules.phaseRelevance, sessionRelevance: model.sessionRelevance };
  return rules;
}
