import { describe, expect, it } from 'vitest';
import { COMPACT_TO_SHARE, itemsToCompact } from '../../workflows/agent/context-window.js';
import { jsonBytes } from '../../contract/text.js';
import type { TranscriptItem } from '../../contract/transcript.js';

/** A transcript of `turns` user/reply pairs of about 500 bytes each, seq 1..turns. */
function transcript(turns: number): TranscriptItem[] {
  return Array.from({ length: turns }, (_, i): TranscriptItem[] => [
    { kind: 'user', seq: i + 1, text: `question ${i + 1} `.padEnd(480, 'x'), resources: [] },
    { kind: 'reply', seq: i + 1, text: `answer ${i + 1} `.padEnd(480, 'y') },
  ]).flat();
}

describe('itemsToCompact', () => {
  const budget = 8_000;
  const target = Math.floor(budget * COMPACT_TO_SHARE);

  it('compacts nothing while the window fits its budget', () => {
    const items = transcript(6);
    expect(jsonBytes(items)).toBeLessThan(budget);
    expect(itemsToCompact(items, 7, budget, target)).toEqual([]);
  });

  it('brings a window over budget down to the target, oldest items first', () => {
    const items = transcript(10);
    expect(jsonBytes(items)).toBeGreaterThan(budget);
    const old = itemsToCompact(items, 11, budget, target);
    expect(old).toEqual(items.slice(0, old.length));
    expect(jsonBytes(items.slice(old.length))).toBeLessThanOrEqual(target);
    // One item fewer would leave it over the target: no more is compacted than needed.
    expect(jsonBytes(items.slice(old.length - 1))).toBeGreaterThan(target);
  });

  it('without a lower target compacts only what is over budget (the behaviour before the patch)', () => {
    const items = transcript(10);
    const old = itemsToCompact(items, 11, budget);
    expect(jsonBytes(items.slice(old.length))).toBeLessThanOrEqual(budget);
    expect(jsonBytes(items.slice(old.length))).toBeGreaterThan(target);
  });

  it('never compacts the turn in progress', () => {
    const items = transcript(10);
    const old = itemsToCompact(items, 3, budget, target);
    expect(old.every((item) => item.seq < 3)).toBe(true);
    expect(old).toHaveLength(4);
  });

  it('a window compacted to the target takes many inputs to go over budget again', () => {
    let items = transcript(10);
    let compactions = 0;
    for (let seq = 11; seq <= 40; seq++) {
      items = [...items, ...transcript(seq).slice(-2)];
      const old = itemsToCompact(items, seq, budget, target);
      if (old.length === 0) continue;
      compactions++;
      items = [{ kind: 'summary', seq: old.at(-1)!.seq, text: 'summary' }, ...items.slice(old.length)];
    }
    // 30 inputs of about 1 KB against an 8 KB budget compacted down to 4 KB: once every 4 inputs or so.
    expect(compactions).toBeGreaterThan(3);
    expect(compactions).toBeLessThanOrEqual(8);
  });
});
