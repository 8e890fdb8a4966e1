/**
 * The dev stack's own speed under two SQLite settings of `temporal server start-dev`: the SQLite
 * defaults (rollback journal, synchronous=FULL) and WAL with synchronous=NORMAL. Two dev servers, one
 * after the other, each with its own database file; the same sequential Session inputs on each.
 */
import { performance } from 'node:perf_hooks';
import { FLAVORS, TEXT, close, decided, send, start } from './driver.js';
import { startStack } from './stack.js';
import { median, percentile, round } from './stats.js';

export interface PragmaRun {
  pragmas: Record<string, string>;
  /** Server start until the worker is polling. */
  startMs: number;
  p50Ms: number;
  p95Ms: number;
}

export interface PragmaResult {
  inputs: number;
  defaults: PragmaRun;
  wal: PragmaRun;
  /** WAL p50 over defaults p50: below 1 means WAL is faster. */
  ratioP50: number;
}

async function measure(pragmas: Record<string, string>, inputs: number): Promise<PragmaRun> {
  const t0 = performance.now();
  const stack = await startStack({ sqlitePragmas: pragmas });
  const startMs = performance.now() - t0;
  try {
    const d = await start(stack.client, stack.taskQueue, FLAVORS.session);
    await send(d, TEXT.goal);
    await decided(d, await send(d, TEXT.newPhase));
    const samples: number[] = [];
    for (let i = 0; i < inputs; i++) {
      const t = performance.now();
      await decided(d, await send(d, TEXT.continue));
      samples.push(performance.now() - t);
    }
    await close(d);
    return { pragmas, startMs: round(startMs), p50Ms: round(median(samples)), p95Ms: round(percentile(samples, 95)) };
  } finally {
    await stack.stop();
  }
}

export async function pragmas(inputs: number): Promise<PragmaResult> {
  const defaults = await measure({}, inputs);
  const wal = await measure({ journal_mode: 'wal', synchronous: 'normal' }, inputs);
  return { inputs, defaults, wal, ratioP50: round(wal.p50Ms / defaults.p50Ms) };
}
