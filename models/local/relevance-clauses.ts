/**
 * Where clauses begin and end in a token list. Several relevance cues count only at a clause edge
 * ("now" opening a clause shifts the step, "now" mid-sentence does not), so feature and conflict
 * detection share these.
 */
import { ACKNOWLEDGEMENTS } from './cues.js';
import type { Token } from './text.js';

/** Position of the first word, or -1 when there is none. */
export function firstWord(tokens: Token[]): number {
  return tokens.findIndex((t) => t.pos !== 'punct');
}

/**
 * Positions that open a clause: the start of the message or right after punctuation, skipping
 * acknowledgements and interjections ("OK, now …", "营收写完了，接着 …").
 */
export function clauseInitial(tokens: Token[]): Set<number> {
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
export function clauseFinal(tokens: Token[]): Set<number> {
  const out = new Set<number>();
  tokens.forEach((t, i) => {
    const next = tokens[i + 1];
    if (t.pos !== 'punct' && (!next || next.pos === 'punct')) out.add(i);
  });
  return out;
}

/** The nearest word before position `i`, skipping punctuation. */
export function previousWord(tokens: Token[], i: number): Token | undefined {
  for (let j = i - 1; j >= 0; j--) {
    const t = tokens[j];
    if (t && t.pos !== 'punct') return t;
  }
  return undefined;
}
