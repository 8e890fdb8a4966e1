/**
 * `npm run train:relevance`: fits the local scorer's trained conflict check
 * (models/local/relevance-model.ts) and writes its weights to models/local/relevance-model.json.
 *
 * Training data: the development files only (TRAINING_FILES). The held-out files
 * (eval/holdout*.jsonl) are never read here. The model is a multinomial logistic regression with
 * class-balanced weights and L2, fitted by full-batch gradient descent from zeros with a fixed step
 * and iteration count, so the same files always give the same weights.
 *
 * The L2 strength, the in-sample weight, the conflict gate and the score gain are chosen by 5-fold
 * cross-validation grouped by session goal (a scenario's messages never sit on both sides of a
 * split). The objective is the accuracy of the rules with the model's conflict check
 * (`combineScores`) on the dev-N files. The figures of every grid point are printed, and so are
 * the rules alone and the model alone; `--check` refits and fails when the committed file differs,
 * `--misses` lists the cross-validated misses.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseCases, type EvalCase } from '../cli/eval-cases.js';
import { computeMetrics, harmOf, type Pair } from '../cli/eval-metrics.js';
import type { RelevanceScores } from '../contract/relevance.js';
import { decide } from '../workflows/understanding/decide.js';
import { DEFAULT_THRESHOLDS } from '../contract/messages.js';
import { gatherEvidence, judgeByRules } from '../models/local/relevance.js';
import {
  CLASSES,
  classify,
  modelFeatures,
  combineScores,
  scoresFromProbabilities,
  gateConflict,
  modelScores,
  type ConflictGate,
  type RelevanceModel,
} from '../models/local/relevance-model.js';

const TRAINING_FILES = ['cases.jsonl', 'dev.jsonl', 'dev-2.jsonl', 'dev-3.jsonl', 'dev-4.jsonl'];
/**
 * The rules were written while reading cases.jsonl and dev.jsonl, so there they are right far more
 * often than on new text; weighing those files less keeps the model from learning to trust the
 * rules' verdict more than it deserves. Chosen by cross-validation (see the grid).
 */
const IN_SAMPLE_FILES = new Set(['cases.jsonl', 'dev.jsonl']);
const IN_SAMPLE_WEIGHTS = [1, 0.5];
const OUTPUT = fileURLToPath(new URL('../models/local/relevance-model.json', import.meta.url));
const FOLDS = 5;
const LAMBDAS = [0.003, 0.01, 0.03];
const GAINS = [1.25, 1.5, 2];
/**
 * A conflict needs evidence in the message (eval/README.md, rule 4), so the grid leaves out the
 * `none` gate. Cross-validation here prefers it by about half a point, but on held-out text a
 * model without the gate read plain refinements in Sessions with a constraining goal as conflicts
 * (eval/README.md, the first reading of the trained model).
 */
const GATES: ConflictGate[] = ['strict', 'loose'];
const ITERATIONS = 400;
const STEP = 0.5;
const MOMENTUM = 0.9;

interface Row {
  file: string;
  c: EvalCase;
  x: Record<string, number>;
  rules: RelevanceScores;
}

function load(): Row[] {
  return TRAINING_FILES.flatMap((file) => {
    const path = fileURLToPath(new URL(`../eval/${file}`, import.meta.url));
    return parseCases(readFileSync(path, 'utf8'), file).map((c) => {
      const input = { message: c.message, phaseGoal: c.phaseGoal, sessionGoal: c.sessionGoal };
      const evidence = gatherEvidence(input);
      const rules = judgeByRules(input, evidence);
      return { file, c, x: modelFeatures(evidence, rules), rules };
    });
  });
}

/**
 * Fits softmax regression on standardised features by full-batch gradient descent with momentum,
 * from zeros, for a fixed number of iterations: deterministic.
 */
