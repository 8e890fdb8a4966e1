/** The local relevance scorer; its rules, concepts and vectors are specified in docs/relevance.md. */
import similarity from 'wink-nlp/utilities/similarity.js';
import type { RelevanceScores } from '../../contract/relevance.js';
import {
  ACKNOWLEDGEMENTS,
  HESITATIONS,
  NON_PREDICATE_VERBS,
  VAGUE_REFERENCES,
  WH_WORDS,
  isDiscourseWord,
} from './cues.js';
import { conceptHits, type ConceptHit } from './concepts.js';
import { conceptConflicts } from './relevance-conflicts.js';
import { features, type Features } from './relevance-features.js';
import { CLASSES, MODEL, combineScores, modelFeatures, modelScores, type ModelClass } from './relevance-model.js';
import { analyse, contentTerms, sameTerm, type Analysis } from './text.js';
import { wordCosine } from './vectors.js';

export interface RelevanceInput {
  message: string;
  phaseGoal: string;
  sessionGoal: string;
}

/** Which rule of the module comment decided the band. */
export type RelevanceRule =
  | 'acknowledgement'
  | 'too-vague'
  | 'elliptical-question'
  | 'personal-request'
  | 'unrelated-request'
  | 'constraint-conflict'
  | 'new-step'
  | 'new-deliverable'
  | 'continuation'
  | 'correction'
  | 'refinement'
  | 'unlinked';

export interface RelevanceJudgement extends RelevanceScores {
  /** The rule that matched first (its scores are the verdict; also an input of the trained model). */
  rule: RelevanceRule;
  /** The cues that fired, for explanations and tests. */
  cues: string[];
  similarity: { phase: number; session: number };
  /** The rules' own scores, before the trained conflict check (`scoreRelevance` only). */
  rules?: RelevanceScores;
  /** The trained model's scores, which may turn the rules' `continue` into `conflict` (`scoreRelevance` only). */
  model?: RelevanceScores;
  /** The trained model's class probabilities (`scoreRelevance` only). */
  probabilities?: Record<ModelClass, number>;
}

/**
 * How much of the message each goal covers: Tversky similarity of the content-term sets with
 * alpha 1 and beta 0 (|message ∩ goal| / |message|, wink-nlp's implementation), after mapping each
 * message term onto a goal term it names (`sameTerm`). Containment rather than a symmetric measure,
 * because a goal is longer than most messages and covering the whole goal is not the question.
 * `session` is the larger of the message's coverage by the session goal and by the phase goal: the
 * phase is part of the session's work.
 */
export function goalSimilarity(
  message: Analysis,
  phase: Analysis,
  session: Analysis,
): { phase: number; session: number } {
  const messageConcepts = conceptTermsAt(message);
  const covered = (goal: Analysis) => {
    const goalTerms = contentTerms(goal);
    const goalConcepts = new Set(conceptHits(goal.tokens).map((h) => conceptTerm(h)));
    // A message word that names a concept the goal names counts as the goal's word, in either language.
    const m = new Set(
      message.tokens
        .map((t, i) => ({ t, i }))
        .filter(({ t }) => !t.stop)
        .map(({ t, i }) => {
          const concept = messageConcepts.get(i);
          if (concept && goalConcepts.has(concept)) return concept;
          return goalTerms.find((g) => sameTerm(g, t.term)) ?? t.term;
        }),
    );
    const g = new Set([...goalTerms, ...goalConcepts]);
    if (m.size === 0 || goalTerms.length === 0) return 0;
    return similarity.set.tversky(m, g, 1, 0);
  };
  const toPhase = covered(phase);
  return { phase: round(toPhase), session: round(Math.max(toPhase, covered(session))) };
}

const conceptTerm = (h: ConceptHit) => `concept:${h.concept.id}`;

/** For each token position inside a concept mention, the concept's term. */
function conceptTermsAt(a: Analysis): Map<number, string> {
  const at = new Map<number, string>();
  for (const h of conceptHits(a.tokens)) for (let i = h.start; i < h.end; i++) at.set(i, conceptTerm(h));
  return at;
}

/**
 * Below this cosine two English words are not taken as related: GloVe puts loosely associated
 * words ("weather" and "guide", 0.41) close to it, closely related ones ("alert" and "monitoring",
 * 0.55) above.
 */
export const RELATED_COSINE = 0.5;

/**
 * Meaning the message shares with the goals beyond shared words: concepts of the bilingual lexicon
 * both name, the domains of their concepts, and English word pairs whose vectors are close.
 */
export interface SharedMeaning {
  concepts: string[];
  domains: string[];
  related: string[];
  /** Domains the message's concepts belong to that none of the goals' concepts do. */
  foreign: string[];
}

