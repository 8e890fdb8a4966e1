/**
 * The local relevance scorer: how a message relates to the current-phase goal and the session goal,
 * from lexical similarity and explicit discourse rules, without a model. Deterministic; English and
 * Chinese (`text.ts` holds the NLP packages, `cues.ts` the word lists). It reads the message text
 * and the two goals only — no history, and not the resource references.
 *
 * ## Similarity and anchoring
 * Message and goals are reduced to content terms (stop words dropped; Porter stems for English,
 * jieba words for Chinese). `sim.phase` is the share of the message's terms the phase goal contains,
 * `sim.session` the same for either goal (see `goalSimilarity`; BM25 or TF-IDF weights fitted on
 * three short texts would penalise exactly the terms they share). Lexical similarity cannot see that
 * "make the risks section shorter" belongs to a status report, so it grades scores but rarely decides
 * a band on its own. A message is *linked* to the Session when one of its noun-like terms is a goal
 * term; when it refers to the work: anaphora ("it", "their", "this" used as a pronoun, "刚刚",
 * "这份"), a definite noun phrase headed by a goal noun, a kind of work product, a part of one or a
 * generic output ("the guide", "the PR", "the intro", "the findings", "把结果…"), "we just…", "what
 * we have", "a … version"; or when it opens with a step or completion marker. It is *anchored* when
 * linked or when it continues or corrects (rule 6): all of these presuppose the Session's work.
 *
 * ## Rules, first match wins
 * 1. **Too short to judge.** When nothing is left after dropping stop words, acknowledgements,
 *    hesitations and deictic words: a bare acknowledgement or request to go on ("continue", "ok",
 *    "go on", "好的，继续", "嗯嗯") that is not a question continues the current phase (0.9 / 0.9);
 *    anything else ("hmm", "wait", "ok so?", "and?", "same as last time", "嗯", "然后呢？") is
 *    uncertain (0.5 / 0.5): there is nothing to act on, and the role may not look at history.
 * 2. **Elliptical question.** A question without a predicate verb, without a question word of its
 *    own and with at most two content terms ("what about the other one?", "And the rubric?",
 *    "那个客户呢？") points at something the role cannot see: uncertain (0.5 / 0.5).
 * 3. **Another responsibility.** (a) A request about the user's own affairs — first-person
 *    possessive or beneficiary ("my", "book me", "帮我", "我的"; not "tell me", "send me") — unless
 *    it refers to the work ("turn the guide into a deck for my team"); (b) an additive request
 *    ("also", "while you're at it", "by the way", "顺便", "另外") or a question about the world (a
 *    question word, and no "we"/"我们") that is not anchored and asks for no work product. Both
 *    scores low (0.1 + 0.2 × similarity): out of scope.
 * 4. **Conflict with a stated constraint.** The message still targets the work (phase high, 0.75 +)
 *    but contradicts the session goal (session 0.15 +) when it negates a goal term ("unaudited" vs
 *    "audited", "未经审计" vs "审计"), dismisses one ("contrast doesn't matter", "对比度无所谓"), rejects
 *    one ("we're dropping Postgres" vs "PostgreSQL"), names what a prohibition in the goal rules out
 *    ("zero paid-ads budget" vs "Google Ads", "零投放" vs "投放"), or overrides ("instead", "anyway",
 *    a clause-initial "Just …", "直接", "改用") a goal that states a constraint ("only", "no",
 *    "under", "according to", "仅", "只用", "不", "不超过", …). Constraints that are only implied
 *    (a children's book vs "a horror scene") are not seen.
 * 5. **New step or new deliverable — the same-topic rule.** Right after initialize the phase goal
 *    and the session goal are the same text, so similarity to the goals can never separate "more of
 *    this step" from "the next step on the same topic". The scorer reads the step structure instead:
 *    (a) a sequence marker opening a clause ("now", "next", "then", "moving on", "接下来", "下一步",
 *    or "next"/"then" closing one) or a completion report ("the tests are done", "写完了",
 *    "酒店定了") says the current step is over; (b) a work product the phase goal does not name
 *    ("Word", "slides", "tests", "runbook", "清单", "FAQ") with a production or transformation verb
 *    ("convert", "turn into", "export", "write", "转成", "做成", "导出") or introduced as a new item
 *    ("a checklist", "一份报告"), a new item created from scratch ("write a haiku"), or any
 *    translation, is a new deliverable. Parts of a work product ("a section", "一节") are not.
 *    Either way the phase score is low (0.2 +). The session score is high (0.75 +) when the message
 *    is linked to the Session, and 0.5 (uncertain) when it asks for a work product without any link.
 * 6. **Continuation or correction.** A leading "continue"/"keep going"/"继续" with what to go on
 *    with, or a correction ("no, I meant…", "actually…", "不对", "其实"): continue (0.8 +).
 * 7. **Refinement (the default).** An instruction that names no other responsibility and starts no
 *    new step or deliverable is taken as steering the current work — a constraint, an edit, a
 *    preference ("make the risks section shorter", "只要海景房"): continue, 0.7 + 0.25 × similarity.
 *    Out-of-scope requests therefore need a signal (rule 3); an unmarked topic change phrased as a
 *    plain instruction is read as a refinement.
 *
 * Scores are graded by similarity inside each rule's band so that calibration has something to
 * move; the rule decides the band, and the bands are those of the default thresholds 0.65 / 0.35.
 */