function fit(
  rows: Row[],
  names: string[],
  lambda: number,
  inSampleWeight: number,
): Omit<RelevanceModel, 'version' | 'gain' | 'conflictGate'> {
  const D = names.length;
  const K = CLASSES.length;
  const N = rows.length;
  const X = rows.map((r) => names.map((n) => r.x[n] ?? 0));
  const mean = names.map((_, j) => X.reduce((s, x) => s + (x[j] ?? 0), 0) / N);
  const scale = names.map((_, j) => {
    const v = X.reduce((s, x) => s + ((x[j] ?? 0) - (mean[j] ?? 0)) ** 2, 0) / N;
    return v > 1e-12 ? Math.sqrt(v) : 1;
  });
  const Z = new Float64Array(N * D);
  X.forEach((x, i) => x.forEach((v, j) => (Z[i * D + j] = (v - (mean[j] ?? 0)) / (scale[j] ?? 1))));
  const y = rows.map((r) => CLASSES.indexOf(r.c.expected));
  const counts = CLASSES.map((_, k) => y.filter((v) => v === k).length);
  const raw = y.map(
    (k, i) => (N / (K * Math.max(1, counts[k] ?? 1))) * (IN_SAMPLE_FILES.has(rows[i]?.file ?? '') ? inSampleWeight : 1),
  );
  const total = raw.reduce((a, c) => a + c, 0);
  const c = Float64Array.from(raw, (v) => v / total);
  // Parameters: K rows of D weights followed by K biases.
  const P = K * D + K;
  const theta = new Float64Array(P);
  const velocity = new Float64Array(P);
  const grad = new Float64Array(P);
  const logits = new Float64Array(K);
  for (let it = 0; it < ITERATIONS; it++) {
    grad.fill(0);
    for (let i = 0; i < N; i++) {
      let max = -Infinity;
      for (let k = 0; k < K; k++) {
        let s = theta[K * D + k] ?? 0;
        for (let j = 0; j < D; j++) s += (theta[k * D + j] ?? 0) * (Z[i * D + j] ?? 0);
        logits[k] = s;
        if (s > max) max = s;
      }
      let sum = 0;
      for (let k = 0; k < K; k++) {
        const e = Math.exp((logits[k] ?? 0) - max);
        logits[k] = e;
        sum += e;
      }
      for (let k = 0; k < K; k++) {
        const d = (c[i] ?? 0) * ((logits[k] ?? 0) / sum - (y[i] === k ? 1 : 0));
        grad[K * D + k] = (grad[K * D + k] ?? 0) + d;
        for (let j = 0; j < D; j++) grad[k * D + j] = (grad[k * D + j] ?? 0) + d * (Z[i * D + j] ?? 0);
      }
    }
    for (let q = 0; q < P; q++) {
      const g = (grad[q] ?? 0) + (q < K * D ? lambda * (theta[q] ?? 0) : 0);
      velocity[q] = MOMENTUM * (velocity[q] ?? 0) - STEP * g;
      theta[q] = (theta[q] ?? 0) + (velocity[q] ?? 0);
    }
  }
  const r6 = (v: number) => Math.round(v * 1e6) / 1e6;
  return {
    features: names,
    classes: [...CLASSES],
    mean: mean.map(r6),
    scale: scale.map(r6),
    weights: Array.from({ length: K }, (_, k) => Array.from(theta.subarray(k * D, (k + 1) * D), r6)),
    bias: Array.from(theta.subarray(K * D), r6),
  };
}

function decision(scores: RelevanceScores) {
  const d = decide({ firstTask: false, relevance: { ok: true, scores }, thresholds: DEFAULT_THRESHOLDS }).decision;
  return d === 'initialize' ? 'degraded' : d;
}

/** A stable fold for a scenario: FNV-1a of its session goal. */
function foldOf(group: string): number {
  let h = 0x811c9dc5;
  for (const ch of group) h = Math.imul(h ^ (ch.codePointAt(0) ?? 0), 0x01000193) >>> 0;
  return h % FOLDS;
}

interface Figures {
  accuracy: number;
  macroF1: number;
  conflictF1: number;
  stateChanging: number;
  rate: number;
  total: number;
}

function figures(pairs: Pair[]): Figures {
  const m = computeMetrics(pairs);
  const h = harmOf(pairs);
  return {
    accuracy: m.accuracy,
    macroF1: m.macroF1,
    conflictF1: m.perLabel.find((l) => l.label === 'conflict')?.f1 ?? 0,
    stateChanging: h.stateChanging,
    rate: h.rate,
    total: pairs.length,
  };
}

const show = (f: Figures) =>
  `acc ${f.accuracy.toFixed(3)}  macro-F1 ${f.macroF1.toFixed(3)}  conflict F1 ${f.conflictF1.toFixed(3)}  ` +
  `state-changing ${f.stateChanging}/${f.total} (${(100 * f.rate).toFixed(1)}%)`;
const brief = (f: Figures) =>
  `${f.accuracy.toFixed(3)} ${f.macroF1.toFixed(3)} ${f.conflictF1.toFixed(3)} ${(100 * f.rate).toFixed(1).padStart(4)}%`;

/** One line per slice (verbose), or one line for all slices: accuracy, macro-F1, conflict F1, state-changing. */
function bySlice(rows: Row[], predicted: string[], label: string, verbose = true): Figures {
  const all = rows.map((r, i) => ({ expected: r.c.expected, predicted: predicted[i] }) as Pair);
  const total = figures(all);
  const slices = TRAINING_FILES.map((file) => figures(all.filter((_, i) => rows[i]?.file === file)));
  if (verbose) {
    console.log(`  ${label}`);
    console.log(`    ${'all'.padEnd(12)} ${show(total)}`);
    TRAINING_FILES.forEach((file, k) => console.log(`    ${file.padEnd(12)} ${show(slices[k] as Figures)}`));
  } else console.log(`  ${label.padEnd(24)} ${[total, ...slices].map(brief).join(' | ')}`);
  return total;
}

