import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  buildReport,
  calibrate,
  computeMetrics,
  evaluate,
  formatReport,
  jsonReport,
  majorityBaseline,
  predict,
  runEval,
  type Expected,
  type Predicted,
  type ScoredCase,
} from '../../cli/eval.js';
import { EvalInputError, loadCases, parseCases, type EvalCase } from '../../cli/eval-cases.js';
import {
  COST,
  MAX_COST,
  changesState,
  costOf,
  formatHarm,
  harmJson,
  harmOf,
  harmReport,
  languageSlices,
  languagesOf,
  scriptLanguage,
} from '../../cli/eval-metrics.js';
import { LocalModels } from '../../models/local-models.js';
import { ScriptedModelServer } from '../support/model-server.js';
import type { RelevanceScores } from '../../contract/relevance.js';

const T = { high: 0.65, low: 0.35 };
const pairs = (list: Array<[Expected, Predicted, number]>) =>
  list.flatMap(([expected, predicted, n]) => Array.from({ length: n }, () => ({ expected, predicted })));

describe('computeMetrics', () => {
  const metrics = computeMetrics(
    pairs([
      ['continue', 'continue', 8],
      ['continue', 'uncertain', 2],
      ['new-phase', 'new-phase', 3],
      ['new-phase', 'continue', 1],
      ['out-of-scope', 'out-of-scope', 4],
      ['out-of-scope', 'degraded', 1],
      ['conflict', 'continue', 2],
      ['uncertain', 'uncertain', 1],
    ]),
  );
  const of = (label: Expected) => metrics.perLabel.find((m) => m.label === label);

  it('counts the confusion matrix, including the degraded column', () => {
    expect(metrics.total).toBe(22);
    expect(metrics.confusion.continue).toMatchObject({ continue: 8, uncertain: 2, degraded: 0 });
    expect(metrics.confusion['out-of-scope'].degraded).toBe(1);
    expect(metrics.degraded).toBe(1);
  });

  it('computes precision, recall and F1 per decision', () => {
    // continue: predicted 8 + 1 + 2 = 11, 8 right; 10 expected.
    expect(of('continue')).toMatchObject({ support: 10, predicted: 11, truePositives: 8 });
    expect(of('continue')?.precision).toBeCloseTo(8 / 11, 10);
    expect(of('continue')?.recall).toBeCloseTo(0.8, 10);
    expect(of('continue')?.f1).toBeCloseTo((2 * (8 / 11) * 0.8) / (8 / 11 + 0.8), 10);
    expect(of('out-of-scope')).toMatchObject({ precision: 1, recall: 0.8 });
    expect(of('conflict')).toMatchObject({ support: 2, predicted: 0, precision: 0, recall: 0, f1: 0 });
    expect(of('uncertain')?.precision).toBeCloseTo(1 / 3, 10);
  });

  it('computes accuracy and macro-F1 over the five expected labels', () => {
    expect(metrics.accuracy).toBeCloseTo(16 / 22, 10);
    const mean = metrics.perLabel.reduce((s, m) => s + m.f1, 0) / 5;
    expect(metrics.macroF1).toBeCloseTo(mean, 10);
  });

  it('leaves a label out of macro-F1 only when it is neither expected nor predicted', () => {
    const m = computeMetrics(
      pairs([
        ['continue', 'continue', 3],
        ['new-phase', 'new-phase', 1],
      ]),
    );
    expect(m.macroF1).toBe(1);
    const wrong = computeMetrics(
      pairs([
        ['continue', 'continue', 3],
        ['new-phase', 'conflict', 1],
      ]),
    );
    // continue 1, new-phase 0, conflict 0 (predicted but never expected): three defined labels.
    expect(wrong.macroF1).toBeCloseTo(1 / 3, 10);
  });

  it('gives the majority baseline', () => {
    const cases = ['continue', 'continue', 'new-phase'].map((expected) => ({ expected }) as EvalCase);
    const baseline = majorityBaseline(cases);
    expect(baseline.label).toBe('continue');
    expect(baseline.metrics.accuracy).toBeCloseTo(2 / 3, 10);
    expect(baseline.metrics.macroF1).toBeCloseTo(0.4, 10); // (0.8 + 0) / 2
  });
});

const kase = (expected: Expected, i = 0): EvalCase => ({
  id: `c${i}`,
  sessionGoal: 's',
  phaseGoal: 'p',
  message: `m${i}`,
  expected,
});
const scored = (expected: Expected, phaseRelevance: number, sessionRelevance: number): ScoredCase => ({
  case: kase(expected),
  scores: { phaseRelevance, sessionRelevance },
  error: null,
  predicted: predict({ phaseRelevance, sessionRelevance }, null, T),
});

