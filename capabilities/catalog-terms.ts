/**
 * The analyzer shared by the catalog index and the memory store.
 */
import { createRequire } from 'node:module';

// stopword ships no type declarations; its English list is a plain string array.
const { eng } = createRequire(import.meta.url)('stopword') as { eng: string[] };
const STOPWORDS = new Set(eng);
// Letters with their combining marks (accents, Indic vowel signs) and digits.
const WORD_RUNS = /[\p{L}\p{M}\p{N}]+/gu;
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
  for (const run of text.toLowerCase().match(WORD_RUNS) ?? []) {
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
