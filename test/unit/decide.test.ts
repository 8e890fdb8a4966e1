import { describe, expect, it } from 'vitest';
import { band, type Band } from '../../contract/relevance.js';
import { decide, preparesEnvironment } from '../../workflows/understanding/decide.js';

const thresholds = { high: 0.65, low: 0.35 };
const SCORE: Record<Band, number> = { high: 0.9, uncertain: 0.5, low: 0.1 };
const EXPECTED: Record<Band, Record<Band, string>> = {
  high: { high: 'continue', low: 'conflict', uncertain: 'uncertain' },
  low: { high: 'new-phase', low: 'out-of-scope', uncertain: 'uncertain' },
  uncertain: { high: 'uncertain', low: 'uncertain', uncertain: 'uncertain' },
};

describe('band', () => {
  it('puts the thresholds themselves in the high and low bands', () => {
    expect(band(0.65, thresholds)).toBe('high');
    expect(band(0.6499, thresholds)).toBe('uncertain');
    expect(band(0.35, thresholds)).toBe('low');
    expect(band(0.3501, thresholds)).toBe('uncertain');
    expect(band(0, thresholds)).toBe('low');
    expect(band(1, thresholds)).toBe('high');
  });
});

describe('decide', () => {
  const bands: Band[] = ['high', 'uncertain', 'low'];
  for (const phase of bands) {
    for (const session of bands) {
      it(`phase ${phase} x session ${session} -> ${EXPECTED[phase][session]}`, () => {
        const outcome = decide({
          firstTask: false,
          relevance: { ok: true, scores: { phaseRelevance: SCORE[phase], sessionRelevance: SCORE[session] } },
          thresholds,
        });
        expect(outcome).toEqual({ decision: EXPECTED[phase][session], bands: { phase, session }, degraded: null });
      });
    }
  }

  it('initializes on the first task without needing scores', () => {
    expect(decide({ firstTask: true, thresholds })).toEqual({ decision: 'initialize', bands: null, degraded: null });
  });

  it('degrades with the failure reason when relevance failed', () => {
    expect(decide({ firstTask: false, relevance: { ok: false, reason: 'ModelTimeout' }, thresholds })).toEqual({
      decision: 'degraded',
      bands: null,
      degraded: 'ModelTimeout',
    });
  });

  it.each([
    [1.2, 0.5],
    [-0.1, 0.9],
    [Number.NaN, 0.9],
    [0.9, Number.POSITIVE_INFINITY],
  ])('degrades on invalid scores %s / %s', (phaseRelevance, sessionRelevance) => {
    const outcome = decide({
      firstTask: false,
      relevance: { ok: true, scores: { phaseRelevance, sessionRelevance } },
      thresholds,
    });
    expect(outcome.decision).toBe('degraded');
    expect(outcome.degraded).toContain('outside [0, 1]');
  });

  it('honours per-session thresholds', () => {
    const strict = { high: 0.95, low: 0.05 };
    const outcome = decide({
      firstTask: false,
      relevance: { ok: true, scores: { phaseRelevance: 0.9, sessionRelevance: 0.9 } },
      thresholds: strict,
    });
    expect(outcome.decision).toBe('uncertain');
  });

  it('prepares the environment only on initialize and new-phase', () => {
    expect(
      ['initialize', 'continue', 'new-phase', 'out-of-scope', 'conflict', 'uncertain', 'degraded'].filter((d) =>
        preparesEnvironment(d as never),
      ),
    ).toEqual(['initialize', 'new-phase']);
  });
});
