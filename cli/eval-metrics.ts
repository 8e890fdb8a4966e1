/**
 * The figures of the relevance evaluation: the confusion matrix with per-decision precision, recall
 * and F1, and what accuracy alone hides — which errors change the Session's state when they should
 * not (or fail to when they should), what the errors cost, and how the scorer does per message
 * language and when the message is written in another language than the goals. Pure functions over
 * (expected, predicted) pairs; `eval.ts` runs the cases and prints the report.
 */
import Table from 'cli-table3';

/** The labels a case can expect; macro-F1 averages over these. */
export const EXPECTED = ['continue', 'new-phase', 'out-of-scope', 'conflict', 'uncertain'] as const;
export type Expected = (typeof EXPECTED)[number];
/** What the pipeline can predict: an expected label, or `degraded` when the relevance call failed. */
export const PREDICTED = [...EXPECTED, 'degraded'] as const;
export type Predicted = (typeof PREDICTED)[number];

export interface Pair {
  expected: Expected;
  predicted: Predicted;
}

export interface LabelMetrics {
  label: Expected;
  support: number;
  predicted: number;
  truePositives: number;
  precision: number;
  recall: number;
  f1: number;
}

export interface Metrics {
  total: number;
  correct: number;
  accuracy: number;
  /** Mean F1 over the expected labels that occur in the file or are predicted (others are undefined). */
  macroF1: number;
  /** confusion[expected][predicted] = count. */
  confusion: Record<Expected, Record<Predicted, number>>;
  perLabel: LabelMetrics[];
  degraded: number;
}

export function computeMetrics(pairs: Pair[]): Metrics {
  const confusion = Object.fromEntries(
    EXPECTED.map((e) => [e, Object.fromEntries(PREDICTED.map((p) => [p, 0]))]),
  ) as Record<Expected, Record<Predicted, number>>;
  for (const { expected, predicted } of pairs) confusion[expected][predicted] += 1;
  const perLabel = EXPECTED.map((label): LabelMetrics => {
    const truePositives = confusion[label][label];
    const support = PREDICTED.reduce((n, p) => n + confusion[label][p], 0);
    const predicted = EXPECTED.reduce((n, e) => n + confusion[e][label], 0);
    const precision = predicted === 0 ? 0 : truePositives / predicted;
    const recall = support === 0 ? 0 : truePositives / support;
    const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
    return { label, support, predicted, truePositives, precision, recall, f1 };
  });
  const defined = perLabel.filter((m) => m.support > 0 || m.predicted > 0);
  const correct = perLabel.reduce((n, m) => n + m.truePositives, 0);
  return {
    total: pairs.length,
    correct,
    accuracy: pairs.length === 0 ? 0 : correct / pairs.length,
    macroF1: defined.length === 0 ? 0 : defined.reduce((s, m) => s + m.f1, 0) / defined.length,
    confusion,
    perLabel,
    degraded: EXPECTED.reduce((n, e) => n + confusion[e].degraded, 0),
  };
}

// ---- Harm: errors that change state -----------------------------------------------------------

/**
 * Decisions after which the Session's goals, capabilities and routing are as they were. `degraded`
 * behaves like `uncertain` in the workflow, so it keeps state too.
 */
export const STATE_KEEPING: ReadonlySet<Predicted> = new Set(['continue', 'conflict', 'uncertain', 'degraded']);

/** Whether a decision changes state: a new phase replaces the phase goal, out-of-scope routes the request away. */
export function changesState(label: Predicted): boolean {
  return !STATE_KEEPING.has(label);
}

export interface Harm {
  total: number;
  /** Expected continue, conflict or uncertain, predicted new-phase or out-of-scope: state changed that should have stayed. */
  spurious: number;
  /** Expected new-phase or out-of-scope, predicted a state-keeping decision: a needed change did not happen. */
  missed: number;
  /** Of `missed`, how many went to `uncertain` or `degraded`, where the business agent still reasons or asks. */
  missedToUncertain: number;
  /** Expected new-phase predicted out-of-scope or the reverse: state changed, but the wrong way. */
  swapped: number;
  /** spurious + missed: the state-changing errors the issue targets. */
  stateChanging: number;
  /** stateChanging / total. */
  rate: number;
}