describe('calibrate', () => {
  it('finds the thresholds that separate the classes when the defaults do not', () => {
    // Continue cases score 0.6 (uncertain at 0.65), new-phase cases 0.3/0.9: only high <= 0.6 gets both right.
    const data = [
      scored('continue', 0.6, 0.6),
      scored('continue', 0.62, 0.61),
      scored('new-phase', 0.3, 0.9),
      scored('out-of-scope', 0.1, 0.2),
      scored('uncertain', 0.45, 0.5),
    ];
    const result = calibrate(data, 0.05, T);
    expect(result.macroF1).toBe(1);
    expect(result.high).toBeLessThanOrEqual(0.6);
    expect(result.high).toBeGreaterThan(0.5);
    expect(result.low).toBeGreaterThanOrEqual(0.3);
    expect(result.low).toBeLessThan(0.45);
    expect(result.low).toBeLessThan(result.high);
    expect(result.tried).toBe(210);
  });

  it('keeps the thresholds in use when nothing does better', () => {
    const data = [scored('continue', 0.9, 0.9), scored('new-phase', 0.1, 0.9), scored('uncertain', 0.5, 0.5)];
    expect(calibrate(data, 0.05, T)).toMatchObject({ high: 0.65, low: 0.35, macroF1: 1 });
  });

  it('never re-scores a failed call: it stays degraded under every threshold', () => {
    const failed: ScoredCase = { case: kase('continue'), scores: null, error: 'boom', predicted: 'degraded' };
    const result = calibrate([failed, scored('continue', 0.9, 0.9)], 0.1, T);
    expect(result.accuracy).toBe(0.5);
  });

  it('rejects a step outside (0, 0.5]', () => {
    expect(() => calibrate([], 0)).toThrow(EvalInputError);
  });
});

describe('parseCases and loadCases', () => {
  const line = (o: object) => JSON.stringify(o);
  const good = { sessionGoal: 's', phaseGoal: 'p', message: 'm', expected: 'continue' };

  it('reads JSON lines, skipping blank lines and keeping ids', () => {
    const cases = parseCases(`${line(good)}\n\n${line({ ...good, id: 'x', expected: 'conflict', note: 'n' })}\n`);
    expect(cases).toEqual([good, { ...good, id: 'x', expected: 'conflict' }]);
  });

  it('reports the line of bad JSON and of a bad label', () => {
    expect(() => parseCases(`${line(good)}\n{oops`, 'f.jsonl')).toThrow('f.jsonl:2: not valid JSON');
    expect(() => parseCases(line({ ...good, expected: 'maybe' }), 'f.jsonl')).toThrow(/f\.jsonl:1: expected:/);
    expect(() => parseCases('\n\n', 'f.jsonl')).toThrow('f.jsonl: no cases');
  });

  it('says clearly when the file cannot be read', async () => {
    await expect(loadCases('/nonexistent/cases.jsonl')).rejects.toThrow(
      'cannot read case file /nonexistent/cases.jsonl: no such file',
    );
  });
});

describe('evaluate', () => {
  it('scores every case in order and counts a failed relevance call as degraded', async () => {
    const cases = Array.from({ length: 7 }, (_, i) => kase(i === 3 ? 'uncertain' : 'continue', i));
    const scorer = async (c: EvalCase): Promise<RelevanceScores> => {
      await new Promise((r) => setTimeout(r, (7 - Number(c.id?.slice(1))) * 2));
      if (c.id === 'c3') throw new Error('model unreachable');
      return { phaseRelevance: 0.9, sessionRelevance: 0.9 };
    };
    const results = await evaluate(cases, scorer, T, 3);
    expect(results.map((r) => r.case.id)).toEqual(cases.map((c) => c.id));
    expect(results[3]).toMatchObject({ predicted: 'degraded', error: 'model unreachable', scores: null });
    expect(results.filter((r) => r.predicted === 'continue')).toHaveLength(6);
  });
});

describe('reports', () => {
  const data = [
    scored('continue', 0.9, 0.9),
    scored('new-phase', 0.1, 0.9),
    scored('conflict', 0.9, 0.9),
    { case: kase('uncertain'), scores: null, error: 'timeout', predicted: 'degraded' as const },
  ];
  const report = buildReport('cases.jsonl', 'test/fake', T, data, 0.05);

  it('prints the matrix with a degraded column, the per-decision table, totals and calibration', () => {
    const text = formatReport(report);
    expect(text).toMatch(/expected \\ predicted.*continue.*new-phase.*out-of-scope.*conflict.*uncertain.*degraded/);
    expect(text).toContain('Accuracy: 0.500 (2/4)');
    expect(text).toMatch(/Macro-F1: \d\.\d{3}/);
    expect(text).toContain('Degraded (relevance call failed): 1; first error: timeout');
    expect(text).toMatch(/best thresholds: high [\d.]+ \/ low [\d.]+/);
    expect(text).toMatch(/State-changing errors: \d+\/4/);
    expect(text).toMatch(/Cost-weighted score: \d\.\d{3}/);
    expect(text).not.toContain(String.fromCharCode(27)); // no colour codes
  });

  it('puts each case in the JSON report', () => {
    const json = jsonReport(report) as { cases: unknown[]; accuracy: number; calibration: { high: number } };
    expect(json.accuracy).toBe(0.5);
    expect(json.cases[1]).toEqual({
      id: 'c0',
      expected: 'new-phase',
      predicted: 'new-phase',
      lang: { message: 'en', goals: 'en', cross: false },
      scores: { phase: 0.1, session: 0.9 },
    });
    expect(json.cases[3]).toMatchObject({ predicted: 'degraded', scores: null, error: 'timeout' });
  });
});

