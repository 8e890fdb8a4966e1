/**
 * The local compaction role: an extractive summary of a finished phase. The inputs are split into
 * sentences (wink-nlp's sentence detection; Chinese sentence-final punctuation too), each sentence
 * becomes a bag of BM25-weighted terms (wink-nlp's BM25 vectoriser, the sentences being the
 * corpus), and a sentence scores by its cosine similarity to the centroid of all sentences plus the
 * phase goal: the sentences that carry the phase's most shared content win. The best ones are
 * returned in their original order, within a word budget. Sentences without content terms
 * ("continue", "ok") are never picked; nothing is paraphrased or invented.
 */
import similarity from 'wink-nlp/utilities/similarity.js';
import bm25Vectorizer from 'wink-nlp/utilities/bm25-vectorizer.js';
import type { CompactRequest } from '../../contract/activity-contract.js';
import { isDiscourseWord } from './cues.js';
import { analyse, contentTerms, itsHelper, sentences } from './text.js';

export interface SummaryOptions {
  /** Most sentences in the summary. */
  maxSentences: number;
  /** Word budget (Chinese: jieba words), matching the model prompt's "at most 120 words". */
  maxWords: number;
}

export const DEFAULT_SUMMARY: SummaryOptions = { maxSentences: 4, maxWords: 120 };

interface Sentence {
  text: string;
  position: number;
  terms: string[];
  words: number;
}

/** The summary, or `undefined` when no input has any content to summarise. */
export function extractiveSummary(
  request: CompactRequest,
  options: SummaryOptions = DEFAULT_SUMMARY,
): string | undefined {
  const all: Sentence[] = [];
  for (const input of request.inputs) {
    for (const text of sentences(input)) {
      const analysis = analyse(text);
      const terms = analysis.tokens.filter((t) => !t.stop && !isDiscourseWord(t)).map((t) => t.term);
      if (terms.length === 0) continue;
      const words = analysis.tokens.filter((t) => t.pos !== 'punct').length;
      all.push({ text, position: all.length, terms, words });
    }
  }
  if (all.length === 0) return undefined;

  const vectoriser = bm25Vectorizer();
  for (const s of all) vectoriser.learn(s.terms);
  const bows = all.map((_, i) => vectoriser.doc(i).out(itsHelper('bow')) as Record<string, number>);
  const centroid: Record<string, number> = {};
  for (const bow of [...bows, vectoriser.bowOf(contentTerms(analyse(request.phaseGoal)))]) {
    for (const [term, weight] of Object.entries(bow)) centroid[term] = (centroid[term] ?? 0) + weight;
  }
  const ranked = all
    .map((s, i) => ({ s, score: similarity.bow.cosine(bows[i] ?? {}, centroid) }))
    .sort((a, b) => b.score - a.score || a.s.position - b.s.position);

  const picked: Sentence[] = [];
  let words = 0;
  for (const { s } of ranked) {
    if (picked.length >= options.maxSentences) break;
    if (picked.length > 0 && words + s.words > options.maxWords) continue;
    picked.push(s);
    words += s.words;
  }
  // Chinese sentences end in full-width punctuation and need no space after it.
  return picked
    .sort((a, b) => a.position - b.position)
    .map((s) => s.text)
    .reduce((text, next) => (text === '' ? next : /[。！？；]$/u.test(text) ? text + next : `${text} ${next}`), '');
}
