/**
 * Feature extraction for the relevance rules: which step, completion, continuation, correction,
 * personal, work-reference, deliverable and conflict cues a message carries, read against the goals.
 */
import {
  ADDITIVE_MARKERS,
  COMMUNICATION_VERBS,
  CLAUSE_FINAL_STEP_MARKERS,
  COMPLETION_PHRASES,
  CREATION_VERBS,
  CONTINUATION_MARKERS,
  CORRECTION_MARKERS,
  DEFINITE_DETERMINERS,
  DELIVERABLES,
  DISMISSALS,
  FIRST_PERSON_PLURAL,
  NEW_ITEM_DETERMINERS,
  PART_NOUNS,
  PERSONAL_WORDS,
  PRODUCTION_VERBS,
  PROPER_NAME_FORMATS,
  REJECTION_PHRASES,
  STEP_MARKERS,
  TRANSLATION_VERBS,
  WH_WORDS,
  WORK_LINK_NOUNS,
  WORK_OUTPUTS,
  WORK_PHRASES,
  WORK_PRONOUNS,
  ZH_BENEFICIARY_VERBS,
  ZH_DONE_SUFFIX,
  ZH_ITEM_CLASSIFIERS,
  ZH_PERFECTIVE,
  ZH_POSSESSIVE_AFTER_ME,
  ZH_SETTLED_SUFFIX,
  findPhrases,
  type Span,
} from './cues.js';
import { clauseFinal, clauseInitial, firstWord, previousWord } from './relevance-clauses.js';
import { conflictCues } from './relevance-conflicts.js';
import { contentTerms, sameTerm, type Analysis, type Token } from './text.js';

/** The message's features, named as in docs/relevance.md. */
export interface Features {
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

/** Detects the cues the rules read; `content` is the message's content words. */
export function features(message: Analysis, phase: Analysis, session: Analysis, content: Token[]): Features {
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
