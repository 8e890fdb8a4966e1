/** The local relevance scorer; its rules, concepts and vectors are specified in docs/relevance.md. */
import similarity from 'wink-nlp/utilities/similarity';
import type { RelevanceScores } from '../../workflows/decide.js';
import {
  ACKNOWLEDGEMENTS,
  ADDITIVE_MARKERS,
  CLAUSE_INITIAL_OVERRIDES,
  COMMUNICATION_VERBS,
  CLAUSE_FINAL_STEP_MARKERS,
  COMPLETION_PHRASES,
  CREATION_VERBS,
  CONSTRAINT_MARKERS,
  CONTINUATION_MARKERS,
  CORRECTION_MARKERS,
  DEFINITE_DETERMINERS,
  DELIVERABLES,
  DISMISSALS,
  FIRST_PERSON_PLURAL,
  HESITATIONS,
  NEGATING_PREFIXES,
  NEW_ITEM_DETERMINERS,
  NON_PREDICATE_VERBS,
  OVERRIDE_MARKERS,
  PART_NOUNS,
  PERSONAL_WORDS,
  PRODUCTION_VERBS,
  PROHIBITION_MARKERS,
  PROPER_NAME_FORMATS,
  REJECTION_PHRASES,
  REJECTION_VERBS,
  STEP_MARKERS,
  TRANSLATION_VERBS,
  VAGUE_REFERENCES,
  WH_WORDS,
  WORK_LINK_NOUNS,
  WORK_OUTPUTS,
  WORK_PHRASES,
  WORK_PRONOUNS,
  ZH_BENEFICIARY_VERBS,
  ZH_DONE_SUFFIX,
  ZH_ITEM_CLASSIFIERS,
  ZH_NEGATORS,
  ZH_PERFECTIVE,
  ZH_POSSESSIVE_AFTER_ME,
  ZH_SETTLED_SUFFIX,
  findPhrases,
  isDiscourseWord,
  type Span,
} from './cues.js';
import { conceptHits, type ConceptHit } from './concepts.js';
import { analyse, contentTerms, sameTerm, type Analysis, type Token } from './text.js';
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
  rule: RelevanceRule;
  /** The cues that fired, for explanations and tests. */
  cues: string[];
  similarity: { phase: number; session: number };
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