import similarity from 'wink-nlp/utilities/similarity.js';
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
import { analyse, contentTerms, sameTerm, type Analysis, type Token } from './text.js';

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
  | 'refinement';

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
  const covered = (goal: Analysis) => {
    const goalTerms = contentTerms(goal);
    const m = new Set(contentTerms(message).map((t) => goalTerms.find((g) => sameTerm(g, t)) ?? t));
    if (m.size === 0 || goalTerms.length === 0) return 0;
    return similarity.set.tversky(m, new Set(goalTerms), 1, 0);
  };
  const toPhase = covered(phase);
  return { phase: round(toPhase), session: round(Math.max(toPhase, covered(session))) };
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

/** Scores one message against the two goals. Pure and deterministic. */
export function scoreRelevance(input: RelevanceInput): RelevanceJudgement {
  const message = analyse(input.message);
  const phase = analyse(input.phaseGoal);
  const session = analyse(input.sessionGoal);
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
  const linked =
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
    return outside('unrelated-request', [f.additive ? 'additive request' : 'question about the world']);
  }

  // Rule 4: conflict with a stated constraint.
  if (f.conflict.length > 0)
    return judge('constraint-conflict', 0.75 + 0.2 * sim.phase, 0.15 + 0.1 * sim.session, f.conflict);

  // Rule 5: new step or new deliverable.
  const newPhase = (rule: RelevanceRule, cues: string[]) =>
    judge(rule, 0.2 + 0.1 * sim.phase, linked ? 0.75 + 0.2 * sim.session : 0.5, cues);
  if (f.stepShift.length > 0 || f.completion.length > 0) {
    return newPhase('new-step', [...f.stepShift.map((s) => s.cue), ...f.completion, ...f.newDeliverables]);
  }
  if (f.newDeliverables.length > 0) return newPhase('new-deliverable', f.newDeliverables);

  // Rule 6: continuation or correction.
  if (f.continuation) return judge('continuation', 0.8 + 0.15 * sim.phase, 0.8 + 0.15 * sim.session, ['continue']);
  if (f.correction) return judge('correction', 0.8 + 0.15 * sim.phase, 0.8 + 0.15 * sim.session, ['correction']);

  // Rule 7: refinement of the current work.
  return judge('refinement', 0.7 + 0.25 * sim.phase, 0.7 + 0.25 * sim.session, [
    ...f.workRef,
    ...f.overlap.phase,
    ...f.overlap.session,
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
