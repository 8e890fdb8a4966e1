/**
 * Text analysis for the local provider, English and Chinese. Everything linguistic comes from
 * packages: wink-nlp with its English model tokenises, tags parts of speech, stems (Porter),
 * lemmatises and splits sentences; @node-rs/jieba segments and tags Chinese; `stopword` supplies the
 * stop-word lists. This module only maps their output onto one token shape and caches the models.
 */
import { Jieba } from '@node-rs/jieba';
import { dict } from '@node-rs/jieba/dict.js';
import winkNLP, {
  type ItemToken,
  type ItsFunction,
  type ItsHelpers,
  type PartOfSpeech,
  type WinkMethods,
} from 'wink-nlp';
import model from 'wink-eng-lite-web-model';
import { eng, zho } from 'stopword';
import { boundText } from './text-bounds.js';

const STOP_EN = new Set(eng);
const STOP_ZH = new Set(zho);

export type Pos =
  | 'noun'
  | 'verb'
  | 'adj'
  | 'adv'
  | 'num'
  | 'pron'
  | 'det'
  | 'adp'
  | 'conj'
  | 'aux'
  | 'part'
  | 'intj'
  | 'punct'
  | 'other';

export interface Token {
  /** As written. */
  text: string;
  /** Lowercased. */
  lower: string;
  /** What matching compares: the Porter stem of a Latin-script word, the segmented word itself for Chinese. */
  term: string;
  /** Dictionary form, for terms shown to people (extraction output). */
  lemma: string;
  pos: Pos;
  /** A stop word, punctuation or a function word: carries no topic. */
  stop: boolean;
  script: 'latin' | 'han';
}

export interface Analysis {
  text: string;
  /** `zh` as soon as the text contains Chinese characters (jieba handles the Latin words in it too). */
  lang: 'en' | 'zh';
  tokens: Token[];
  /** Ends with a question mark, or (Chinese) with a question particle. */
  question: boolean;
}

let wink: WinkMethods | undefined;
let jieba: Jieba | undefined;

function nlp(): WinkMethods {
  wink ??= winkNLP(model);
  return wink;
}

/**
 * One of wink-nlp's `its` helpers as a value to hand to `out()`. Its typings declare the helpers as
 * methods with a signature `out()` does not accept, though they are plain functions.
 */
export function itsHelper<T>(name: keyof ItsHelpers): ItsFunction<T> {
  return (nlp().its as unknown as Record<keyof ItsHelpers, ItsFunction<T>>)[name];
}

/** The shared jieba instance with its bundled dictionary (loaded on first use). */
export function jiebaSegmenter(): Jieba {
  jieba ??= Jieba.withDict(dict);
  return jieba;
}

const HAN = /\p{Script=Han}/u;
const WORDLIKE = /[\p{L}\p{N}]/u;

const WINK_POS: Record<PartOfSpeech, Pos> = {
  ADJ: 'adj',
  ADP: 'adp',
  ADV: 'adv',
  AUX: 'aux',
  CCONJ: 'conj',
  DET: 'det',
  INTJ: 'intj',
  NOUN: 'noun',
  NUM: 'num',
  PART: 'part',
  PRON: 'pron',
  PROPN: 'noun',
  PUNCT: 'punct',
  SCONJ: 'conj',
  SYM: 'punct',
  VERB: 'verb',
  X: 'other',
  SPACE: 'punct',
};

/** Maps jieba's ICTCLAS tags onto the coarse tag set. */
function jiebaPos(tag: string, word: string): Pos {
  if (!WORDLIKE.test(word)) return 'punct';
  if (tag === 'eng') return 'noun';
  // Numerals and classifiers ("一份", "三条", "几页") work like determiners; digits are numbers.
  // Ordinals ("第三章") name parts of the work.
  if (tag === 'm' || tag === 'mq' || tag === 'q')
    return /[0-9]/.test(word) ? 'num' : word.startsWith('第') ? 'noun' : 'det';
  if (tag === 'vn') return 'noun';
  const head = tag.charAt(0);
  switch (head) {
    case 'n':
    case 's':
    case 't':
    case 'j':
    case 'i':
    case 'l':
      return 'noun';
    case 'f':
      return word.length >= 2 ? 'noun' : 'adp';
    case 'v':
      return 'verb';
    case 'a':
    case 'b':
    case 'z':
      return 'adj';
    case 'd':
      return 'adv';
    case 'r':
      return 'pron';
    case 'p':
      return 'adp';
    case 'c':
      return 'conj';
    case 'u':
    case 'y':
      return 'part';
    case 'e':
    case 'o':
      return 'intj';
    default:
      return 'other';
  }
}

