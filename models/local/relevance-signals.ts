/**
 * Graded signals for the trained relevance model (docs/relevance.md, "The trained conflict check"):
 * evidence the rules read only as yes/no, or not at all, measured as numbers the model can weigh.
 * Everything here is general — word vectors, shared Chinese characters, where a session goal states
 * a constraint, negations and numeric limits — never vocabulary taken from evaluation cases.
 */
import {
  ACKNOWLEDGEMENTS,
  CONSTRAINT_MARKERS,
  CREATION_VERBS,
  PART_NOUNS,
  PRODUCTION_VERBS,
  DISMISSALS,
  OVERRIDE_MARKERS,
  PROHIBITION_MARKERS,
  REJECTION_PHRASES,
  findPhrases,
} from './cues.js';
import { conceptHits, type Concept } from './concepts.js';
import { NEGATORS_EN, NEGATORS_ZH } from './relevance-conflicts.js';
import { sameTerm, type Analysis, type Token } from './text.js';
import { wordVector } from './vectors.js';

export interface Signals {
  /** Cosine of the mean word vectors of the message and of both goals / of the phase goal (English words only). */
  vecSession: number;
  vecPhase: number;
  /** Mean over the message's words of the best cosine with any goal word. */
  vecBest: number;
  /** Share of the message's content words that have a vector. */
  vecCoverage: number;
  /** Share of the message's Chinese content characters that occur in the goals / in the phase goal. */
  hanSession: number;
  hanPhase: number;
  /** The session goal states a constraint ("only", "no", "at most", "不得", "不超过", "-free", …). */
  goalConstraint: number;
  /** The message names a term of the session goal's constraint clause. */
  touchesConstraint: number;
  /** The message shares a term or Chinese character pair with what the session goal says beyond the phase goal. */
  sessionOnly: number;
  /** The message negates, dismisses, rejects or overrides something. */
  negates: number;
  /** A number in the message exceeds a limit the session goal states ("at most $25,000" vs "$40,000"). */
  exceedsLimit: number;
  /** A number in the message falls below a floor the session goal states ("no lower than $550,000"). */
  belowFloor: number;
  /** The message names a sibling (same kind: transport, format, database, …) of what a constraining goal chose. */
  siblingUnderConstraint: number;
  /** The message asks for advice or a recommendation ("recommend", "推荐", "which … should I"). */
  asksAdvice: number;
  /** The message shares a Chinese character with the constraint clause (its negators aside): 糖 in 无糖. */
  constraintHan: number;
  /** Best cosine between an English word of the message and one of the constraint clause ("beer", "alcohol"). */
  vecConstraint: number;
  /** A noun of the message that no goal names, shares no Chinese character pair with, nor is close to. */
  novelNoun: number;
  /** The message opens with a production verb ("draft …", "make …", "写 …"). */
  leadingProduction: number;
  /** Interactions a linear model cannot form itself. */
  productionOfNovel: number;
  negatesConstraint: number;
  /** Nothing ties the message to the goals: no shared word, character, concept or close vector, no reference. */
  noTie: number;
  questionNoTie: number;
  /** log(1 + content words), so that long messages do not dominate. */
  length: number;
  /** The message contains a number. */
  hasNumber: number;
}

const HAN_CHAR = /\p{Script=Han}/u;
/** Chinese function characters that carry no topic. */
const HAN_FUNCTION = new Set([...'的了吧吗呢啊呀把被给在和与及或也都就再还又很更最这那个一些么们是有']);

/** Words after which a session goal's constraint clause begins, beyond CONSTRAINT_MARKERS. */
const EXTRA_CONSTRAINTS = ['不能', '不可', '全部', '均', '所有', '必须', '禁止', '严禁', '以内', '之内'];
const FREE_SUFFIX = /-(free|only|neutral|accessible|compliant)$/u;

const ADVICE = [
  ...['recommend', 'suggest', 'suggestion', 'recommendation', 'should i', 'best', 'good', 'cheapest'],
  ...['推荐', '建议', '好看', '好玩', '好用', '哪个好', '怎么办'],
];

/** What the signals read from the goals alone, computed once per goal pair (see `goalSide`). */
interface GoalSide {
  goalContent: Token[];
  goalTerms: string[];
  goalHanWords: string[];
  goalVectors: Float32Array[];
  /** Vectors of the goals' all-letter English words (the mean's inputs). */
  wordVectors: Float32Array[];
  goalMean: Float32Array | undefined;
  phaseMean: Float32Array | undefined;
  sessionHan: Set<string>;
  phaseHan: Set<string>;
  clause: ReturnType<typeof constraintClause>;
  clauseVectors: Array<{ word: string; v: Float32Array }>;
  clauseHan: Set<string>;
  sessionOnlyTokens: Token[];
  sessionOnlyHan: string[];
  limit: Quantity | undefined;
  floor: Quantity | undefined;
  goalConcepts: Concept[];
}