describe('runEval', () => {
  const dir = mkdtempSync(join(tmpdir(), 'eval-unit-'));
  const file = join(dir, 'cases.jsonl');
  writeFileSync(
    file,
    [
      {
        sessionGoal: 'Plan a trip to Kyoto',
        phaseGoal: 'Plan a trip to Kyoto',
        message: 'go on',
        expected: 'continue',
      },
      {
        sessionGoal: 'Plan a trip to Kyoto',
        phaseGoal: 'Plan a trip to Kyoto',
        message: 'Can you renew my passport?',
        expected: 'out-of-scope',
      },
    ]
      .map((c) => JSON.stringify(c))
      .join('\n'),
  );
  const capture = () => {
    const out = { stdout: '', stderr: '' };
    return {
      out,
      io: { stdout: { write: (s: string) => (out.stdout += s) }, stderr: { write: (s: string) => (out.stderr += s) } },
    };
  };

  it('evaluates the given models and exits 0', async () => {
    const { out, io } = capture();
    expect(await runEval(['--file', file], io, { models: new LocalModels() })).toBe(0);
    expect(out.stdout).toContain('Accuracy: 1.000 (2/2)');
    expect(out.stdout).toContain('local/rules-conflict-check-v4');
  });

  it('exits 2 with a message on bad thresholds or arguments', async () => {
    const bad = capture();
    expect(
      await runEval(['--file', file, '--low', '0.7', '--high', '0.6'], bad.io, { models: new LocalModels() }),
    ).toBe(2);
    expect(bad.out.stderr).toContain('--low must be below --high');
    const unknown = capture();
    expect(await runEval(['--nope'], unknown.io, { models: new LocalModels() })).toBe(2);
    expect(unknown.out.stderr).toContain("unknown option '--nope'");
  });

  it('with OPENAI_* set, asks the configured model and counts a failed call as degraded', async () => {
    const server = await ScriptedModelServer.start();
    try {
      server.on('judge', (req) => {
        const user = JSON.parse(req.messages.find((m) => m.role === 'user')?.content ?? '{}') as { message?: string };
        return user.message === 'go on' ? { json: { phaseRelevance: 0.95, sessionRelevance: 0.9 } } : { status: 500 };
      });
      const { out, io } = capture();
      const env = { OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: 'test', HARNESS_MODEL: 'judge' };
      expect(await runEval(['--file', file, '--json'], io, { env })).toBe(0);
      const report = JSON.parse(out.stdout) as {
        provider: string;
        degraded: number;
        confusion: Record<string, Record<string, number>>;
        cases: Array<{ predicted: string; scores: unknown; error?: string }>;
      };
      expect(report.provider).toBe('openai/judge');
      expect(report.cases[0]).toMatchObject({ predicted: 'continue', scores: { phase: 0.95, session: 0.9 } });
      expect(report.cases[1]).toMatchObject({ predicted: 'degraded', scores: null });
      expect(report.cases[1]?.error).toMatch(/500/);
      expect(report.confusion['out-of-scope']?.degraded).toBe(1);
      expect(server.requests('judge')).toHaveLength(2);
    } finally {
      await server.close();
    }
  });

  it('refuses to run against an endpoint with no relevance model configured', async () => {
    const { out, io } = capture();
    expect(await runEval(['--file', file], io, { env: { OPENAI_API_KEY: 'test' } })).toBe(2);
    expect(out.stderr).toContain('no relevance model configured');
  });
});

