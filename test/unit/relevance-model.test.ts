/**
 * The trained conflict check of the local relevance scorer (models/local/relevance-model.ts and the
 * weights npm run train:relevance writes): the committed file loads and fits the feature extractor,
 * it reads the source article's examples right, it sees conflicts in English and Chinese, split
 * evidence lands in the uncertain band, and the model can only add a conflict to the rules' verdict.
 */
import { describe, expect, it } from 'vitest';
import { gatherEvidence, judgeByRules, scoreRelevance } from '../../models/local/relevance.js';
import {
  CLASSES,
  MODEL,
  classify,
  combineScores,
  conflictEvidence,
  gateConflict,
  modelFeatures,
  scoresFromProbabilities,
} from '../../models/local/relevance-model.js';
import { numbersIn } from '../../models/local/relevance-signals.js';
import { decide } from '../../workflows/understanding/decide.js';

const thresholds = { high: 0.65, low: 0.35 };
const decisionOf = (scores: { phaseRelevance: number; sessionRelevance: number }) =>
  decide({ firstTask: false, relevance: { ok: true, scores }, thresholds }).decision;
const judge = (message: string, phaseGoal: string, sessionGoal = phaseGoal) => {
  const judged = scoreRelevance({ message, phaseGoal, sessionGoal });
  return { judged, decision: decisionOf(judged) };
};

