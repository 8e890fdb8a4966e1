/**
 * Pathological inputs (issue 24, item 6): messages at the size limit built to be slow to analyse,
 * and a model answer built to make the code-fence parse backtrack. Before the fix one such message
 * held the worker's main thread for seconds. Measured on the local provider as the worker builds it
 * (a pool of scoring threads, HARNESS_LOCAL_THREADS's default):
 *
 * - each pathological input's decision time when it runs alone (target p99 < 50 ms);
 * - an ordinary message's relevance latency alone, then while the pathological inputs are scored
 *   on the same provider, as another Session's input would be (same run, same pool);
 * - the main thread's longest event-loop stall meanwhile (monitorEventLoopDelay), which is what
 *   would delay workflow tasks and every other activity;
 * - parseModelJson on a fence followed by 2,000 and by 16,000 spaces.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { LocalModels } from '../models/local-models.js';
import { parseModelJson } from '../models/model-errors.js';
import { RelevanceScores } from '../contract/relevance.js';
import { defaultScoringThreads } from '../models/local/scoring-pool.js';
import { MAX_TEXT_CHARS } from '../contract/messages.js';
import type { RelevanceRequest } from '../contract/relevance.js';
import { percentile, round } from './stats.js';

/** The finding's three inputs and the others that defeat one bound or another, all at the size limit. */
export const PATHOLOGICAL_INPUTS: Record<string, string> = {
  'one letter': 'a'.repeat(MAX_TEXT_CHARS),
  punctuation: '.'.repeat(MAX_TEXT_CHARS),
  spaces: ' '.repeat(MAX_TEXT_CHARS - 1) + 'x',
  'two letters alternating': 'ab'.repeat(MAX_TEXT_CHARS / 2),
  'one-letter words': 'a b '.repeat(MAX_TEXT_CHARS / 4),
  'Chinese, one character': '我'.repeat(MAX_TEXT_CHARS),
  'Chinese words and spaces': '我 '.repeat(MAX_TEXT_CHARS / 2),
};

const GOALS = { phaseGoal: 'Write the quarterly sales report', sessionGoal: 'Prepare the Q3 finance report' };
const ORDINARY = 'Add a chart of revenue by region to the report';
const CALL = { timeoutMs: 60_000 };
const ATTACKING_SESSIONS = 3;

export interface PathologicalResult {
  threads: number;
  rounds: number;
  /** Decision time of each pathological input alone, over `rounds` runs. */
  inputs: Array<{ name: string; p50Ms: number; p99Ms: number; maxMs: number }>;
  /** All pathological decisions together. */
  p99Ms: number;
  ordinaryAlone: { p50Ms: number; p99Ms: number };
  ordinaryDuringPathological: { p50Ms: number; p99Ms: number };
  /** The main thread's longest event-loop stall while the pathological inputs were being scored. */
  mainLoopMaxStallMs: number;
  /** parseModelJson on a fence followed by n spaces. */
  fence: Array<{ spaces: number; ms: number }>;
}

const request = (text: string): RelevanceRequest => ({ message: { text, resources: [] }, ...GOALS });

async function timed(work: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await work();
  return performance.now() - t0;
}

const stats = (samples: number[]) => ({ p50Ms: round(percentile(samples, 50)), p99Ms: round(percentile(samples, 99)) });

/** Runs the scenario; `rounds` runs of each input. */
export async function pathological(rounds: number): Promise<PathologicalResult> {
  const threads = defaultScoringThreads();
  const models = new LocalModels({ threads });
  try {
    // Start-up (models loading in each thread) is paid once per worker, not per message.
    await Promise.all(Array.from({ length: threads }, () => models.relevance(request('warm up'), CALL)));

    const inputs: PathologicalResult['inputs'] = [];
    const all: number[] = [];
    for (const [name, text] of Object.entries(PATHOLOGICAL_INPUTS)) {
      const samples: number[] = [];
      for (let i = 0; i < rounds; i++) samples.push(await timed(() => models.relevance(request(text), CALL)));
      all.push(...samples);
      inputs.push({ name, ...stats(samples), maxMs: round(Math.max(...samples)) });
    }

    const ordinaryAlone: number[] = [];
    for (let i = 0; i < rounds * 4; i++)
      ordinaryAlone.push(await timed(() => models.relevance(request(ORDINARY), CALL)));

    // Another Session's ordinary inputs, one after the other, while three Sessions send every
    // pathological input `rounds` times, each Session one message at a time (as in the finding).
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    await new Promise((resolve) => setTimeout(resolve, 20));
    let flooding = true;
    const flood = Promise.all(
      Array.from({ length: ATTACKING_SESSIONS }, async () => {
        for (let i = 0; i < rounds; i++) {
          for (const text of Object.values(PATHOLOGICAL_INPUTS)) await models.relevance(request(text), CALL);
        }
      }),
    ).finally(() => (flooding = false));
    const ordinaryDuring: number[] = [];
    while (flooding) ordinaryDuring.push(await timed(() => models.relevance(request(ORDINARY), CALL)));
    await flood;
    await new Promise((resolve) => setTimeout(resolve, 20));
    delay.disable();

    const fence = [2_000, MAX_TEXT_CHARS].map((spaces) => {
      const answer = '```' + ' '.repeat(spaces);
      const t0 = performance.now();
      try {
        parseModelJson(answer, RelevanceScores, 'relevance');
      } catch {
        // Not JSON, as expected: the time to say so is the figure.
      }
      return { spaces, ms: round(performance.now() - t0) };
    });

    return {
      threads,
      rounds,
      inputs,
      p99Ms: round(percentile(all, 99)),
      ordinaryAlone: stats(ordinaryAlone),
      ordinaryDuringPathological: stats(ordinaryDuring),
      mainLoopMaxStallMs: round(delay.max / 1e6),
      fence,
    };
  } finally {
    await models.close();
  }
}
