/**
 * The relevance evaluation behind `npm run eval` and `harness eval`: runs labelled cases through the
 * configured relevance role and the decision table, reports a confusion matrix, per-decision
 * precision/recall/F1, accuracy and macro-F1, and calibrates the high/low thresholds by grid search.
 * Everything but `runEval` is pure or takes its dependencies as arguments.
 */
import { isAbsolute, relative } from 'node:path';
import Table from 'cli-table3';
import { Command, Option } from 'commander';
import type { RoleModels } from '../models/roles.js';
import type { RelevanceScores } from '../contract/relevance.js';
import { decide } from '../workflows/understanding/decide.js';
import { DEFAULT_THRESHOLDS, Thresholds } from '../contract/messages.js';
import { DEFAULT_CASES_FILE, EvalInputError, loadCases, type EvalCase } from './eval-cases.js';
import {
  EXPECTED,
  PREDICTED,
  computeMetrics,
  harmReport,
  languagesOf,
  harmJson,
  formatHarm,
  type Expected,
  type HarmReport,
  type Metrics,
  type Predicted,
} from './eval-metrics.js';
import { positiveInt, unitInterval } from './options.js';
import { nameInErrors, runProgram, type RunIO } from './run.js';

export { EXPECTED, PREDICTED, computeMetrics };
export type { Expected, LabelMetrics, Metrics, Predicted } from './eval-metrics.js';

export { DEFAULT_THRESHOLDS };

/** Scores one case; throwing means the relevance call failed. */
export type Scorer = (c: EvalCase) => Promise<RelevanceScores>;

export interface ScoredCase {
  case: EvalCase;
  /** `null` when the relevance call failed. */
  scores: RelevanceScores | null;
  error: string | null;
  predicted: Predicted;
}

/** The decision for one case's scores, exactly as the workflow would take it (never a first task). */
export function predict(scores: RelevanceScores | null, error: string | null, thresholds: Thresholds): Predicted {
  const outcome = decide({
    firstTask: false,
    relevance: scores ? { ok: true, scores } : { ok: false, reason: error ?? 'relevance failed' },
    thresholds,
  });
  // `initialize` needs firstTask: true, which the evaluation never passes.
  return outcome.decision === 'initialize' ? 'degraded' : outcome.decision;
}

/** Runs every case through the scorer and the decision table, `concurrency` cases at a time. */
export async function evaluate(
  cases: EvalCase[],
  scorer: Scorer,
  thresholds: Thresholds,
  concurrency = 4,
): Promise<ScoredCase[]> {
  const results: ScoredCase[] = new Array<ScoredCase>(cases.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < cases.length; i = next++) {
      const c = cases[i] as EvalCase;
      let scores: RelevanceScores | null = null;
      let error: string | null = null;
      try {
        scores = await scorer(c);
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      results[i] = { case: c, scores, error, predicted: predict(scores, error, thresholds) };
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, cases.length)) }, worker));
  return results;
}

/** Re-decides already scored cases under other thresholds (no new relevance calls). */
export function redecide(scored: ScoredCase[], thresholds: Thresholds): ScoredCase[] {
  return scored.map((s) => ({ ...s, predicted: predict(s.scores, s.error, thresholds) }));
}

export function metricsOf(scored: ScoredCase[]): Metrics {
  return computeMetrics(scored.map((s) => ({ expected: s.case.expected, predicted: s.predicted })));
}

/** Always predicting the most frequent expected label: the floor any scorer has to beat. */
export function majorityBaseline(cases: EvalCase[]): { label: Expected; metrics: Metrics } {
  const counts = EXPECTED.map((label) => ({ label, n: cases.filter((c) => c.expected === label).length }));
  const label = counts.reduce((best, c) => (c.n > best.n ? c : best)).label;
  return { label, metrics: computeMetrics(cases.map((c) => ({ expected: c.expected, predicted: label }))) };
}

export interface Calibration extends Thresholds {
  macroF1: number;
  accuracy: number;
  step: number;
  /** How many (low, high) pairs were tried. */
  tried: number;
}

