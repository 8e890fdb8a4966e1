/**
 * The analyzer shared by the catalog index and the memory store.
 */
import { createRequire } from 'node:module';

// stopword ships no type declarations; its English list is a plain string array.
const { eng } = createRequire(import.meta.url)('stopword') as { eng: string[] };
const STOPWORDS = new Set(eng);
// Letters with their combining marks (accents, Indic vowel signs) and digits.
const WORD_RUNS = /[\p{L}\p{M}\p{N}]+/gu;
const NOT_ASCII = /[\u0080-\uffff]/;
const ASCII_WORD_RUNS = /[a-z0-9]+/g;
// Han, kana: scripts written without spaces between words.
const UNSPACED_SCRIPT = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]+)/u;

/**
 * The analyzer shared by the catalog index and the memory store: lowercase words split on anything
 * that is not a letter or digit, with runs of Chinese or Japanese characters cut into overlapping
 * character bigrams (as Lucene's CJK analyzer does), so "写客服周报" matches a tag "周报" without a
 * word segmenter. English stopwords are dropped: they say nothing about a capability, yet under
 * BM25+ every entry containing one would gain a share of score from it.
 */
export function searchTerms(text: string): string[] {
  const terms: string[] = [];
  const lower = text.toLowerCase();
  // The common case, and several times faster than the Unicode classes: in ASCII the word runs are
  // exactly the runs of a-z and 0-9, and there is no Han or kana.
  if (!NOT_ASCII.test(lower)) {
    for (const run of lower.match(ASCII_WORD_RUNS) ?? []) if (!STOPWORDS.has(run)) terms.push(run);
    return terms;
  }
  for (const run of lower.match(WORD_RUNS) ?? []) {
    // Most runs hold no Han or kana: one test instead of a split (a regex split costs far more).
    if (!UNSPACED_SCRIPT.test(run)) {
      if (!STOPWORDS.has(run)) terms.push(run);
      continue;
    }
    for (const part of run.split(UNSPACED_SCRIPT)) {
      if (part === '') continue;
      if (!UNSPACED_SCRIPT.test(part)) {
        if (!STOPWORDS.has(part)) terms.push(part);
        continue;
      }
      const chars = Array.from(part);
      if (chars.length === 1) terms.push(part);
      for (let i = 0; i + 1 < chars.length; i++) terms.push(`${chars[i]}${chars[i + 1]}`);
    }
  }
  return terms;
}
