/**
 * The local extraction role: retrieval terms for recall by keyword extraction. Chinese text goes
 * through jieba's TF-IDF keyword extractor (its bundled IDF table, nouns and verbs only); English
 * text through wink-nlp, keeping the lemmas of content words, nouns first. Terms from the input
 * that opened the phase weigh most, then the phase goal, then the session goal, so the terms
 * describe the step being prepared while still naming the Session's subject.
 */
import { TfIdf } from '@node-rs/jieba';
import { idf } from '@node-rs/jieba/dict.js';
import type { AlignedTask } from '../../contract/activity-contract.js';
import {
  ACKNOWLEDGEMENTS,
  ADDITIVE_MARKERS,
  CONTINUATION_MARKERS,
  HESITATIONS,
  PERSONAL_WORDS,
  STEP_MARKERS,
  VAGUE_REFERENCES,
} from './cues.js';
import { analyse, jiebaSegmenter, type Token } from './text.js';

/** How much each part of the aligned task counts. */
const FIELD_WEIGHTS = { message: 3, phaseGoal: 2, sessionGoal: 1, resources: 1 } as const;

/** English parts of speech worth retrieving by, and how much: names and nouns say what a task is about. */
const POS_WEIGHTS: Partial<Record<Token['pos'], number>> = { noun: 1, adj: 0.6, verb: 0.5, num: 0.3, other: 0.5 };

/** jieba tags kept as Chinese keywords: nouns, verbal nouns, verbs, Latin words, idioms. */
const ZH_KEYWORD_TAGS = ['n', 'nr', 'ns', 'nt', 'nz', 'nrt', 'vn', 'v', 'eng', 'l', 'j', 'i'];

/** Discourse words say how a message relates to the task, never what the task is about. */
const CUE_WORDS = new Set<string>([
  ...ACKNOWLEDGEMENTS,
  ...HESITATIONS,
  ...VAGUE_REFERENCES,
  ...PERSONAL_WORDS,
  ...STEP_MARKERS,
  ...ADDITIVE_MARKERS,
  ...CONTINUATION_MARKERS,
]);

let tfidf: TfIdf | undefined;

function keywordExtractor(): TfIdf {
  tfidf ??= TfIdf.withDict(idf);
  return tfidf;
}

/**
 * Up to `max` retrieval terms for the task, best first: terms weighing at least `floor` × the best
 * term's weight. Deterministic; ties keep first-seen order.
 */
export function extractKeywords(task: AlignedTask, max = 12, floor = 0.25): string[] {
  const weights = new Map<string, number>();
  const add = (term: string, weight: number) => {
    const key = term.trim();
    if (key.length === 0 || key.length > 80 || CUE_WORDS.has(key.toLowerCase())) return;
    weights.set(key, (weights.get(key) ?? 0) + weight);
  };
  const fields: Array<[string, number]> = [
    [task.message, FIELD_WEIGHTS.message],
    [task.phaseGoal, FIELD_WEIGHTS.phaseGoal],
    [task.sessionGoal, FIELD_WEIGHTS.sessionGoal],
    ...task.resources.map((r): [string, number] => [r.title ?? '', FIELD_WEIGHTS.resources]),
  ];
  for (const [text, fieldWeight] of fields) {
    if (!text.trim()) continue;
    const analysis = analyse(text);
    if (analysis.lang === 'zh') {
      const keywords = keywordExtractor().extractKeywords(jiebaSegmenter(), analysis.text, max, ZH_KEYWORD_TAGS);
      // jieba's weights are TF-IDF sums; scale them so the text's best keyword weighs like an English noun.
      const top = keywords[0]?.weight ?? 1;
      for (const { keyword, weight } of keywords) {
        add(/\p{Script=Han}/u.test(keyword) ? keyword : keyword.toLowerCase(), (fieldWeight * weight) / top);
      }
      continue;
    }
    for (const token of analysis.tokens) {
      const posWeight = POS_WEIGHTS[token.pos];
      if (token.stop || posWeight === undefined || token.lemma.length < 2) continue;
      add(token.lemma, fieldWeight * posWeight);
    }
  }
  const ranked = [...weights.entries()]
    .map(([term, weight], order) => ({ term, weight, order }))
    .sort((a, b) => b.weight - a.weight || a.order - b.order);
  const best = ranked[0]?.weight ?? 0;
  return ranked
    .filter((e) => e.weight >= floor * best)
    .slice(0, max)
    .map((e) => e.term);
}