/**
 * Grid search for the thresholds that maximise macro-F1 on already scored cases: every pair
 * low < high with both on the grid 0, step, 2·step, …, 1. Ties go to the higher accuracy, then to
 * the pair closest to `prefer` (the thresholds in use, so an already optimal setting is kept),
 * then to the lower low and lower high.
 */
export function calibrate(scored: ScoredCase[], step = 0.05, prefer: Thresholds = DEFAULT_THRESHOLDS): Calibration {
  if (!(step > 0 && step <= 0.5)) throw new EvalInputError('calibration step must be in (0, 0.5]');
  const points = Math.round(1 / step);
  const grid = Array.from({ length: points + 1 }, (_, i) => Math.min(1, Math.round(i * step * 1e6) / 1e6));
  let best: Calibration | undefined;
  let tried = 0;
  const distance = (t: Thresholds) => Math.abs(t.high - prefer.high) + Math.abs(t.low - prefer.low);
  for (const low of grid) {
    for (const high of grid) {
      if (!(low < high)) continue;
      tried++;
      const metrics = metricsOf(redecide(scored, { high, low }));
      const candidate = { high, low, macroF1: metrics.macroF1, accuracy: metrics.accuracy, step, tried: 0 };
      if (!best || better(candidate, best, distance)) best = candidate;
    }
  }
  if (!best) throw new EvalInputError('calibration grid is empty');
  return { ...best, tried };
}

const EPSILON = 1e-12;

function better(a: Calibration, b: Calibration, distance: (t: Thresholds) => number): boolean {
  if (Math.abs(a.macroF1 - b.macroF1) > EPSILON) return a.macroF1 > b.macroF1;
  if (Math.abs(a.accuracy - b.accuracy) > EPSILON) return a.accuracy > b.accuracy;
  const da = distance(a);
  const db = distance(b);
  if (Math.abs(da - db) > EPSILON) return da < db;
  return a.low !== b.low ? a.low < b.low : a.high < b.high;
}

export interface EvalReport {
  file: string;
  provider: string;
  thresholds: Thresholds;
  metrics: Metrics;
  baseline: { label: Expected; accuracy: number; macroF1: number };
  calibration: Calibration;
  /** Metrics at the calibrated thresholds. */
  calibrated: Metrics;
  /** State-changing errors, cost and language slices at `thresholds`. */
  harm: HarmReport;
  cases: ScoredCase[];
}

export function buildReport(
  file: string,
  provider: string,
  thresholds: Thresholds,
  scored: ScoredCase[],
  step = 0.05,
): EvalReport {
  const calibration = calibrate(scored, step, thresholds);
  const baseline = majorityBaseline(scored.map((s) => s.case));
  return {
    file,
    provider,
    thresholds,
    metrics: metricsOf(scored),
    baseline: { label: baseline.label, accuracy: baseline.metrics.accuracy, macroF1: baseline.metrics.macroF1 },
    calibration,
    calibrated: metricsOf(redecide(scored, calibration)),
    harm: harmReport(scored.map((s) => ({ ...s.case, predicted: s.predicted }))),
    cases: scored,
  };
}

const fixed = (x: number, digits = 3) => x.toFixed(digits);

function table(head: string[], rows: Array<Array<string | number>>, align: Array<'left' | 'right'>): string {
  // No colours: the report is read in terminals, files and CI logs alike.
  const t = new Table({ head, colAligns: align, style: { head: [], border: [], compact: true } });
  t.push(...rows);
  return t.toString();
}