/** The message's features, named as in the module comment. */
interface Features {
  stepShift: Span[];
  completion: string[];
  continuation: boolean;
  correction: boolean;
  additive: boolean;
  personal: string[];
  worldQuestion: boolean;
  workRef: string[];
  overlap: { phase: string[]; session: string[] };
  newDeliverables: string[];
  conflict: string[];
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

/** Scores one message against the two goals. Pure and deterministic. */
export function scoreRelevance(input: RelevanceInput): RelevanceJudgement {
  const message = analyse(input.message);
  const phase = analyseGoal(input.phaseGoal);
  const session = analyseGoal(input.sessionGoal);
  const sim = goalSimilarity(message, phase, session);
  const judge = (rule: RelevanceRule, p: number, s: number, cues: string[]): RelevanceJudgement => ({
    phaseRelevance: round(clamp(p)),
    sessionRelevance: round(clamp(s)),
    rule,
    cues,
    similarity: sim,
  });

  const words = message.tokens.filter((t) => t.pos !== 'punct');
  const content = words.filter((t) => !t.stop && !isDiscourseWord(t));

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

  const f = features(message, phase, session, content);
  const meaning = sharedMeaning(message, [phase, session]);
  const linked =
    meaning.concepts.length > 0 ||
    f.workRef.length > 0 ||
    f.overlap.phase.length > 0 ||
    f.overlap.session.length > 0 ||
    f.stepShift.length > 0 ||
    f.completion.length > 0;
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
  f.conflict.push(...conceptConflicts(message, phase, session));
  if (f.conflict.length > 0)
    return judge('constraint-conflict', 0.75 + 0.2 * sim.phase, 0.15 + 0.1 * sim.session, f.conflict);

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

const ELLIPTICAL_OPENERS = new Set(['about']);

function features(message: Analysis, phase: Analysis, session: Analysis, content: Token[]): Features {
  const tokens = message.tokens;
  const spans = (list: readonly string[]) => findPhrases(tokens, list);
  const additiveSpans = spans(ADDITIVE_MARKERS);
  const stepSpans = spans(STEP_MARKERS);
  const completionSpans = spans(COMPLETION_PHRASES);
  const correctionSpans = spans(CORRECTION_MARKERS);
  const dismissalSpans = spans(DISMISSALS);
  const rejectionSpans = spans(REJECTION_PHRASES);
  // Words inside a matched cue phrase are not read again: the "it" of "while you're at it" is no
  // reference to the work, the "that" of "after that" is none either.
  const consumed = new Set<number>();
  for (const span of [
    ...additiveSpans,
    ...stepSpans,
    ...completionSpans,
    ...correctionSpans,
    ...dismissalSpans,
    ...rejectionSpans,
  ]) {
    for (let i = span.start; i < span.end; i++) consumed.add(i);
  }

  const phaseTerms = phase.tokens.filter((t) => t.pos !== 'punct').map((t) => t.term);
  const phaseContent = contentTerms(phase);
  const sessionContent = contentTerms(session);
  const goalContent = [...phaseContent, ...sessionContent];
  const isGoalTerm = (t: Token, terms: string[]) => terms.some((g) => sameTerm(g, t.term));
  const nounLike = (t: Token) => !t.stop && t.pos !== 'verb';

  const initial = clauseInitial(tokens);
  const final = clauseFinal(tokens);
  const stepShift = stepSpans.filter(
    (s) => initial.has(s.start) || (final.has(s.end - 1) && CLAUSE_FINAL_STEP_MARKERS.has(s.cue)),
  );
  const completion = [...completionSpans.map((s) => s.cue), ...zhCompletion(tokens)];
  const continuation = findPhrases(tokens, CONTINUATION_MARKERS).some((s) => s.start === firstWord(tokens));
  const correction = correctionSpans.some((s) => s.cue !== 'no ,' || s.start === firstWord(tokens));

  const workRef = [
    ...findPhrases(tokens, WORK_PHRASES).map((s) => s.cue),
    ...tokens.filter((t) => WORK_LINK_NOUNS.has(t)).map((t) => t.lower),
    ...tokens.filter((t, i) => !consumed.has(i) && refersToWork(tokens, i)).map((t) => t.lower),
    ...definiteReferences(
      tokens,
      (t) =>
        DELIVERABLES.has(t) || PART_NOUNS.has(t) || WORK_OUTPUTS.has(t) || goalContent.some((g) => sameTerm(g, t.term)),
    ),
  ];

  const overlap = {
    phase: content.filter((t) => nounLike(t) && isGoalTerm(t, phaseContent)).map((t) => t.lower),
    session: content.filter((t) => nounLike(t) && isGoalTerm(t, sessionContent)).map((t) => t.lower),
  };

  const produces = tokens.some((t) => PRODUCTION_VERBS.has(t));
  const inPhase = (t: Token) => phaseTerms.some((g) => sameTerm(g, t.term));
  const isDeliverable = (t: Token) =>
    (t.script === 'latin' && PROPER_NAME_FORMATS.has(t.text)) || (!t.stop && DELIVERABLES.has(t) && !PART_NOUNS.has(t));
  const newDeliverables = tokens
    .map((t, i) => ({ t, i }))
    .filter(({ t, i }) => {
      if (inPhase(t) || PART_NOUNS.has(t)) return false;
      if (isDeliverable(t))
        return produces || stepShift.length > 0 || completion.length > 0 || introducedAsNew(tokens, i);
      // Any new item created from scratch ("write a haiku", "写个脚本") is a new piece of work too.
      return !t.stop && t.pos === 'noun' && introducedAsNew(tokens, i) && createdBefore(tokens, i);
    })
    .map(({ t }) => t.text);
  if (tokens.some((t) => TRANSLATION_VERBS.has(t))) newDeliverables.push('translation');

  return {
    stepShift,
    completion,
    continuation,
    correction,
    additive: additiveSpans.length > 0,
    personal: personalCues(tokens),
    worldQuestion:
      message.question &&
      tokens.some((t) => WH_WORDS.has(t.lower)) &&
      !tokens.some((t) => FIRST_PERSON_PLURAL.has(t.lower)),
    workRef,
    overlap,
    newDeliverables,
    conflict: conflictCues(tokens, session, consumed),
  };
}

function firstWord(tokens: Token[]): number {
  return tokens.findIndex((t) => t.pos !== 'punct');
}

/**
 * Positions that open a clause: the start of the message or right after punctuation, skipping
 * acknowledgements and interjections ("OK, now …", "营收写完了，接着 …").
 */
function clauseInitial(tokens: Token[]): Set<number> {
  const out = new Set<number>();
  let open = true;
  tokens.forEach((t, i) => {
    if (t.pos === 'punct') {
      open = true;
      return;
    }
    if (open) out.add(i);
    if (!(ACKNOWLEDGEMENTS.has(t.lower) || t.pos === 'intj')) open = false;
  });
  return out;
}

/** Positions that close a clause: the last word before punctuation or the end. */
function clauseFinal(tokens: Token[]): Set<number> {
  const out = new Set<number>();
  tokens.forEach((t, i) => {
    const next = tokens[i + 1];
    if (t.pos !== 'punct' && (!next || next.pos === 'punct')) out.add(i);
  });
  return out;
}

/** A creation verb earlier in the same clause as position `at`. */
function createdBefore(tokens: Token[], at: number): boolean {
  for (let i = at - 1; i >= 0; i--) {
    const t = tokens[i];
    if (!t || t.pos === 'punct') return false;
    if (CREATION_VERBS.has(t)) return true;
  }
  return false;
}

function zhCompletion(tokens: Token[]): string[] {
  const cues: string[] = [];
  tokens.forEach((t, i) => {
    if (t.script !== 'han') return;
    const next = tokens[i + 1];
    if (ZH_DONE_SUFFIX.test(t.lower) && (t.pos === 'verb' || t.lower === '完')) cues.push(t.lower);
    else if (ZH_SETTLED_SUFFIX.test(t.lower) && next && ZH_PERFECTIVE.has(next.lower)) cues.push(t.lower + next.lower);
  });
  return cues;
}

/**
 * A noun introduced as a new item: a determiner or numeral of the same noun phrase before it ("a
 * checklist", "three tweets", "a 10-slide deck", "一份报告", "几页幻灯片").
 */
function introducedAsNew(tokens: Token[], at: number): boolean {
  for (let i = at - 1; i >= 0 && i >= at - 4; i--) {
    const t = tokens[i];
    if (!t) return false;
    if (t.script === 'latin' && (NEW_ITEM_DETERMINERS.has(t.lower) || t.pos === 'num')) return true;
    if (t.script === 'han' && t.pos === 'det' && ZH_ITEM_CLASSIFIERS.test(t.lower)) return true;
    // Still inside the noun phrase: modifiers, compounds, hyphens, and Chinese 的.
    const inside = ['adj', 'noun', 'num'].includes(t.pos) || t.lower === '-' || t.lower === '的';
    if (!inside) return false;
  }
  return false;
}

/**
 * A pronoun that points at the work: "it", "them", "their", "它", "这份", and a demonstrative used on
 * its own ("refreshes this every week") — not one that determines another noun ("this month").
 */
function refersToWork(tokens: Token[], i: number): boolean {
  const t = tokens[i];
  if (!t || !WORK_PRONOUNS.has(t.lower)) return false;
  if (t.script === 'han') return true;
  if (t.pos !== 'pron' && t.pos !== 'det') return false;
  if (!DEMONSTRATIVES.has(t.lower)) return true;
  const next = tokens[i + 1];
  return !next || !['noun', 'adj', 'num'].includes(next.pos);
}

const DEMONSTRATIVES = new Set(['this', 'that', 'these', 'those']);

/**
 * Definite references to the work: a definite determiner within three words before a goal noun or
 * a kind of work product heading its noun phrase ("the guide", "this report", "the PR", "这个方案").
 */
function definiteReferences(tokens: Token[], refersTo: (t: Token) => boolean): string[] {
  const refs: string[] = [];
  tokens.forEach((t, i) => {
    if (!DEFINITE_DETERMINERS.has(t.lower)) return;
    for (let j = i + 1; j <= i + 3 && j < tokens.length; j++) {
      const next = tokens[j];
      if (!next || next.pos === 'punct') break;
      // Only the head of the noun phrase counts: "the company blog's homepage" is no blog.
      const after = tokens[j + 1];
      const head = !after || (after.pos !== 'noun' && after.lower !== "'s");
      if (head && !next.stop && next.pos !== 'verb' && refersTo(next)) {
        refs.push(`${t.lower} ${next.lower}`);
        break;
      }
    }
  });
  return refs;
}

/** First-person possessives and beneficiaries (rule 3a). */
function personalCues(tokens: Token[]): string[] {
  const cues: string[] = [];
  tokens.forEach((t, i) => {
    if (PERSONAL_WORDS.has(t.lower)) cues.push(t.lower);
    else if (t.lower === 'me') {
      const before = previousWord(tokens, i);
      if (!before || !COMMUNICATION_VERBS.has(before.lower)) cues.push('me');
    } else if (t.lower === '我') {
      const before = tokens[i - 1];
      const after = tokens[i + 1];
      if ((before && ZH_BENEFICIARY_VERBS.has(before.lower)) || (after && ZH_POSSESSIVE_AFTER_ME.has(after.lower))) {
        cues.push(`${before?.lower ?? ''}我${after?.lower ?? ''}`);
      }
    }
  });
  return cues;
}

function previousWord(tokens: Token[], i: number): Token | undefined {
  for (let j = i - 1; j >= 0; j--) {
    const t = tokens[j];
    if (t && t.pos !== 'punct') return t;
  }
  return undefined;
}

/** Rule 4's evidence that the message contradicts the session goal. */
function conflictCues(tokens: Token[], session: Analysis, consumed: Set<number>): string[] {
  const cues: string[] = [];
  const goal = contentTerms(session);
  const mentions = (t: Token) => !t.stop && goal.some((g) => sameTerm(g, t.term));

  // Negated goal term: "unaudited", "未经审计".
  for (const [i, t] of tokens.entries()) {
    if (t.script === 'latin') {
      for (const prefix of NEGATING_PREFIXES) {
        const rest = t.term.slice(prefix.length);
        if (t.term.startsWith(prefix) && rest.length >= 4 && goal.includes(rest)) cues.push(`negates "${rest}"`);
      }
    } else if (ZH_NEGATORS.has(t.lower)) {
      const next = tokens[i + 1];
      if (next && mentions(next)) cues.push(`negates "${next.lower}"`);
    }
  }

  // Dismissal or rejection of a goal term.
  const mentioned = tokens.filter((t, i) => !consumed.has(i) && mentions(t)).map((t) => t.lower);
  if (mentioned.length > 0) {
    if (findPhrases(tokens, DISMISSALS).length > 0) cues.push(`dismisses "${mentioned.join(', ')}"`);
    if (findPhrases(tokens, REJECTION_PHRASES).length > 0 || tokens.some((t) => REJECTION_VERBS.has(t))) {
      cues.push(`rejects "${mentioned.join(', ')}"`);
    }
  }

  // A term the goal prohibits, mentioned without negation.
  for (const term of prohibitedTerms(session.tokens)) {
    const hit = tokens.findIndex(
      (t, i) => !t.stop && sameTerm(t.term, term) && !negatedAt(tokens, i) && !consumed.has(i),
    );
    if (hit >= 0) cues.push(`names prohibited "${tokens[hit]?.lower ?? term}"`);
  }

  // An override of a goal that states a constraint.
  if (findPhrases(session.tokens, CONSTRAINT_MARKERS).length > 0) {
    const overrides = findPhrases(tokens, OVERRIDE_MARKERS).map((s) => s.cue);
    const initial = clauseInitial(tokens);
    tokens.forEach((t, i) => {
      if (initial.has(i) && CLAUSE_INITIAL_OVERRIDES.has(t.lower)) overrides.push(t.lower);
    });
    if (overrides.length > 0) cues.push(`overrides a constraint ("${[...new Set(overrides)].join('", "')}")`);
  }
  return cues;
}

const NEGATORS_EN = new Set([
  "n't",
  'not',
  'no',
  'without',
  'never',
  'stop',
  'forget',
  'drop',
  'ditch',
  'skip',
  'avoid',
  'nor',
]);
const NEGATORS_ZH = new Set([
  '不要',
  '别',
  '不用',
  '不',
  '没',
  '没有',
  '无',
  '非',
  '未',
  '不再',
  '放弃',
  '去掉',
  '取消',
  '禁止',
  '不想',
  '不坐',
  '别用',
  '不要用',
  '不用再',
]);
/** Verbs that make something out of the work: naming another format after them is a new deliverable, not a replacement. */
const CONVERSION = new Set([
  'convert',
  'turn',
  'export',
  'translate',
  'transform',
  'save',
  '转成',
  '转换',
  '导出',
  '做成',
  '翻译',
  '转为',
  '另存',
]);
/** Frames that put something in place of what the goal chose ("use X instead", "改用 X"). */
const REPLACEMENT = new Set([
  'use',
  'using',
  'switch',
  'instead',
  'rather',
  'replace',
  'go',
  'move',
  'migrate',
  '用',
  '改用',
  '换成',
  '改成',
  '换',
  '改',
]);

/** Whether the concept mention at `start` is negated in its clause: "don't use Markdown", "别用 Python". */
function negatedMention(tokens: Token[], start: number): boolean {
  for (let j = start - 1; j >= 0 && j >= start - 4; j--) {
    const t = tokens[j];
    if (!t || t.pos === 'punct') return false;
    if (NEGATORS_EN.has(t.lower) || NEGATORS_ZH.has(t.lower) || (t.script === 'han' && /^(不|别|没)/u.test(t.lower)))
      return true;
  }
  return false;
}

/**
 * Rule 4 through the concept lexicon, in English and Chinese alike: the message negates what a
 * goal chose or requires ("don't use Markdown", "不要英文"), puts a sibling in its place ("use
 * MongoDB instead" in a PostgreSQL migration), names what a goal's constraint rules out ("a
 * steakhouse" in a vegetarian plan), or names what a goal prohibits ("坐飞机" when it says 不坐飞机).
 */
function conceptConflicts(message: Analysis, phase: Analysis, session: Analysis): string[] {
  const cues: string[] = [];
  const hits = conceptHits(message.tokens);
  const goalHits = [phase, session].flatMap((g) => conceptHits(g.tokens).map((h) => ({ h, tokens: g.tokens })));
  const chosen = goalHits.filter(({ h, tokens }) => !negatedMention(tokens, h.start)).map(({ h }) => h.concept);
  const prohibited = new Set(
    goalHits.filter(({ h, tokens }) => negatedMention(tokens, h.start)).map(({ h }) => h.concept.id),
  );
  const chosenIds = new Set(chosen.map((c) => c.id));
  const ruledOut = new Set(chosen.flatMap((c) => c.violates ?? []));
  const converts = message.tokens.some((t) => CONVERSION.has(t.lower) || CONVERSION.has(t.lemma));
  const replaces = message.tokens.some((t) => REPLACEMENT.has(t.lower) || REPLACEMENT.has(t.lemma));
  for (const hit of hits) {
    const { concept } = hit;
    const negated = negatedMention(message.tokens, hit.start);
    if (negated && chosenIds.has(concept.id) && (concept.kind || concept.violates)) {
      cues.push(`negates "${concept.id}"`);
    } else if (!negated && ruledOut.has(concept.id)) {
      cues.push(`names "${concept.id}", which the goal rules out`);
    } else if (!negated && prohibited.has(concept.id) && !chosenIds.has(concept.id)) {
      cues.push(`names prohibited "${concept.id}"`);
    } else if (
      !negated &&
      concept.kind &&
      replaces &&
      !converts &&
      !chosenIds.has(concept.id) &&
      chosen.some((c) => c.kind === concept.kind)
    ) {
      cues.push(`replaces the goal's ${concept.kind} with "${concept.id}"`);
    }
  }
  return cues;
}

/** What a prohibition in the goal rules out: the content words after it, up to its first noun. */
function prohibitedTerms(goal: Token[]): string[] {
  const terms: string[] = [];
  goal.forEach((t, i) => {
    if (!PROHIBITION_MARKERS.has(t.lower)) return;
    let taken = 0;
    for (let j = i + 1; j < goal.length && taken < 3; j++) {
      const next = goal[j];
      if (!next || next.pos === 'punct') {
        if (next?.lower === '-') continue;
        break;
      }
      if (next.stop) continue;
      terms.push(next.term);
      taken++;
      if (next.pos === 'noun') break;
    }
  });
  return terms;
}

function negatedAt(tokens: Token[], i: number): boolean {
  for (let j = Math.max(0, i - 2); j < i; j++) {
    const t = tokens[j];
    if (t && (PROHIBITION_MARKERS.has(t.lower) || ZH_NEGATORS.has(t.lower) || t.lower === 'not')) return true;
  }
  return false;
}

function clamp(x: number): number {
  return Math.min(1, Math.max(0, x));
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