function main(): void {
  const check = process.argv.includes('--check');
  const misses = process.argv.includes('--misses');
  const rows = load();
  const names = Object.keys(rows[0]?.x ?? {});
  const folds = rows.map((r) => foldOf(r.c.sessionGoal));
  console.log(
    `${rows.length} cases from ${TRAINING_FILES.join(', ')}; ${names.length} features; ${FOLDS} folds by session goal`,
  );
  const rulesScores = rows.map((r) => r.rules);
  bySlice(rows, rulesScores.map(decision), 'rules alone (no training)');

  console.log(
    `  cross-validated grid, rules with the model's conflict check: accuracy macro-F1 conflict-F1 state-changing for ${['all', ...TRAINING_FILES].join(' | ')}`,
  );
  let best: { lambda: number; weight: number; gain: number; gate: ConflictGate; objective: number } | undefined;
  let bestPredicted: { combined: string[]; alone: string[]; p: number[][] } | undefined;
  // The objective is read on the files the rules were not written on: on cases.jsonl and dev.jsonl
  // the rules' verdict is in-sample, and a model that trusts it would look better than it is.
  const fresh = rows.map((r) => !IN_SAMPLE_FILES.has(r.file));
  const freshPairs = (predicted: string[]) =>
    rows.flatMap((r, i) => (fresh[i] ? [{ expected: r.c.expected, predicted: predicted[i] } as Pair] : []));
  for (const lambda of LAMBDAS) {
    for (const weight of IN_SAMPLE_WEIGHTS) {
      const probs: number[][] = new Array<number[]>(rows.length);
      for (let k = 0; k < FOLDS; k++) {
        const model = fit(
          rows.filter((_, i) => folds[i] !== k),
          names,
          lambda,
          weight,
        );
        rows.forEach((r, i) => {
          if (folds[i] === k) probs[i] = classify({ ...model, version: '', gain: 1, conflictGate: 'none' }, r.x);
        });
      }
      for (const gate of GATES) {
        const gated = probs.map((p, i) => gateConflict(p, rows[i]?.x ?? {}, gate));
        for (const gain of GAINS) {
          const alone = gated.map((p) => scoresFromProbabilities(p, gain));
          const combined = alone.map((m, i) => decision(combineScores(rulesScores[i] as RelevanceScores, m)));
          bySlice(rows, combined, `l ${lambda} w ${weight} ${gate} g ${gain}`, false);
          // A conflict keeps state, so the check cannot change the state-changing errors: accuracy decides.
          const objective = figures(freshPairs(combined)).accuracy;
          if (!best || objective > best.objective + 1e-12) {
            best = { lambda, weight, gain, gate, objective };
            bestPredicted = { combined, alone: alone.map(decision), p: gated };
          }
        }
      }
    }
  }
  if (!best || !bestPredicted) throw new Error('empty grid');
  const chosen = bestPredicted;
  console.log(
    `chosen: lambda ${best.lambda}, in-sample weight ${best.weight}, conflict gate ${best.gate}, gain ${best.gain}. Cross-validated on the dev-N files:`,
  );
  console.log(`  rules alone          ${show(figures(freshPairs(rulesScores.map(decision))))}`);
  console.log(`  model alone          ${show(figures(freshPairs(chosen.alone)))}`);
  console.log(`  rules + conflict     ${show(figures(freshPairs(chosen.combined)))}`);
  if (misses)
    rows.forEach((r, i) => {
      if (chosen.combined[i] !== r.c.expected)
        console.log(
          `    miss ${r.c.id ?? i}: ${r.c.expected} -> ${chosen.combined[i]} [${CLASSES.map((c, k) => `${c} ${(chosen.p[i]?.[k] ?? 0).toFixed(2)}`).join(', ')}] ${r.c.message}`,
        );
    });

  const model: RelevanceModel = {
    version: 'local/rules-conflict-check-v4',
    ...fit(rows, names, best.lambda, best.weight),
    gain: best.gain,
    conflictGate: best.gate,
  };
  const text = `${JSON.stringify(model, null, 1)}\n`;
  const fitted = rows.map((r, i) =>
    decision(combineScores(rulesScores[i] as RelevanceScores, modelScores(model, r.x).scores)),
  );
  bySlice(rows, fitted, 'fitted on all (in-sample)');
  if (check) {
    if (readFileSync(OUTPUT, 'utf8') !== text) {
      console.error(`${OUTPUT} differs from a fresh fit: run npm run train:relevance`);
      process.exitCode = 1;
    } else console.log(`${OUTPUT} matches a fresh fit`);
    return;
  }
  writeFileSync(OUTPUT, text);
  console.log(`wrote ${OUTPUT}`);
}

main();
