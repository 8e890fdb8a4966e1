/**
 * Rule 4 of docs/relevance.md, constraint conflict: cues that a message contradicts what the goals chose,
 * require or prohibit, from negated or dismissed goal terms and from the concept lexicon.
 */
import {
  CLAUSE_INITIAL_OVERRIDES,
  CONSTRAINT_MARKERS,
  DISMISSALS,
  NEGATING_PREFIXES,
  OVERRIDE_MARKERS,
  PROHIBITION_MARKERS,
  REJECTION_PHRASES,
  REJECTION_VERBS,
  ZH_NEGATORS,
  findPhrases,
} from './cues.js';
import { conceptHits } from './concepts.js';
import { clauseInitial } from './relevance-clauses.js';
import { contentTerms, sameTerm, type Analysis, type Token } from './text.js';

/** Rule 4's evidence that the message contradicts the session goal. */
export function conflictCues(tokens: Token[], session: Analysis, consumed: Set<number>): string[] {
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

export const NEGATORS_EN = new Set([
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
export const NEGATORS_ZH = new Set([
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
export function conceptConflicts(message: Analysis, phase: Analysis, session: Analysis): string[] {
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