export function harmOf(pairs: Pair[]): Harm {
  let spurious = 0;
  let missed = 0;
  let missedToUncertain = 0;
  let swapped = 0;
  for (const { expected, predicted } of pairs) {
    if (expected === predicted) continue;
    const want = changesState(expected);
    const got = changesState(predicted);
    if (!want && got) spurious++;
    else if (want && !got) {
      missed++;
      if (predicted === 'uncertain' || predicted === 'degraded') missedToUncertain++;
    } else if (want && got) swapped++;
  }
  const stateChanging = spurious + missed;
  return {
    total: pairs.length,
    spurious,
    missed,
    missedToUncertain,
    swapped,
    stateChanging,
    rate: pairs.length === 0 ? 0 : stateChanging / pairs.length,
  };
}

// ---- Cost ----------------------------------------------------------------------------------------

/**
 * What one error costs, COST[expected][predicted], on a 0–5 scale; the diagonal is free.
 *
 * - 5: a state change that should not happen. A spurious new phase replaces the phase goal and
 *   reloads capabilities; a spurious out-of-scope routes the user's own work to another Session
 *   and skips the agent; out-of-scope taken as a new phase writes an unrelated task into the goals.
 * - 4: the right kind of change aimed wrong: a new step routed away as out of scope.
 * - 3: a needed change or a conflict silently missed: the agent carries on as if nothing changed
 *   (new phase or out-of-scope read as continue or conflict, a contradiction read as continue).
 * - 2: a false alarm that keeps state: a conflict flagged on a plain continuation or a vague message.
 * - 1: `uncertain` (or `degraded`) where a decision was possible, or `continue` on a vague message:
 *   state is kept and the business agent reasons or asks, which costs a turn, not the task.
 */
export const COST: Record<Expected, Record<Predicted, number>> = {
  continue: { continue: 0, 'new-phase': 5, 'out-of-scope': 5, conflict: 2, uncertain: 1, degraded: 1 },
  'new-phase': { continue: 3, 'new-phase': 0, 'out-of-scope': 4, conflict: 3, uncertain: 1, degraded: 1 },
  'out-of-scope': { continue: 3, 'new-phase': 5, 'out-of-scope': 0, conflict: 3, uncertain: 1, degraded: 1 },
  conflict: { continue: 3, 'new-phase': 5, 'out-of-scope': 5, conflict: 0, uncertain: 1, degraded: 1 },
  uncertain: { continue: 1, 'new-phase': 5, 'out-of-scope': 5, conflict: 2, uncertain: 0, degraded: 0 },
};
export const MAX_COST = 5;

export interface Cost {
  /** Sum of COST over the cases. */
  total: number;
  /** total / cases. */
  mean: number;
  /** 1 − mean / MAX_COST: 1 when every decision is right, 0 when every one is a worst-case error. */
  score: number;
}

export function costOf(pairs: Pair[]): Cost {
  const total = pairs.reduce((n, { expected, predicted }) => n + COST[expected][predicted], 0);
  const mean = pairs.length === 0 ? 0 : total / pairs.length;
  return { total, mean, score: 1 - mean / MAX_COST };
}

// ---- Language slices -------------------------------------------------------------------------------

export type Script = 'en' | 'zh';

const HAN = /\p{Script=Han}/gu;
const LATIN = /\p{Script=Latin}/gu;
/**
 * Share of CJK characters among CJK plus Latin letters above which a text counts as Chinese. A
 * Chinese word carries as much as about two Latin letters' worth of a word, so 0.25 keeps
 * "把 Markdown 转成 Word" Chinese and "add the 用户 field" English.
 */
export const CJK_SHARE = 0.25;

/** The language of a text from its script: Chinese when its CJK share reaches CJK_SHARE. */
export function scriptLanguage(text: string): Script {
  const han = text.match(HAN)?.length ?? 0;
  const latin = text.match(LATIN)?.length ?? 0;
  return han + latin > 0 && han / (han + latin) >= CJK_SHARE ? 'zh' : 'en';
}

export interface LanguageOf {
  message: Script;
  goals: Script;
  /** The message is written in another language than the goals. */
  cross: boolean;
}

/** Languages of a case, detected from its text (the goals are read together). */
export function languagesOf(c: { message: string; sessionGoal: string; phaseGoal: string }): LanguageOf {
  const message = scriptLanguage(c.message);
  const goals = scriptLanguage(`${c.sessionGoal}\n${c.phaseGoal}`);
  return { message, goals, cross: message !== goals };
}

export interface SliceFigures {
  name: string;
  total: number;
  correct: number;
  accuracy: number;
  macroF1: number;
  /** `null` when the slice neither expects nor predicts a conflict. */
  conflictF1: number | null;
  stateChanging: number;
  costScore: number;
}