/** The human-readable report: matrix, per-decision metrics, totals and calibration. */
export function formatReport(report: EvalReport): string {
  const { metrics, calibration, calibrated, baseline } = report;
  const matrix = table(
    ['expected \\ predicted', ...PREDICTED, 'total'],
    EXPECTED.map((e) => [
      e,
      ...PREDICTED.map((p) => metrics.confusion[e][p]),
      PREDICTED.reduce((n, p) => n + metrics.confusion[e][p], 0),
    ]),
    ['left', ...PREDICTED.map(() => 'right' as const), 'right'],
  );
  const perLabel = table(
    ['decision', 'precision', 'recall', 'F1', 'support', 'predicted'],
    metrics.perLabel.map((m) => [m.label, fixed(m.precision), fixed(m.recall), fixed(m.f1), m.support, m.predicted]),
    ['left', 'right', 'right', 'right', 'right', 'right'],
  );
  const lines = [
    `Relevance evaluation: ${report.file} (${metrics.total} cases)`,
    `Relevance role: ${report.provider}; thresholds high ${report.thresholds.high} / low ${report.thresholds.low}`,
    '',
    'Confusion matrix (rows: expected, columns: predicted)',
    matrix,
    '',
    'Per decision',
    perLabel,
    '',
    `Accuracy: ${fixed(metrics.accuracy)} (${metrics.correct}/${metrics.total})`,
    `Macro-F1: ${fixed(metrics.macroF1)}`,
    `Majority baseline (always ${baseline.label}): accuracy ${fixed(baseline.accuracy)}, macro-F1 ${fixed(baseline.macroF1)}`,
  ];
  lines.push('', formatHarm(report.harm));
  if (metrics.degraded > 0) {
    const first = report.cases.find((c) => c.error !== null);
    lines.push(`Degraded (relevance call failed): ${metrics.degraded}${first ? `; first error: ${first.error}` : ''}`);
  }
  lines.push(
    '',
    `Calibration (grid step ${calibration.step}, ${calibration.tried} pairs with low < high, maximising macro-F1):`,
    `  best thresholds: high ${calibration.high} / low ${calibration.low}` +
      ` -> macro-F1 ${fixed(calibration.macroF1)}, accuracy ${fixed(calibrated.accuracy)}`,
  );
  return `${lines.join('\n')}\n`;
}

/** The `--json` report: the same figures plus each case's scores and predicted decision. */
export function jsonReport(report: EvalReport): unknown {
  const round = (x: number) => Math.round(x * 1e4) / 1e4;
  const metricsJson = (m: Metrics) => ({
    total: m.total,
    correct: m.correct,
    accuracy: round(m.accuracy),
    macroF1: round(m.macroF1),
    degraded: m.degraded,
    perDecision: Object.fromEntries(
      m.perLabel.map((l) => [
        l.label,
        {
          precision: round(l.precision),
          recall: round(l.recall),
          f1: round(l.f1),
          support: l.support,
          predicted: l.predicted,
        },
      ]),
    ),
    confusion: m.confusion,
  });
  return {
    file: report.file,
    provider: report.provider,
    thresholds: report.thresholds,
    ...metricsJson(report.metrics),
    baseline: {
      label: report.baseline.label,
      accuracy: round(report.baseline.accuracy),
      macroF1: round(report.baseline.macroF1),
    },
    calibration: {
      high: report.calibration.high,
      low: report.calibration.low,
      step: report.calibration.step,
      tried: report.calibration.tried,
      macroF1: round(report.calibration.macroF1),
      accuracy: round(report.calibrated.accuracy),
    },
    harm: harmJson(report.harm),
    cases: report.cases.map((s, index) => ({
      ...(s.case.id ? { id: s.case.id } : { line: index + 1 }),
      expected: s.case.expected,
      predicted: s.predicted,
      lang: languagesOf(s.case),
      scores: s.scores ? { phase: s.scores.phaseRelevance, session: s.scores.sessionRelevance } : null,
      ...(s.error !== null ? { error: s.error } : {}),
    })),
  };
}

export type EvalIO = RunIO;

export interface EvalDeps {
  /** The role models to evaluate; by default built from the environment like the worker's. */
  models?: RoleModels;
  env?: NodeJS.ProcessEnv;
  /** Per-call budget of a relevance call, in milliseconds. */
  timeoutMs?: number;
}

interface EvalOptions {
  file: string[];
  json?: boolean;
  high: number;
  low: number;
  step: number;
  concurrency: number;
}

/** The default case files, as one array object so that the first --file can recognise and replace it. */
const DEFAULT_FILES = [DEFAULT_CASES_FILE];