describe('harm metrics', () => {
  it('separates spurious state changes, missed ones and swaps, and counts the first two as state-changing', () => {
    const harm = harmOf(
      pairs([
        ['continue', 'continue', 5],
        ['continue', 'new-phase', 1],
        ['uncertain', 'out-of-scope', 1],
        ['conflict', 'continue', 2],
        ['new-phase', 'continue', 1],
        ['out-of-scope', 'uncertain', 1],
        ['new-phase', 'degraded', 1],
        ['out-of-scope', 'new-phase', 1],
      ]),
    );
    expect(harm).toEqual({
      total: 13,
      spurious: 2,
      missed: 3,
      missedToUncertain: 2,
      swapped: 1,
      stateChanging: 5,
      rate: 5 / 13,
    });
  });

  it('treats degraded as state-keeping, like the workflow does', () => {
    expect(changesState('degraded')).toBe(false);
    expect(changesState('uncertain')).toBe(false);
    expect(changesState('new-phase')).toBe(true);
    expect(harmOf(pairs([['uncertain', 'degraded', 3]])).stateChanging).toBe(0);
  });

  it('charges state changes most and uncertain least, with a free diagonal', () => {
    for (const e of ['continue', 'new-phase', 'out-of-scope', 'conflict', 'uncertain'] as const) {
      expect(COST[e][e]).toBe(0);
      for (const p of ['continue', 'new-phase', 'out-of-scope', 'conflict', 'uncertain', 'degraded'] as const) {
        if (p === e) continue;
        // A wrong state change is never cheaper than any state-keeping error.
        if (!changesState(e) && changesState(p)) expect(COST[e][p]).toBe(MAX_COST);
        if (p === 'uncertain' && e !== 'uncertain') expect(COST[e][p]).toBe(1);
      }
    }
    expect(COST['continue']['new-phase']).toBeGreaterThan(COST['new-phase']['continue']);
  });

  it('turns the mean cost into a score in [0, 1]', () => {
    expect(costOf(pairs([['continue', 'continue', 4]]))).toEqual({ total: 0, mean: 0, score: 1 });
    expect(costOf(pairs([['continue', 'out-of-scope', 2]])).score).toBe(0);
    const mixed = costOf(
      pairs([
        ['continue', 'continue', 3],
        ['new-phase', 'uncertain', 1],
      ]),
    );
    expect(mixed.total).toBe(1);
    expect(mixed.score).toBeCloseTo(1 - 0.25 / MAX_COST, 10);
  });
});

describe('language slices', () => {
  it('detects the language from the script: CJK share of letters', () => {
    expect(scriptLanguage('Convert the Markdown we just created to Word')).toBe('en');
    expect(scriptLanguage('把刚刚生成的 Markdown 转成 Word')).toBe('zh');
    expect(scriptLanguage('继续')).toBe('zh');
    expect(scriptLanguage('Add the 用户 field to the signup form')).toBe('en');
    expect(scriptLanguage('42')).toBe('en');
  });

  it('marks a case cross-language when the message and the goals differ', () => {
    const goal = 'Research ComfyUI and deliver a Markdown guide';
    expect(languagesOf({ message: '继续写安装部分', sessionGoal: goal, phaseGoal: goal })).toEqual({
      message: 'zh',
      goals: 'en',
      cross: true,
    });
    expect(languagesOf({ message: 'Continue', sessionGoal: goal, phaseGoal: goal }).cross).toBe(false);
  });

  it('reports en, zh, same- and cross-language slices, leaving empty ones out', () => {
    const en = 'Write the onboarding guide';
    const zh = '写入职指南';
    const slices = languageSlices([
      { message: 'continue', sessionGoal: en, phaseGoal: en, expected: 'continue', predicted: 'continue' },
      { message: 'go on', sessionGoal: en, phaseGoal: en, expected: 'continue', predicted: 'new-phase' },
      { message: '继续', sessionGoal: en, phaseGoal: en, expected: 'continue', predicted: 'continue' },
      { message: '继续', sessionGoal: zh, phaseGoal: zh, expected: 'conflict', predicted: 'conflict' },
    ]);
    const byName = Object.fromEntries(slices.map((s) => [s.name, s]));
    expect(Object.keys(byName)).toEqual([
      'message en',
      'message zh',
      'same language',
      'cross-language',
      'cross en goals → zh message',
    ]);
    expect(byName['message en']).toMatchObject({ total: 2, correct: 1, stateChanging: 1, conflictF1: null });
    expect(byName['cross-language']).toMatchObject({ total: 1, correct: 1, costScore: 1 });
    expect(byName['message zh']?.conflictF1).toBe(1);
  });

  it('puts harm, cost and slices in the text and JSON reports', () => {
    const report = harmReport([
      { message: 'go on', sessionGoal: 'g', phaseGoal: 'g', expected: 'continue', predicted: 'out-of-scope' },
    ]);
    const text = formatHarm(report);
    expect(text).toContain('State-changing errors: 1/1 (100.0%)');
    expect(text).toContain('Cost-weighted score: 0.000');
    expect(text).toContain('message en');
    const json = harmJson(report) as { stateChanging: { spurious: number }; cost: { score: number } };
    expect(json.stateChanging.spurious).toBe(1);
    expect(json.cost.score).toBe(0);
  });
});
