/**
 * No input stalls the worker (issue 24, item 6). Before the fix, a 16,000-character message of one
 * letter held the main thread 16 s in the local scorer, 16,000 dots 8.6 s, and parseModelJson took
 * 8.5 s on a code fence followed by 2,000 spaces. Speed itself is measured by `npm run bench --
 * --scenarios pathological`; these tests assert the properties that make it fast: the analysed text
 * is bounded, the fence is parsed without backtracking, and the scoring leaves the main thread.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { FAILURE } from '../../contract/failures.js';
import { threadId } from 'node:worker_threads';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalModels } from '../../models/local-models.js';
import { parseModelJson, unfenced } from '../../models/model-errors.js';
import { RelevanceScores } from '../../contract/relevance.js';
import { analyse, sentences } from '../../models/local/text.js';
import {
  MAX_ANALYSED_CHARS,
  MAX_ANALYSED_WORDS,
  MAX_RUN,
  MAX_TOKEN_CHARS,
  boundText,
} from '../../models/local/text-bounds.js';
import { MAX_TEXT_CHARS } from '../../contract/messages.js';

/** The inputs of the finding, at the size limit of a message, and one five times over it. */
const PATHOLOGICAL: Record<string, string> = {
  'one letter': 'a'.repeat(MAX_TEXT_CHARS),
  punctuation: '.'.repeat(MAX_TEXT_CHARS),
  spaces: ' '.repeat(MAX_TEXT_CHARS - 1) + 'x',
  'two letters, no run': 'ab'.repeat(MAX_TEXT_CHARS / 2),
  'letters and digits': 'a1'.repeat(MAX_TEXT_CHARS / 2),
  'short words': 'a b '.repeat(MAX_TEXT_CHARS / 4),
  'Chinese and a long Latin word': '报告'.repeat(100) + 'x'.repeat(MAX_TEXT_CHARS - 200),
  '100 KB of one letter': 'a'.repeat(100_000),
};

const goals = { phaseGoal: 'Write the quarterly sales report', sessionGoal: 'Prepare the Q3 finance report' };

/** The longest run of non-space characters outside Chinese script. */
function longestToken(text: string): number {
  return Math.max(0, ...(text.match(/[^\s\p{Script=Han}]+/gu) ?? []).map((t) => Array.from(t).length));
}

describe('what the local provider analyses is bounded', () => {
  it.each(Object.entries(PATHOLOGICAL))('%s: bounded text, bounded tokens', (_name, text) => {
    const analysis = analyse(text);
    expect(analysis.text.length).toBeLessThanOrEqual(MAX_ANALYSED_CHARS);
    expect(longestToken(analysis.text)).toBeLessThanOrEqual(MAX_TOKEN_CHARS);
    for (const token of analysis.tokens) expect(Array.from(token.text).length).toBeLessThanOrEqual(MAX_TOKEN_CHARS);
    expect(sentences(text).join(' ').length).toBeLessThanOrEqual(MAX_ANALYSED_CHARS);
  });

  it('bounds any text, keeps it a prefix-like reduction, and is idempotent', () => {
    const pieces = fc.constantFrom('a', 'b', ' ', '.', '\n', '报', '告', '😀', '1', 'word ');
    fc.assert(
      fc.property(fc.array(fc.tuple(pieces, fc.integer({ min: 1, max: 400 })), { maxLength: 30 }), (parts) => {
        const text = parts.map(([p, n]) => p.repeat(n)).join('');
        const bounded = boundText(text);
        expect(bounded.length).toBeLessThanOrEqual(MAX_ANALYSED_CHARS);
        expect(longestToken(bounded)).toBeLessThanOrEqual(MAX_TOKEN_CHARS);
        expect(bounded.split(/\s+/u).filter(Boolean).length).toBeLessThanOrEqual(MAX_ANALYSED_WORDS);
        expect(/(.)\1{8,}/su.test(bounded)).toBe(false);
        expect(boundText(bounded)).toBe(bounded);
        // Never half a surrogate pair.
        expect(bounded).toBe(Array.from(bounded).join(''));
        expect(/[\uD800-\uDBFF]$/.test(bounded)).toBe(false);
      }),
      { numRuns: 300 },
    );
    expect(MAX_RUN).toBe(8);
  });

  it('leaves ordinary messages as they are', () => {
    for (const text of [
      'Convert the Markdown we just created to Word',
      '把刚才的指南翻译成英文，再加一个 FAQ 章节。',
      'Budget is $1,000,000 — see https://example.com/reports/2026/q3/summary?lang=en for details!!!',
    ])
      expect(boundText(text)).toBe(text);
  });
});

describe("parseModelJson's code fence", () => {
  it('reads a fence followed by 2,000 spaces as not JSON', () => {
    const answer = '```' + ' '.repeat(2_000);
    expect(() => parseModelJson(answer, RelevanceScores, 'relevance')).toThrow(
      expect.objectContaining({ type: FAILURE.ModelInvalidOutput, message: expect.stringContaining('not JSON') }),
    );
  });

  it('means what the old regular expression meant, on every short answer', () => {
    // The old expression, safe on answers this short, as the reference.
    const reference = (c: string) => /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/i.exec(c)?.[1];
    const answer = fc
      .array(fc.constantFrom('`', '```', 'json', 'JSON', 'j', ' ', '\n', '\t', '{', '}', 'a', '\u00a0'), {
        maxLength: 12,
      })
      .map((a) => a.join(''));
    fc.assert(
      fc.property(answer, (c) => {
        expect(unfenced(c)).toBe(reference(c));
      }),
      { numRuns: 20_000 },
    );
  });

  it('unfences padded JSON of any length', () => {
    const pad = ' '.repeat(50_000);
    expect(
      parseModelJson(
        '```json' + pad + '{"phaseRelevance":0.2,"sessionRelevance":0.9}' + pad + '```',
        RelevanceScores,
        'r',
      ),
    ).toEqual({ phaseRelevance: 0.2, sessionRelevance: 0.9 });
  });
});

describe('local scoring runs off the main thread', () => {
  const models = new LocalModels({ threads: 1 });
  afterAll(() => models.close());

  it('keeps the main event loop free while pathological inputs are scored', async () => {
    expect(models.threadIds()).toHaveLength(1);
    expect(models.threadIds()).not.toContain(threadId);
    const call = { timeoutMs: 120_000 };
    // Loads the thread's models, so the measured part is scoring alone.
    await models.relevance({ message: { text: 'warm up', resources: [] }, ...goals }, call);

    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    // The histogram measures from its timer's first run on: let it run once before the work.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    // Enough work (seconds) that a scheduling hiccup of a busy machine stays far below a quarter of it.
    const inputs = Object.values(PATHOLOGICAL).flatMap((text) => Array<string>(10).fill(text));
    const scores = await Promise.all(
      inputs.map((text) => models.relevance({ message: { text, resources: [] }, ...goals }, call)),
    );
    const elapsedMs = performance.now() - started;
    // The histogram records a stall when its timer finally runs: give it that turn.
    await new Promise((resolve) => setTimeout(resolve, 50));
    delay.disable();

    for (const s of scores) {
      expect(s.phaseRelevance).toBeGreaterThanOrEqual(0);
      expect(s.sessionRelevance).toBeLessThanOrEqual(1);
    }
    // On the main thread the whole batch would run as one synchronous block: the loop's longest
    // stall would equal the elapsed time. In the pool the loop only waits for messages.
    expect(delay.max / 1e6).toBeLessThan(elapsedMs / 4);
  });
});