export function sharedMeaning(message: Analysis, goals: Analysis[]): SharedMeaning {
  const messageHits = conceptHits(message.tokens);
  const goalHits = goals.flatMap((g) => conceptHits(g.tokens));
  const goalIds = new Set(goalHits.map((h) => h.concept.id));
  const goalDomains = new Set(goalHits.flatMap((h) => (h.concept.domain ? [h.concept.domain] : [])));
  const concepts = [...new Set(messageHits.map((h) => h.concept.id).filter((id) => goalIds.has(id)))];
  const domains = [
    ...new Set(
      messageHits.flatMap((h) => (h.concept.domain && goalDomains.has(h.concept.domain) ? [h.concept.domain] : [])),
    ),
  ];
  const vectorWords = (a: Analysis) =>
    a.tokens.filter((t) => t.script === 'latin' && !t.stop && !isDiscourseWord(t) && /^[a-z]+$/.test(t.lower));
  const goalWords = [
    ...new Set(
      goals.flatMap((g) =>
        vectorWords(g)
          .filter((t) => t.pos === 'noun')
          .map((t) => t.lower),
      ),
    ),
  ];
  const related: string[] = [];
  for (const t of vectorWords(message)) {
    if (t.pos !== 'noun') continue;
    for (const g of goalWords) {
      if (g === t.lower) continue;
      const cos = wordCosine(t.lower, g);
      if (cos !== undefined && cos >= RELATED_COSINE) related.push(`${t.lower}~${g}`);
    }
  }
  const foreign = [
    ...new Set(
      messageHits.flatMap((h) => (h.concept.domain && !goalDomains.has(h.concept.domain) ? [h.concept.domain] : [])),
    ),
  ];
  return { concepts, domains, related, foreign: concepts.length > 0 || domains.length > 0 ? [] : foreign };
}

/**
 * A Session's goals stay the same for many messages; analysing them again for each one is most of
 * a call's work and garbage. Analyses are never mutated, so a small LRU cache is safe.
 */
const GOAL_CACHE_SIZE = 256;
const goalCache = new Map<string, Analysis>();

function analyseGoal(text: string): Analysis {
  const hit = goalCache.get(text);
  if (hit) {
    goalCache.delete(text);
    goalCache.set(text, hit);
    return hit;
  }
  const analysis = analyse(text);
  goalCache.set(text, analysis);
  if (goalCache.size > GOAL_CACHE_SIZE) goalCache.delete(goalCache.keys().next().value as string);
  return analysis;
}

/**
 * Everything the rules and the trained model read about one message: the three analyses, the
 * similarity to the goals, the discourse cues (`features`), the meaning shared with the goals and
 * rule 4's concept conflicts. Computed once per call.
 */
export interface RelevanceEvidence {
  message: Analysis;
  phase: Analysis;
  session: Analysis;
  sim: { phase: number; session: number };
  /** The message's words (punctuation dropped) and, of those, its content words. */
  words: Analysis['tokens'];
  content: Analysis['tokens'];
  f: Features;
  meaning: SharedMeaning;
  /** Rule 4's conflicts through the concept lexicon (apart from `f.conflict`, the textual ones). */
  conceptConflicts: string[];
}

export function gatherEvidence(input: RelevanceInput): RelevanceEvidence {
  const message = analyse(input.message);
  const phase = analyseGoal(input.phaseGoal);
  const session = analyseGoal(input.sessionGoal);
  const words = message.tokens.filter((t) => t.pos !== 'punct');
  const content = words.filter((t) => !t.stop && !isDiscourseWord(t));
  return {
    message,
    phase,
    session,
    sim: goalSimilarity(message, phase, session),
    words,
    content,
    f: features(message, phase, session, content),
    meaning: sharedMeaning(message, [phase, session]),
    conceptConflicts: conceptConflicts(message, phase, session),
  };
}

