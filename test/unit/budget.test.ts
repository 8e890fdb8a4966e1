import { describe, expect, it } from 'vitest';
import { BUDGET, enforceBudget, trimToBytes } from '../../contract/budget.js';
import { clipBytes, jsonBytes, utf8Length } from '../../contract/text.js';
import { bindNext, intake } from '../../workflows/ledger/intake.js';
import { initialState } from '../../workflows/run/state.js';

describe('utf8Length and clipBytes', () => {
  it('count UTF-8 bytes the way Temporal measures payloads', () => {
    expect(utf8Length('abc')).toBe(3);
    expect(utf8Length('é')).toBe(2);
    expect(utf8Length('研究')).toBe(6);
    expect(utf8Length('😀')).toBe(4);
    expect(utf8Length('研究'.repeat(1000))).toBe(Buffer.byteLength('研究'.repeat(1000)));
  });

  it('cut by bytes without splitting a character', () => {
    const clipped = clipBytes('研'.repeat(1000), 1500);
    expect(Buffer.byteLength(clipped)).toBeLessThanOrEqual(1500);
    expect(clipped.endsWith('…')).toBe(true);
    expect(clipped.includes('\uFFFD')).toBe(false);
    expect(clipBytes('short', 1500)).toBe('short');
  });
});

describe('enforceBudget', () => {
  it('keeps the carried state of a Session full of large Chinese inputs well under 2 MB', () => {
    const state = initialState({ sessionId: 'big', settings: { keepDecisions: 1000 } });
    const resources = Array.from({ length: 32 }, (_, i) => ({ uri: `https://example.com/${i}/${'x'.repeat(2000)}` }));
    for (let i = 0; i < 60; i++) {
      intake(state, { messageId: `m${i}`, text: '研'.repeat(16_000), resources }, 'signal', i);
      const bound = bindNext(state, i);
      if (bound) bound.reply = '答'.repeat(8_000);
      state.outOfScope.push({
        seq: i,
        messageId: `m${i}`,
        text: '天'.repeat(16_000),
        resources,
        from: null,
        status: 'pending',
        routedTo: null,
        note: null,
      });
      enforceBudget(state);
    }
    expect(jsonBytes(state)).toBeLessThan(1_600_000);
    expect(state.history.length).toBeGreaterThanOrEqual(1);
    expect(state.history.at(-1)?.messageId).toBe('m59');
  });

  it('trims oldest first and always keeps the newest item', () => {
    const list = ['a'.repeat(100), 'b'.repeat(100), 'c'.repeat(300)];
    trimToBytes(list, 150);
    expect(list).toEqual(['c'.repeat(300)]);
    expect(BUDGET.queue).toBeGreaterThan(0);
  });
});