const CONTENT_POS = new Set<Pos>(['noun', 'verb', 'adj', 'num', 'other']);

function analyseEnglish(text: string): Token[] {
  const tokens: Token[] = [];
  nlp()
    .readDoc(text)
    .tokens()
    .each((item: ItemToken) => {
      const read = <T>(name: keyof ItsHelpers) => item.out(itsHelper<T>(name)) as T;
      const surface = item.out();
      const type = read<string>('type');
      const pos: Pos =
        type === 'punctuation' || type === 'symbol' || type === 'emoji'
          ? 'punct'
          : (WINK_POS[read<PartOfSpeech>('pos')] ?? 'other');
      const lower = surface.toLowerCase();
      tokens.push({
        text: surface,
        lower,
        term: type === 'number' ? lower : read<string>('stem'),
        lemma: read<string>('lemma').toLowerCase(),
        pos: type === 'number' ? 'num' : pos,
        stop: pos === 'punct' || read<boolean>('stopWordFlag') || STOP_EN.has(lower) || !CONTENT_POS.has(pos),
        script: 'latin',
      });
    });
  return tokens;
}

const stemCache = new Map<string, { term: string; lemma: string; stop: boolean }>();

/** Stem, lemma and stop flag of one Latin-script word met inside Chinese text. */
function latinWord(word: string): { term: string; lemma: string; stop: boolean } {
  const lower = word.toLowerCase();
  let hit = stemCache.get(lower);
  if (!hit) {
    const token = analyseEnglish(word)[0];
    hit = token
      ? { term: token.term, lemma: token.lemma, stop: STOP_EN.has(lower) }
      : { term: lower, lemma: lower, stop: true };
    stemCache.set(lower, hit);
  }
  return hit;
}

function analyseChinese(text: string): Token[] {
  const tokens: Token[] = [];
  for (const { word, tag } of jiebaSegmenter().tag(text)) {
    if (word.trim() === '') continue;
    const pos = jiebaPos(tag, word);
    if (!HAN.test(word) && /\p{L}/u.test(word)) {
      const latin = latinWord(word);
      tokens.push({ text: word, lower: word.toLowerCase(), pos, script: 'latin', ...latin });
      continue;
    }
    tokens.push({
      text: word,
      lower: word.toLowerCase(),
      term: word.toLowerCase(),
      lemma: word.toLowerCase(),
      pos,
      stop: !CONTENT_POS.has(pos) || STOP_ZH.has(word),
      script: 'han',
    });
  }
  return tokens;
}

const QUESTION_END = /[?？]\s*$/u;
const ZH_QUESTION_PARTICLE = /[呢吗嘛][。．.…\s]*$/u;

/**
 * Tokens of `text` with stems, tags and stop flags, in reading order. What is analysed, and returned
 * as `text`, is `text` within the bounds of text-bounds.ts.
 */
export function analyse(input: string): Analysis {
  const text = boundText(input);
  const lang = HAN.test(text) ? 'zh' : 'en';
  const tokens = lang === 'zh' ? analyseChinese(text) : analyseEnglish(text);
  const question = QUESTION_END.test(text) || (lang === 'zh' && ZH_QUESTION_PARTICLE.test(text));
  return { text, lang, tokens, question };
}

/** The topic-bearing terms of an analysis (stems / words), stop words and punctuation removed. */
export function contentTerms(analysis: Analysis): string[] {
  return analysis.tokens.filter((t) => !t.stop).map((t) => t.term);
}

/**
 * Whether two terms name the same thing: equal, or one a prefix of the other when both are long
 * enough for that to mean an abbreviation or a compound ("postgres" / "postgresql").
 */
export function sameTerm(a: string, b: string): boolean {
  if (a === b) return true;
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  return short.length >= 5 && long.startsWith(short);
}

/** The Porter stem of one English word (used to turn the cue lexicons into matchable terms). */
export function stemOf(word: string): string {
  return latinWord(word).term;
}

/**
 * Sentences of a text (within the bounds of text-bounds.ts): wink-nlp's sentence boundary detection,
 * with Chinese sentence-final punctuation (which it does not know) as an additional boundary.
 */
export function sentences(text: string): string[] {
  const out: string[] = [];
  for (const block of boundText(text).split(/(?<=[。！？；])|\n+/u)) {
    const trimmed = block.trim();
    if (!trimmed) continue;
    out.push(
      ...nlp()
        .readDoc(trimmed)
        .sentences()
        .out()
        .map((s) => s.trim())
        .filter(Boolean),
    );
  }
  return out;
}