describe('the committed model file', () => {
  it('loads, names the features the extractor produces, and has one weight row per class', () => {
    const input = { message: 'Continue', phaseGoal: 'Write a guide', sessionGoal: 'Write a guide' };
    const evidence = gatherEvidence(input);
    const features = modelFeatures(evidence, judgeByRules(input, evidence));
    expect(MODEL.version).toBe('local/rules-conflict-check-v4');
    expect(MODEL.classes).toEqual([...CLASSES]);
    expect(MODEL.features).toEqual(Object.keys(features));
    expect(MODEL.mean).toHaveLength(MODEL.features.length);
    expect(MODEL.scale).toHaveLength(MODEL.features.length);
    expect(MODEL.weights).toHaveLength(CLASSES.length);
    for (const row of MODEL.weights) expect(row).toHaveLength(MODEL.features.length);
    const p = classify(MODEL, features);
    expect(p.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
  });

  it.each([
    ['Continue', 'continue'],
    ['Convert the Markdown we just created to Word', 'new-phase'],
    ["Also check tomorrow's weather", 'out-of-scope'],
  ])('predicts the source article example %j as %s, with the class itself most probable', (message, expected) => {
    const goal = 'Research ComfyUI and deliver a Markdown guide';
    const { judged, decision } = judge(message, goal);
    expect(decision).toBe(expected);
    const probabilities: Record<string, number> = judged.probabilities ?? {};
    const top = Object.entries(probabilities).sort((a, b) => b[1] - a[1])[0]?.[0];
    expect(top).toBe(expected);
  });

  it.each([
    ['继续', 'continue'],
    ['把刚刚生成的 Markdown 转成 Word', 'new-phase'],
    ['顺便查一下明天的天气', 'out-of-scope'],
  ])('predicts the Chinese example %j as %s', (message, expected) => {
    expect(judge(message, '研究 ComfyUI 并交付一份 Markdown 指南').decision).toBe(expected);
  });
});

describe('conflicts in English and Chinese', () => {
  it('sees a number past the limit the session goal states, and not one within it', () => {
    const session = 'Renovate the bathroom with a budget of at most $20,000';
    expect(judge("Let's get the $38,000 walnut cabinet set", 'Pick the cabinets', session).decision).toBe('conflict');
    expect(judge('Get the cheaper $12,000 cabinet set', 'Pick the cabinets', session).decision).toBe('continue');
    expect(judge('柜子选 3 万的那套', '挑选柜子', '翻新卫生间，预算不超过 2 万元').decision).toBe('conflict');
    expect(judge('柜子选白色的', '挑选柜子', '翻新卫生间，预算不超过 2 万元').decision).toBe('continue');
  });

  it('says when the trained check, not a rule, saw the conflict', () => {
    const session = 'Renovate the bathroom with a budget of at most $20,000';
    const flagged = judge("Let's get the $38,000 walnut cabinet set", 'Pick the cabinets', session).judged;
    expect(decisionOf(flagged.rules ?? flagged)).toBe('continue');
    expect(flagged.cues).toContain('trained conflict check');
    expect(judge('Get the cheaper $12,000 cabinet set', 'Pick the cabinets', session).judged.cues).not.toContain(
      'trained conflict check',
    );
  });

  it('sees what a general constraint concept rules out', () => {
    expect(
      judge(
        'Add peanut butter cookies to the snack table',
        'Plan the snacks',
        'Plan a nut-free birthday party for the class',
      ).decision,
    ).toBe('conflict');
    expect(judge('零食里加一些花生和杏仁', '安排零食', '为班级办一个无坚果的生日会').decision).toBe('conflict');
  });

  it('sees a negated goal term', () => {
    expect(judge('报表里用未经核实的数字', '整理营收报表', '基于经核实的数据编写季度报告').decision).toBe('conflict');
  });

  it('needs evidence in the message: without any, conflict probability goes to continue', () => {
    const none = { goalConstraint: 1 };
    expect(conflictEvidence(none, 'loose')).toBe(false);
    expect(conflictEvidence({ ...none, touchesConstraint: 1 }, 'loose')).toBe(true);
    expect(conflictEvidence({ ...none, touchesConstraint: 1 }, 'strict')).toBe(false);
    expect(conflictEvidence({ exceedsLimit: 1 }, 'strict')).toBe(true);
    expect(conflictEvidence({}, 'none')).toBe(true);
    const gated = gateConflict([0.3, 0.05, 0.05, 0.55, 0.05], none, 'loose');
    [0.85, 0.05, 0.05, 0, 0.05].forEach((v, i) => expect(gated[i]).toBeCloseTo(v, 12));
  });
});

describe('weak evidence', () => {
  it('lands in the uncertain band when the probability is split between opposite answers', () => {
    // continue against new-phase: the phase margin is small.
    expect(decisionOf(scoresFromProbabilities([0.45, 0.45, 0.05, 0.03, 0.02], 1.5))).toBe('uncertain');
    // continue against conflict: the session margin is small.
    expect(decisionOf(scoresFromProbabilities([0.48, 0.02, 0.02, 0.46, 0.02], 1.5))).toBe('uncertain');
    // Mass on `uncertain` itself keeps both scores near 0.5.
    expect(decisionOf(scoresFromProbabilities([0.1, 0.1, 0.05, 0.05, 0.7], 1.5))).toBe('uncertain');
    expect(decisionOf(scoresFromProbabilities([0.9, 0.04, 0.02, 0.02, 0.02], 1.5))).toBe('continue');
  });

  it("may turn the rules' continue into a conflict, and changes nothing else", () => {
    const cont = { phaseRelevance: 0.8, sessionRelevance: 0.85 };
    const conflict = { phaseRelevance: 0.8, sessionRelevance: 0.2 };
    const newPhase = { phaseRelevance: 0.2, sessionRelevance: 0.8 };
    const away = { phaseRelevance: 0.2, sessionRelevance: 0.2 };
    const unsure = { phaseRelevance: 0.5, sessionRelevance: 0.5 };
    expect(combineScores(cont, conflict)).toEqual({ phaseRelevance: 0.8, sessionRelevance: 0.2 });
    expect(decisionOf(combineScores(cont, conflict))).toBe('conflict');
    // The model never changes state, never makes a message uncertain, never overrules a rules' decision.
    for (const model of [newPhase, away, unsure, cont]) expect(combineScores(cont, model)).toEqual(cont);
    for (const rules of [newPhase, away, unsure, conflict])
      for (const model of [cont, conflict, newPhase, away, unsure]) expect(combineScores(rules, model)).toEqual(rules);
  });

  it('keeps vague messages uncertain', () => {
    for (const message of ['hmm', 'what about the other one?', '然后呢？', '那个呢？'])
      expect(judge(message, 'Research ComfyUI and deliver a Markdown guide').decision).toBe('uncertain');
  });
});

describe('numbers for limits', () => {
  it('reads currency, thousands, 万 and percentages', () => {
    expect(numbersIn('at most $25,000')).toEqual([{ value: 25000, unit: 'money' }]);
    expect(numbersIn('预算不超过 15 万')).toEqual([{ value: 150000, unit: 'money' }]);
    expect(numbersIn('不超过合同金额的 10%')).toEqual([{ value: 10, unit: 'percent' }]);
    expect(numbersIn('12 vans and 3k boxes')).toEqual([
      { value: 12, unit: 'plain' },
      { value: 3000, unit: 'plain' },
    ]);
  });
});
