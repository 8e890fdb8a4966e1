/**
 * The bounds on what the local provider analyses. wink-nlp's tokeniser and Porter stemmer take time
 * that grows with the square of a token's length (16,000 repeated letters: 20 s for one token), and
 * the rules are linear in the number of tokens at best, so one message at the size limit could hold
 * the worker for seconds. Every text is brought within these bounds before it is analysed; ordinary
 * messages are far inside them and are analysed unchanged (docs/relevance.md, "Bounds").
 */

/**
 * Most characters of one text that are analysed: the beginning of a longer text. A request says
 * what it is about in its first sentences; 1,000 characters are about 170 English words.
 */
export const MAX_ANALYSED_CHARS = 1_000;

/**
 * Most words (runs of non-space characters) of one text that are analysed. The rules' cost grows
 * with the number of tokens, and "a b a b …" packs two into four characters; ordinary English has
 * about 170 words in MAX_ANALYSED_CHARS.
 */
export const MAX_ANALYSED_WORDS = 200;

/**
 * Longest run of non-space characters outside Chinese script that is analysed as it is; a longer
 * one is cut to this length. No word is this long; a long URL loses only its tail. Chinese runs are
 * exempt, because Chinese is written without spaces and jieba segments it in linear time.
 */
export const MAX_TOKEN_CHARS = 64;

/** Longest run of one repeated character that is kept; a longer one is shortened to this length. */
export const MAX_RUN = 8;

// One character followed by MAX_RUN or more copies of itself. Linear: a run is consumed whole at its
// first position, and elsewhere the match fails within MAX_RUN + 1 characters.
const LONG_RUN = new RegExp(`(.)\\1{${MAX_RUN},}`, 'gsu');
// Non-space, non-Han runs longer than the bound. Linear: a run is consumed whole where it starts.
const LONG_TOKEN = new RegExp(`[^\\s\\p{Script=Han}]{${MAX_TOKEN_CHARS + 1},}`, 'gu');

const SPACE = /\s/u;

/** The first `n` code points of `s`, never half a surrogate pair. */
function codePoints(s: string, n: number): string {
  return Array.from(s).slice(0, n).join('');
}

/** `text` up to the end of its `n`-th word (run of non-space characters). */
function firstWords(text: string, n: number): string {
  let words = 0;
  for (let i = 0; i < text.length; i++) {
    const space = SPACE.test(text.charAt(i));
    if (!space && (i === 0 || SPACE.test(text.charAt(i - 1))) && ++words > n) return text.slice(0, i).trimEnd();
  }
  return text;
}

/**
 * `text` within the bounds: runs of one character longer than MAX_RUN shortened to MAX_RUN, non-Chinese
 * tokens longer than MAX_TOKEN_CHARS cut to that length, the text cut after MAX_ANALYSED_WORDS words,
 * and the result cut to MAX_ANALYSED_CHARS at
 * the last space before the limit (or at the limit when there is none nearby). Idempotent.
 */
export function boundText(text: string): string {
  let bounded = text.replace(LONG_RUN, (_run, ch: string) => ch.repeat(MAX_RUN));
  bounded = bounded.replace(LONG_TOKEN, (token) => codePoints(token, MAX_TOKEN_CHARS));
  bounded = firstWords(bounded, MAX_ANALYSED_WORDS);
  if (bounded.length <= MAX_ANALYSED_CHARS) return bounded;
  let cut = bounded.slice(0, MAX_ANALYSED_CHARS);
  // Don't keep half a word (Latin script) or half a surrogate pair.
  if (!SPACE.test(bounded.charAt(MAX_ANALYSED_CHARS))) {
    for (let i = cut.length - 1; i >= cut.length - MAX_TOKEN_CHARS && i > 0; i--) {
      if (SPACE.test(cut.charAt(i))) {
        cut = cut.slice(0, i);
        break;
      }
    }
  }
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return cut;
}