/**
 * Goal analyses come from the scorer's LRU cache, so the same objects return for every message
 * of a Session: their derived signals are kept beside them, and dropped with them.
 */
const goalSides = new WeakMap<Analysis, WeakMap<Analysis, GoalSide>>();

function goalSide(phase: Analysis, session: Analysis): GoalSide {
  let byPhase = goalSides.get(session);
  const hit = byPhase?.get(phase);
  if (hit) return hit;
  const phaseContent = phase.tokens.filter((t) => !t.stop);
  const goalContent = [...phase.tokens, ...session.tokens].filter((t) => !t.stop);
  const goalVectors = vectorsOf(goalContent);
  const phaseVectors = vectorsOf(phaseContent);
  const clause = constraintClause(session);
  const phaseTerms = phaseContent.map((t) => t.term);
  const sessionOnlyTokens = session.tokens.filter((t) => !t.stop && !phaseTerms.some((p) => sameTerm(p, t.term)));
  const side: GoalSide = {
    goalContent,
    goalTerms: goalContent.map((t) => t.term),
    goalHanWords: goalContent.filter((t) => t.script === 'han').map((t) => t.lower),
    goalVectors: goalContent
      .filter((t) => t.script === 'latin')
      .map((t) => wordVector(t.lower))
      .filter((v): v is Float32Array => v !== undefined),
    wordVectors: goalVectors,
    goalMean: goalVectors.length > 0 ? mean(goalVectors) : undefined,
    phaseMean: phaseVectors.length > 0 ? mean(phaseVectors) : undefined,
    sessionHan: hanOf(goalContent),
    phaseHan: hanOf(phaseContent),
    clause,
    clauseVectors: clause.tokens
      .filter((t) => t.script === 'latin' && /^[a-z]+$/.test(t.lower))
      .flatMap((t) => {
        const v = wordVector(t.lower);
        return v ? [{ word: t.lower, v }] : [];
      }),
    clauseHan: new Set([...clause.han.join('')].filter((ch) => !HAN_FUNCTION.has(ch) && !CLAUSE_NEGATORS.has(ch))),
    sessionOnlyTokens,
    sessionOnlyHan: sessionOnlyTokens.filter((t) => t.script === 'han').map((t) => t.lower),
    limit: goalLimit(session, CEILING),
    floor: goalLimit(session, FLOOR),
    goalConcepts: [...conceptHits(phase.tokens), ...conceptHits(session.tokens)].map((h) => h.concept),
  };
  if (!byPhase) {
    byPhase = new WeakMap();
    goalSides.set(session, byPhase);
  }
  byPhase.set(phase, side);
  return side;
}

function hanOf(tokens: Token[]): Set<string> {
  return new Set([...tokens.map((t) => t.lower).join('')].filter((ch) => HAN_CHAR.test(ch) && !HAN_FUNCTION.has(ch)));
}