/** The seven rules of docs/relevance.md, first match wins. Pure and deterministic. */
export function judgeByRules(input: RelevanceInput, evidence = gatherEvidence(input)): RelevanceJudgement {
  const { message, sim, words, content, f, meaning } = evidence;
  const judge = (rule: RelevanceRule, p: number, s: number, cues: string[]): RelevanceJudgement => ({
    phaseRelevance: round(clamp(p)),
    sessionRelevance: round(clamp(s)),
    rule,
    cues,
    similarity: sim,
  });

  // Rule 1: too short to judge.
  const bare = input.message.replace(/[\p{P}\p{S}\s]/gu, '').toLowerCase();
  if (ACKNOWLEDGEMENTS.has(bare)) return judge('acknowledgement', 0.9, 0.9, ['acknowledgement']);
  if (content.length === 0) {
    const hesitant = words.some((t) => HESITATIONS.has(t.lower) || VAGUE_REFERENCES.has(t.lower));
    const acknowledges = words.some((t) => ACKNOWLEDGEMENTS.has(t.lower));
    if (acknowledges && !hesitant && !message.question) return judge('acknowledgement', 0.9, 0.9, ['acknowledgement']);
    return judge('too-vague', 0.5, 0.5, [message.question ? 'bare question' : 'no content']);
  }

  // Rule 2: elliptical question.
  const predicate = words.some((t) => t.pos === 'verb' && !NON_PREDICATE_VERBS.has(t.lower) && !t.stop);
  // "what's a good laptop?" is a complete question; "what about …" and "how about …" are elliptical.
  const asksWh = message.tokens.some(
    (t, i) => WH_WORDS.has(t.lower) && !ELLIPTICAL_OPENERS.has(message.tokens[i + 1]?.lower ?? ''),
  );
  if (message.question && !predicate && !asksWh && content.length <= 2) {
    return judge('elliptical-question', 0.5, 0.5, ['question without a predicate']);
  }

  const linked = isLinked(evidence);
  const anchored = linked || f.continuation || f.correction;
  // Rule 3: another responsibility.
  const outside = (rule: RelevanceRule, cues: string[]) =>
    judge(rule, 0.1 + 0.2 * sim.phase, 0.1 + 0.2 * sim.session, cues);
  if (f.personal.length > 0 && f.workRef.length === 0) return outside('personal-request', f.personal);
  if ((f.additive || f.worldQuestion) && !anchored && f.newDeliverables.length === 0) {
    // Only a marker says it is another matter, yet it speaks of the goals' domain or of something
    // close to them ("also cover custom nodes" in a guide): too weak to route it away.
    // Shared domains only: word vectors of unrelated nouns are too often close ("night" and "day").
    const near = meaning.domains.map((d) => `domain ${d}`);
    if (near.length > 0)
      return judge('unrelated-request', 0.5, 0.5, ['additive or world question, but near the goals', ...near]);
    return outside('unrelated-request', [f.additive ? 'additive request' : 'question about the world']);
  }

  // Rule 4: conflict with a stated constraint.
  const conflicts = [...f.conflict, ...evidence.conceptConflicts];
  if (conflicts.length > 0)
    return judge('constraint-conflict', 0.75 + 0.2 * sim.phase, 0.15 + 0.1 * sim.session, conflicts);

  // Rule 5: new step or new deliverable.
  // A new deliverable in the goals' domain ("a quiz" in a lesson) is linked to the Session too. Word
  // vectors are not enough for that: "autumn" is close to "spring" whatever the spring is about.
  const related = meaning.domains.length > 0 || meaning.related.length > 0;
  const newPhase = (rule: RelevanceRule, cues: string[]) =>
    judge(rule, 0.2 + 0.1 * sim.phase, linked || meaning.domains.length > 0 ? 0.75 + 0.2 * sim.session : 0.5, cues);
  if (f.stepShift.length > 0 || f.completion.length > 0) {
    return newPhase('new-step', [...f.stepShift.map((s) => s.cue), ...f.completion, ...f.newDeliverables]);
  }
  if (f.newDeliverables.length > 0) return newPhase('new-deliverable', f.newDeliverables);

  // Rule 6: continuation or correction.
  if (f.continuation) return judge('continuation', 0.8 + 0.15 * sim.phase, 0.8 + 0.15 * sim.session, ['continue']);
  if (f.correction) return judge('correction', 0.8 + 0.15 * sim.phase, 0.8 + 0.15 * sim.session, ['correction']);

  // Rule 7: refinement of the current work. An instruction with no tie to the work that names
  // another line of work (its concepts belong to domains the goals do not touch) is not evidence
  // enough for "continue" nor for a state change: uncertain keeps state and lets the agent ask.
  if (!anchored && !related && meaning.foreign.length > 0) return judge('unlinked', 0.5, 0.5, meaning.foreign);
  return judge('refinement', 0.7 + 0.25 * sim.phase, 0.7 + 0.25 * sim.session, [
    ...f.workRef,
    ...f.overlap.phase,
    ...f.overlap.session,
    ...meaning.concepts,
    ...meaning.domains.map((d) => `domain ${d}`),
    ...meaning.related,
  ]);
}

/** Linked to the Session: a shared concept, a reference to the work, a shared noun, a step or completion marker. */
export function isLinked({ f, meaning }: RelevanceEvidence): boolean {
  return (
    meaning.concepts.length > 0 ||
    f.workRef.length > 0 ||
    f.overlap.phase.length > 0 ||
    f.overlap.session.length > 0 ||
    f.stepShift.length > 0 ||
    f.completion.length > 0
  );
}

const ELLIPTICAL_OPENERS = new Set(['about']);

function clamp(x: number): number {
  return Math.min(1, Math.max(0, x));
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/**
 * Scores one message against the two goals: the rules' verdict, which the trained model
 * (`relevance-model.ts`) may only turn from continue into conflict. Pure and deterministic.
 */
export function scoreRelevance(input: RelevanceInput): RelevanceJudgement {
  const evidence = gatherEvidence(input);
  const rules = judgeByRules(input, evidence);
  const { p, scores } = modelScores(MODEL, modelFeatures(evidence, rules));
  const own = { phaseRelevance: rules.phaseRelevance, sessionRelevance: rules.sessionRelevance };
  const combined = combineScores(own, scores);
  const checked = combined.sessionRelevance !== own.sessionRelevance;
  return {
    ...rules,
    ...combined,
    cues: checked ? [...rules.cues, 'trained conflict check'] : rules.cues,
    rules: own,
    model: scores,
    probabilities: Object.fromEntries(CLASSES.map((c, i) => [c, round(p[i] ?? 0)])) as Record<ModelClass, number>,
  };
}