export function sliceFigures(name: string, pairs: Pair[]): SliceFigures {
  const m = computeMetrics(pairs);
  const conflict = m.perLabel.find((l) => l.label === 'conflict');
  return {
    name,
    total: m.total,
    correct: m.correct,
    accuracy: m.accuracy,
    macroF1: m.macroF1,
    conflictF1: conflict && (conflict.support > 0 || conflict.predicted > 0) ? conflict.f1 : null,
    stateChanging: harmOf(pairs).stateChanging,
    costScore: costOf(pairs).score,
  };
}

export interface LabelledCase extends Pair {
  message: string;
  sessionGoal: string;
  phaseGoal: string;
}

/**
 * Slices by message language and by cross-language: `en`, `zh`, `same-language`, `cross-language`,
 * and each cross direction that occurs (`en→zh` = English goals, Chinese message). Empty slices are
 * left out.
 */
export function languageSlices(cases: LabelledCase[]): SliceFigures[] {
  const tagged = cases.map((c) => ({ pair: { expected: c.expected, predicted: c.predicted }, lang: languagesOf(c) }));
  const slice = (name: string, keep: (l: LanguageOf) => boolean) => {
    const pairs = tagged.filter((t) => keep(t.lang)).map((t) => t.pair);
    return pairs.length === 0 ? [] : [sliceFigures(name, pairs)];
  };
  return [
    ...slice('message en', (l) => l.message === 'en'),
    ...slice('message zh', (l) => l.message === 'zh'),
    ...slice('same language', (l) => !l.cross),
    ...slice('cross-language', (l) => l.cross),
    ...slice('cross en goals → zh message', (l) => l.cross && l.goals === 'en'),
    ...slice('cross zh goals → en message', (l) => l.cross && l.goals === 'zh'),
  ];
}

// ---- Report ------------------------------------------------------------------------------------------

/** The harm section of the evaluation report. */
export interface HarmReport {
  harm: Harm;
  cost: Cost;
  slices: SliceFigures[];
}

export function harmReport(cases: LabelledCase[]): HarmReport {
  return { harm: harmOf(cases), cost: costOf(cases), slices: languageSlices(cases) };
}

const fixed = (x: number, digits = 3) => x.toFixed(digits);
const percent = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The harm section as text: state-changing errors, the cost-weighted score and the language slices. */
export function formatHarm(report: HarmReport): string {
  const { harm, cost } = report;
  const slices = new Table({
    head: ['slice', 'cases', 'accuracy', 'macro-F1', 'conflict F1', 'state-changing', 'cost score'],
    colAligns: ['left', 'right', 'right', 'right', 'right', 'right', 'right'],
    style: { head: [], border: [], compact: true },
  });
  slices.push(
    ...report.slices.map((s) => [
      s.name,
      s.total,
      `${fixed(s.accuracy)} (${s.correct})`,
      fixed(s.macroF1),
      s.conflictF1 === null ? '-' : fixed(s.conflictF1),
      s.stateChanging,
      fixed(s.costScore),
    ]),
  );
  return [
    `State-changing errors: ${harm.stateChanging}/${harm.total} (${percent(harm.rate)})`,
    `  changed state that should have stayed (expected continue/conflict/uncertain, predicted new-phase/out-of-scope): ${harm.spurious}`,
    `  kept state that should have changed (expected new-phase/out-of-scope, predicted continue/conflict/uncertain): ${harm.missed}` +
      ` (${harm.missedToUncertain} of them uncertain)`,
    `  new-phase and out-of-scope swapped: ${harm.swapped}`,
    `Cost-weighted score: ${fixed(cost.score)} (mean cost ${fixed(cost.mean)} per case on a 0-${MAX_COST} scale; see COST in cli/eval-metrics.ts)`,
    '',
    'Slices (language detected from the text: CJK share of letters)',
    slices.toString(),
  ].join('\n');
}

/** The harm section for `--json`. */
export function harmJson(report: HarmReport): unknown {
  const round = (x: number) => Math.round(x * 1e4) / 1e4;
  return {
    stateChanging: { ...report.harm, rate: round(report.harm.rate) },
    cost: { total: report.cost.total, mean: round(report.cost.mean), score: round(report.cost.score), matrix: COST },
    slices: report.slices.map((s) => ({
      ...s,
      accuracy: round(s.accuracy),
      macroF1: round(s.macroF1),
      conflictF1: s.conflictF1 === null ? null : round(s.conflictF1),
      costScore: round(s.costScore),
    })),
  };
}