export function signals(message: Analysis, phase: Analysis, session: Analysis): Signals {
  const content = message.tokens.filter((t) => !t.stop);
  const goals = goalSide(phase, session);
  const { goalTerms, goalHanWords, goalVectors, sessionHan, phaseHan, clause, limit, floor } = goals;
  const vs = vectorSignals(content, goals);
  const messageHan = hanOf(content);
  const share = (goal: Set<string>) =>
    messageHan.size === 0 ? 0 : [...messageHan].filter((ch) => goal.has(ch)).length / messageHan.size;

  const touches = content.some((t) => clause.terms.some((g) => sameTerm(g, t.term)) || sharesPair(t, clause.han));
  const sessionOnly = content.some(
    (t) => goals.sessionOnlyTokens.some((g) => sameTerm(g.term, t.term)) || sharesPair(t, goals.sessionOnlyHan),
  );

  const negates =
    message.tokens.some(
      (t) => NEGATORS_EN.has(t.lower) || NEGATORS_ZH.has(t.lower) || PROHIBITION_MARKERS.has(t.lower),
    ) ||
    message.tokens.some((t) => t.script === 'han' && /^(不|别|没|无)/u.test(t.lower)) ||
    findPhrases(message.tokens, [...DISMISSALS, ...OVERRIDE_MARKERS, ...REJECTION_PHRASES]).length > 0;

  const numbers = numbersIn(message.text);
  const exceeds = limit !== undefined && numbers.some((n) => n.unit === limit.unit && n.value > limit.value);
  const below = floor !== undefined && numbers.some((n) => n.unit === floor.unit && n.value < floor.value);
  const sibling =
    clause.stated &&
    conceptHits(message.tokens).some(
      ({ concept }) =>
        concept.kind !== undefined &&
        !goals.goalConcepts.some((g) => g.id === concept.id) &&
        goals.goalConcepts.some((g) => g.kind === concept.kind),
    );

  const constraintHan = [...messageHan].some((ch) => goals.clauseHan.has(ch));
  let vecConstraint = 0;
  for (const t of content) {
    const a = t.script === 'latin' ? wordVector(t.lower) : undefined;
    if (!a) continue;
    for (const g of goals.clauseVectors) if (g.word !== t.lower) vecConstraint = Math.max(vecConstraint, dot(a, g.v));
  }
  const novelNoun = content.some((t) => {
    if (t.pos !== 'noun' || PART_NOUNS.has(t)) return false;
    if (goalTerms.some((g) => sameTerm(g, t.term)) || sharesPair(t, goalHanWords)) return false;
    const v = t.script === 'latin' ? wordVector(t.lower) : undefined;
    return !v || !goalVectors.some((g) => dot(v, g) >= 0.5);
  });
  const first = message.tokens.find((t) => t.pos !== 'punct' && !ACKNOWLEDGEMENTS.has(t.lower) && t.pos !== 'intj');
  const leadingProduction = !!first && (PRODUCTION_VERBS.has(first) || CREATION_VERBS.has(first));
  const noTie =
    sharedTerms(content, goalTerms) === 0 &&
    share(sessionHan) === 0 &&
    vs.vecBest < 0.5 &&
    !content.some((t) => sharesPair(t, goalHanWords));

  return {
    ...vs,
    constraintHan: constraintHan ? 1 : 0,
    vecConstraint,
    novelNoun: novelNoun ? 1 : 0,
    leadingProduction: leadingProduction ? 1 : 0,
    productionOfNovel: leadingProduction && novelNoun ? 1 : 0,
    negatesConstraint: negates && (touches || constraintHan || vecConstraint >= 0.5) ? 1 : 0,
    noTie: noTie ? 1 : 0,
    questionNoTie: noTie && message.question ? 1 : 0,
    hanSession: share(sessionHan),
    hanPhase: share(phaseHan),
    goalConstraint: clause.stated ? 1 : 0,
    touchesConstraint: touches ? 1 : 0,
    sessionOnly: sessionOnly ? 1 : 0,
    negates: negates ? 1 : 0,
    exceedsLimit: exceeds ? 1 : 0,
    belowFloor: below ? 1 : 0,
    siblingUnderConstraint: sibling ? 1 : 0,
    asksAdvice: findPhrases(message.tokens, ADVICE).length > 0 ? 1 : 0,
    length: Math.log1p(content.length),
    hasNumber: numbers.length > 0 ? 1 : 0,
  };
}

/** Chinese negators inside a constraint clause: they state the constraint, they are not its subject. */
const CLAUSE_NEGATORS = new Set([...'不无非没别禁止得能要']);

function sharedTerms(content: Token[], goalTerms: string[]): number {
  return content.filter((t) => goalTerms.some((g) => sameTerm(g, t.term))).length;
}

/** Whether a Chinese token shares a two-character run with one of `words`. */
function sharesPair(t: Token, words: string[]): boolean {
  if (t.script !== 'han' || t.lower.length < 2) return false;
  for (let i = 0; i + 2 <= t.lower.length; i++) {
    const pair = t.lower.slice(i, i + 2);
    if (words.some((w) => w.includes(pair))) return true;
  }
  return false;
}

/**
 * The session goal's constraint clause: the content words within three words after a constraint
 * marker ("with no unpaid take-home tests", "不得通过微信传送"), the two before "only" ("receipted
 * claims only"), and the stem of a "-free"/"-only" compound ("alcohol-free").
 */
function constraintClause(session: Analysis): { stated: boolean; terms: string[]; han: string[]; tokens: Token[] } {
  const tokens = session.tokens;
  const markers = findPhrases(tokens, [...CONSTRAINT_MARKERS, ...EXTRA_CONSTRAINTS]);
  const terms: string[] = [];
  const han: string[] = [];
  const taken: Token[] = [];
  const take = (t: Token) => {
    taken.push(t);
    terms.push(t.term);
    if (t.script === 'han') han.push(t.lower);
  };
  for (const m of markers) {
    let count = 0;
    for (let j = m.end; j < tokens.length && count < 3; j++) {
      const t = tokens[j];
      if (!t || (t.pos === 'punct' && t.lower !== '-')) break;
      if (t.stop) continue;
      take(t);
      count++;
    }
    if (m.cue === 'only') {
      for (let j = m.start - 1, taken2 = 0; j >= 0 && taken2 < 2; j--) {
        const t = tokens[j];
        if (!t || t.pos === 'punct') break;
        if (!t.stop) {
          take(t);
          taken2++;
        }
      }
    }
  }
  let free = false;
  tokens.forEach((t, i) => {
    const next = tokens[i + 1];
    const after = tokens[i + 2];
    if (FREE_SUFFIX.test(t.lower)) {
      free = true;
      take({ ...t, term: t.lower.replace(FREE_SUFFIX, '') });
    } else if (next?.lower === '-' && after && /^(free|only|neutral|accessible|compliant)$/u.test(after.lower)) {
      free = true;
      take(t);
    }
  });
  return { stated: markers.length > 0 || free, terms, han, tokens: taken };
}

