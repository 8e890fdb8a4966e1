/**
 * Local relevance latency: `NODE_OPTIONS=--expose-gc npx tsx bench/relevance.ts [files…]`.
 *
 * Scores every case of the eval files (by default every eval/*.jsonl; only the goals and the
 * message are read, never the labels) ROUNDS times with
 * the local scorer and prints p50, p99 and max per call. The one-off start-up (wink-nlp model,
 * jieba dictionary, the head of the word-vector file) is measured apart, on the first call: a
 * worker pays it once, not per message. One untimed round warms the JIT. The target is p99 < 5 ms.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { scoreRelevance, type RelevanceInput } from '../models/local/relevance.js';
import { warmVectors } from '../models/local/vectors.js';

const ROUNDS = 5;
const EVAL_DIR = fileURLToPath(new URL('../eval/', import.meta.url));
const DEFAULT_FILES = readdirSync(EVAL_DIR)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()
  .map((f) => `${EVAL_DIR}${f}`);

function inputs(file: string): RelevanceInput[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const c = JSON.parse(line) as RelevanceInput;
      return { message: c.message, phaseGoal: c.phaseGoal, sessionGoal: c.sessionGoal };
    });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

const files = process.argv.length > 2 ? process.argv.slice(2) : DEFAULT_FILES;
const cases = files.flatMap(inputs);
const first = cases[0];
if (!first) throw new Error('no cases');

let start = performance.now();
warmVectors();
scoreRelevance(first);
scoreRelevance({ ...first, message: '继续写安装部分' });
const startup = performance.now() - start;
// One untimed round so that the JIT has compiled the scorer before it is measured.
for (const c of cases) scoreRelevance(c);

// Collect the start-up's garbage now rather than inside a timed call (with `--expose-gc`).
(globalThis as { gc?: () => void }).gc?.();

// Wall time is what a caller waits; CPU time (this thread's user + system) is what the scorer
// costs, without the waits of a machine shared with other work.
const wall: number[] = [];
const cpu: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const c of cases) {
    const cpuStart = process.cpuUsage();
    start = performance.now();
    scoreRelevance(c);
    wall.push(performance.now() - start);
    const used = process.cpuUsage(cpuStart);
    cpu.push((used.user + used.system) / 1000);
  }
}
const ms = (x: number) => `${x.toFixed(3)} ms`;
const line = (name: string, times: number[]) => {
  times.sort((a, b) => a - b);
  return `${name}: p50 ${ms(percentile(times, 50))}  p99 ${ms(percentile(times, 99))}  max ${ms(times.at(-1) ?? 0)}`;
};
console.log(`local relevance: ${cases.length} cases × ${ROUNDS} rounds = ${wall.length} calls`);
console.log(`start-up (first call: models, dictionary, word vectors): ${startup.toFixed(0)} ms`);
console.log(line('wall', wall));
console.log(line('cpu ', cpu));
console.log(`target p99 < 5 ms (wall): ${percentile(wall, 99) < 5 ? 'met' : 'NOT met'}`);