/**
 * `harness eval [--file PATH]... [--json] [--high N] [--low N] [--step N] [--concurrency N]` (and
 * `npm run eval`): evaluates the configured relevance role on case files, read as one set.
 */
export function evalCommand(io: EvalIO, deps: EvalDeps = {}): Command {
  const command = new Command('eval')
    .description(
      'evaluate the relevance role and decision table on labelled cases: confusion matrix, per-decision ' +
        'precision/recall/F1, accuracy, macro-F1, and the calibrated high/low thresholds',
    )
    .addOption(
      new Option(
        '--file <path>',
        'JSON lines of {sessionGoal, phaseGoal, message, expected}; repeat it to read several files as one set',
      )
        // The first --file replaces the default, later ones add to it.
        .argParser((value: string, previous: string[]) => (previous === DEFAULT_FILES ? [value] : [...previous, value]))
        .default(DEFAULT_FILES, 'eval/cases.jsonl'),
    )
    .option('--json', 'print the report and every case as JSON')
    .addOption(new Option('--high <n>', 'high threshold').argParser(unitInterval).default(DEFAULT_THRESHOLDS.high))
    .addOption(new Option('--low <n>', 'low threshold').argParser(unitInterval).default(DEFAULT_THRESHOLDS.low))
    .addOption(new Option('--step <n>', 'calibration grid step, in (0, 0.5]').argParser(unitInterval).default(0.05))
    .addOption(new Option('--concurrency <n>', 'relevance calls in flight').argParser(positiveInt).default(4))
    .allowExcessArguments(false)
    .action((options: EvalOptions) => evaluateCommand(options, io, deps));
  return nameInErrors(command);
}

/** Runs `harness eval` with `argv` and resolves with its exit code; never calls process.exit. */
export function runEval(argv: string[], io: EvalIO, deps: EvalDeps = {}): Promise<number> {
  return runProgram(evalCommand(io, deps), argv, io);
}

async function evaluateCommand(options: EvalOptions, io: EvalIO, deps: EvalDeps): Promise<void> {
  const thresholds = Thresholds.safeParse({ high: options.high, low: options.low });
  if (!thresholds.success) throw new EvalInputError('--low must be below --high');
  if (options.step > 0.5 || options.step <= 0) throw new EvalInputError('--step must be in (0, 0.5]');
  const cases = (await Promise.all(options.file.map(loadCases))).flat();
  const models = deps.models ?? (await modelsFromEnvironment(deps.env ?? process.env));
  const provider = models.describe().relevance;
  if (provider === 'not configured') {
    throw new EvalInputError(
      'no relevance model configured: set HARNESS_RELEVANCE_MODEL or HARNESS_MODEL, or unset OPENAI_* for the local provider',
    );
  }
  const timeoutMs = deps.timeoutMs ?? 30_000;
  const scorer: Scorer = (c) =>
    models.relevance(
      { message: { text: c.message, resources: [] }, phaseGoal: c.phaseGoal, sessionGoal: c.sessionGoal },
      { timeoutMs, signal: AbortSignal.timeout(timeoutMs) },
    );
  const scored = await evaluate(cases, scorer, thresholds.data, options.concurrency);
  const shown = options.file
    .map((file) => {
      const fromCwd = relative(process.cwd(), file);
      return fromCwd && !fromCwd.startsWith('..') && !isAbsolute(fromCwd) ? fromCwd : file;
    })
    .join(' + ');
  const report = buildReport(shown, provider, thresholds.data, scored, options.step);
  io.stdout.write(options.json ? `${JSON.stringify(jsonReport(report), null, 2)}\n` : formatReport(report));
}

/** The worker's own model factory over the worker's configuration, loaded only when needed. */
async function modelsFromEnvironment(env: NodeJS.ProcessEnv): Promise<RoleModels> {
  const [{ loadConfig }, { createModels }] = await Promise.all([
    import('../worker/config.js'),
    import('../worker/create-worker.js'),
  ]);
  return createModels(loadConfig(env).models);
}