interface Quantity {
  value: number;
  unit: 'percent' | 'money' | 'plain';
}

// The space between a currency and its digits belongs to the currency: an optional space at the
// start would be tried from every position of a long run of spaces (quadratic).
const NUMBER = /(?:([$€£¥]|EUR|USD|RMB)\s*)?(\d[\d,]*(?:\.\d+)?)\s*(%|k\b|万|千|元|块)?/giu;

/** The numbers written in a text, with thousands separators, "k" and 万 resolved. */
export function numbersIn(text: string): Quantity[] {
  const out: Quantity[] = [];
  for (const m of text.matchAll(NUMBER)) {
    const [, currency, digits, suffix] = m;
    let value = Number((digits ?? '').replace(/,/g, ''));
    if (!Number.isFinite(value)) continue;
    const s = (suffix ?? '').toLowerCase();
    if (s === 'k' || s === '千') value *= 1000;
    if (s === '万') value *= 10000;
    const unit = s === '%' ? 'percent' : currency || s === '元' || s === '块' || s === '万' ? 'money' : 'plain';
    out.push({ value, unit });
  }
  return out;
}

const CEILING =
  /(under|below|at most|max(?:imum)?|budget|less than|up to|no more than|不超过|低于|以内|之内|预算|最多|上限)/iu;
const FLOOR = /(at least|no lower than|no less than|minimum|not below|不低于|至少|最低|不少于)/iu;

/** A limit the session goal states: the number after a ceiling ("at most", "不超过") or a floor ("at least", "不低于"). */
function goalLimit(session: Analysis, markers: RegExp): Quantity | undefined {
  const text = session.text;
  const marker = markers.exec(text);
  if (!marker) return undefined;
  const numbers = numbersIn(text.slice(marker.index));
  const before = numbersIn(text.slice(Math.max(0, marker.index - 12), marker.index));
  return numbers[0] ?? before.at(-1);
}

/** Unit vectors of the English words among `tokens` that have one. */
function vectorsOf(tokens: Token[]): Float32Array[] {
  return tokens
    .filter((t) => t.script === 'latin' && /^[a-z]+$/.test(t.lower))
    .map((t) => wordVector(t.lower))
    .filter((v): v is Float32Array => v !== undefined);
}

/** Vector signals over the English words of the message and of the goals. */
function vectorSignals(
  message: Token[],
  goals: GoalSide,
): Pick<Signals, 'vecSession' | 'vecPhase' | 'vecBest' | 'vecCoverage'> {
  const m = vectorsOf(message);
  const g = goals.wordVectors;
  const latinMessage = message.filter((t) => t.script === 'latin').length;
  if (m.length === 0 || g.length === 0 || !goals.goalMean)
    return { vecSession: 0, vecPhase: 0, vecBest: 0, vecCoverage: latinMessage === 0 ? 0 : m.length / latinMessage };
  let best = 0;
  for (const a of m) {
    let top = -Infinity;
    for (const b of g) top = Math.max(top, dot(a, b));
    best += top;
  }
  const messageMean = mean(m);
  return {
    vecSession: cosine(messageMean, goals.goalMean),
    vecPhase: goals.phaseMean ? cosine(messageMean, goals.phaseMean) : 0,
    vecBest: best / m.length,
    vecCoverage: m.length / Math.max(1, latinMessage),
  };
}

function mean(vs: Float32Array[]): Float32Array {
  const out = new Float32Array(vs[0]?.length ?? 0);
  for (const v of vs) for (let i = 0; i < out.length; i++) out[i] = (out[i] ?? 0) + (v[i] ?? 0) / vs.length;
  return out;
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] ?? 0) * (b[i] ?? 0);
  return s;
}

function cosine(a: Float32Array, b: Float32Array): number {
  const n = Math.sqrt(dot(a, a) * dot(b, b));
  return n === 0 ? 0 : dot(a, b) / n;
}
