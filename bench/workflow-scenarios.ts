/**
 * The scenarios that run the Session and the baseline on the same server in the same run. Each takes
 * a started stack and returns plain JSON for the results file.
 */
import { performance } from 'node:perf_hooks';
import {
  FLAVORS,
  TEXT,
  allRuns,
  billableActions,
  close,
  countByType,
  decided,
  eventBytes,
  send,
  settledEvents,
  start,
  startInputBytes,
  type Driven,
  type Flavor,
  type FlavorName,
  type HistoryEvent,
} from './driver.js';
import type { Stack } from './stack.js';
import { mean, median, percentile, pool, round } from './stats.js';

const both = [FLAVORS.session, FLAVORS.baseline];

/** Start plus the two set-up inputs (initialize, new phase) that put a Session where `Continue` continues. */
async function ready(stack: Stack, flavor: Flavor, settings?: Record<string, unknown>): Promise<Driven> {
  const d = await start(stack.client, stack.taskQueue, flavor, settings);
  await send(d, TEXT.goal);
  await decided(d, await send(d, TEXT.newPhase));
  return d;
}

export interface LatencyResult {
  inputs: number;
  p50Ms: Record<FlavorName, number>;
  p95Ms: Record<FlavorName, number>;
  ratioP50: number;
  ratioP95: number;
  decisions: Record<string, number>;
}

/** Sequential `Continue` inputs, signal to decision visible in the query, the two flavors interleaved. */
export async function latency(stack: Stack, inputs: number): Promise<LatencyResult> {
  const driven = await Promise.all(both.map((f) => ready(stack, f)));
  const samples: Record<FlavorName, number[]> = { session: [], baseline: [] };
  const decisions: Record<string, number> = {};
  for (let i = 0; i < inputs; i++) {
    for (const d of driven) {
      const t0 = performance.now();
      const seen = await decided(d, await send(d, TEXT.continue));
      samples[d.flavor.name].push(performance.now() - t0);
      if (d.flavor.name === 'session') decisions[seen.decision] = (decisions[seen.decision] ?? 0) + 1;
    }
  }
  await Promise.all(driven.map((d) => close(d)));
  const p = (q: number) => ({
    session: round(percentile(samples.session, q)),
    baseline: round(percentile(samples.baseline, q)),
  });
  const p50Ms = p(50);
  const p95Ms = p(95);
  return {
    inputs,
    p50Ms,
    p95Ms,
    ratioP50: round(median(samples.session) / median(samples.baseline)),
    ratioP95: round(percentile(samples.session, 95) / percentile(samples.baseline, 95)),
    decisions,
  };
}

export interface KindCost {
  samples: number;
  /** What the Session decided for these inputs (the baseline does the same work for every kind). */
  decisions: Record<string, number>;
  eventsPerInput: Record<FlavorName, number>;
  actionsPerInput: Record<FlavorName, number>;
  /** Session events by type, summed over the samples. */
  sessionEventTypes: Record<string, number>;
  baselineEventTypes: Record<string, number>;
}

type Kind = 'continue' | 'new-phase' | 'out-of-scope';

/**
 * History events and billable actions that one input of each kind adds, read from the real histories:
 * the events appended between the settled history before the signal and the settled history after it.
 */
export async function historyCost(stack: Stack, continues: number): Promise<Record<Kind, KindCost>> {
  const plan: Array<[Kind, string]> = [
    ...Array.from({ length: continues }, (): [Kind, string] => ['continue', TEXT.continue]),
    ['out-of-scope', TEXT.outOfScope],
    ['new-phase', TEXT.goal],
    ['new-phase', TEXT.newPhase],
  ];
  const result = {} as Record<Kind, KindCost>;
  for (const [kind] of plan) {
    result[kind] ??= {
      samples: 0,
      decisions: {},
      eventsPerInput: { session: 0, baseline: 0 },
      actionsPerInput: { session: 0, baseline: 0 },
      sessionEventTypes: {},
      baselineEventTypes: {},
    };
  }
  for (const flavor of both) {
    const d = await ready(stack, flavor);
    const id = d.handle.workflowId;
    let before = await settledEvents(stack.client, id);
    for (const [kind, text] of plan) {
      const seen = await decided(d, await send(d, text));
      const after = await settledEvents(stack.client, id);
      const added = after.slice(before.length);
      before = after;
      const cost = result[kind];
      cost.eventsPerInput[flavor.name] += added.length;
      cost.actionsPerInput[flavor.name] += billableActions(added);
      const types = flavor.name === 'session' ? cost.sessionEventTypes : cost.baselineEventTypes;
      for (const [type, n] of Object.entries(countByType(added))) types[type] = (types[type] ?? 0) + n;
      if (flavor.name === 'session') {
        cost.samples++;
        cost.decisions[seen.decision] = (cost.decisions[seen.decision] ?? 0) + 1;
      }
    }
    await close(d);
  }
  for (const cost of Object.values(result)) {
    for (const f of ['session', 'baseline'] as const) {
      cost.eventsPerInput[f] = round(cost.eventsPerInput[f] / cost.samples);
      cost.actionsPerInput[f] = round(cost.actionsPerInput[f] / cost.samples);
    }
  }
  return result;
}

export interface RateResult {
  workflows: number;
  inputsEach: number;
  inputsPerSecond: Record<FlavorName, number>;
  ratio: number;
}

/**
 * `workflows` workflows of each flavor, set up first (untimed), then `inputsEach` `Continue` inputs
 * each, all at once, and `close`; the time runs from the first signal until every workflow has
 * completed. Baseline first, then the Session, each alone on the worker.
 */
async function rate(stack: Stack, workflows: number, inputsEach: number, sendConcurrency: number): Promise<RateResult> {
  const inputsPerSecond = { session: 0, baseline: 0 };
  for (const flavor of [FLAVORS.baseline, FLAVORS.session]) {
    inputsPerSecond[flavor.name] = await drain(stack, flavor, workflows, inputsEach, sendConcurrency);
  }
  return { workflows, inputsEach, inputsPerSecond, ratio: round(inputsPerSecond.session / inputsPerSecond.baseline) };
}

/** Inputs per second for `workflows` workflows of `flavor` taking `inputsEach` inputs each, all at once. */
async function drain(
  stack: Stack,
  flavor: Flavor,
  workflows: number,
  inputsEach: number,
  sendConcurrency: number,
  settings?: Record<string, unknown>,
): Promise<number> {
  const driven = await pool(Array.from({ length: workflows }), 20, () => ready(stack, flavor, settings));
  const t0 = performance.now();
  await Promise.all(
    driven.map(async (d) => {
      await pool(Array.from({ length: inputsEach }), sendConcurrency, () => send(d, TEXT.continue));
      await close(d);
      await d.handle.result();
    }),
  );
  return round((workflows * inputsEach) / ((performance.now() - t0) / 1000));
}

/** Many workflows with a few inputs each. */
export const throughput = (stack: Stack, workflows: number, inputsEach: number) =>
  rate(stack, workflows, inputsEach, 1);

export interface BurstResult extends RateResult {
  /** The Session judging one input at a time (relevanceLookahead 0): how it drained before judging ahead. */
  oneAtATimePerSecond: number;
  /** Session with judging ahead (the default) / one at a time; target ≥ 1.5. */
  speedup: number;
}

/** One workflow, a burst of inputs signalled as fast as the client can; also with judging ahead off. */
export async function burst(stack: Stack, inputs: number): Promise<BurstResult> {
  const result = await rate(stack, 1, inputs, 16);
  const oneAtATimePerSecond = await drain(stack, FLAVORS.session, 1, inputs, 16, { relevanceLookahead: 0 });
  return { ...result, oneAtATimePerSecond, speedup: round(result.inputsPerSecond.session / oneAtATimePerSecond) };
}

export interface LongResult {
  inputs: number;
  batch: number;
  window: number;
  /** Per-input time (batch time / batch size) over the first and the last `window` inputs. */
  firstMsPerInput: { mean: number; p50: number };
  lastMsPerInput: { mean: number; p50: number };
  ratioLastFirst: number;
  /** Mean ms per input in each tenth of the inputs, first to last. */
  byTenth: number[];
  /** Where the time went in the runs that bound the first and the last `window` inputs (from history). */
  breakdown: { first: RunCost; last: RunCost };
  runs: number;
  /** Start-argument bytes of each continued run: the state carried across continue-as-new. */
  carriedBytes: { max: number; median: number; perRun: number[] };
}

/**
 * One Session fed `inputs` `Continue` inputs in batches of `batch` (each batch signalled at once,
 * then waited for), so the per-input time is the Session's own cost, not the client's round trip.
 */
export async function longSession(stack: Stack, inputs: number, batch: number): Promise<LongResult> {
  // The Session's default (500 inputs a run) unless the run is too short to see a continue-as-new.
  const d = await ready(
    stack,
    FLAVORS.session,
    inputs < 2_000 ? { continueAsNewAfter: Math.ceil(inputs / 4) } : undefined,
  );
  const firstRunId = d.handle.firstExecutionRunId;
  const perInput: number[] = [];
  for (let done = 0; done < inputs; done += batch) {
    const size = Math.min(batch, inputs - done);
    const t0 = performance.now();
    let last = 0;
    for (let i = 0; i < size; i++) last = await send(d, TEXT.continue);
    await decided(d, last, 300_000, 5);
    const each = (performance.now() - t0) / size;
    for (let i = 0; i < size; i++) perInput.push(each);
  }
  await close(d);
  await d.handle.result();
  const window = Math.min(1_000, Math.floor(inputs / 5));
  const first = perInput.slice(0, window);
  const last = perInput.slice(-window);
  const tenth = Math.ceil(perInput.length / 10);
  const byTenth = Array.from({ length: 10 }, (_, i) => round(mean(perInput.slice(i * tenth, (i + 1) * tenth))));
  const runs = await allRuns(stack.client, d.handle.workflowId, firstRunId);
  const perRun = runs.slice(1).map(startInputBytes);
  const signalled = runs.map((events) => events.filter((e) => e.workflowExecutionSignaledEventAttributes).length);
  const total = signalled.reduce((a, b) => a + b, 0);
  let seen = 0;
  const firstRuns: HistoryEvent[][] = [];
  const lastRuns: HistoryEvent[][] = [];
  runs.forEach((events, i) => {
    if (seen < window + 2) firstRuns.push(events);
    seen += signalled[i] ?? 0;
    if (seen > total - window) lastRuns.push(events);
  });
  return {
    inputs,
    batch,
    window,
    firstMsPerInput: { mean: round(mean(first)), p50: round(median(first)) },
    lastMsPerInput: { mean: round(mean(last)), p50: round(median(last)) },
    ratioLastFirst: round(mean(last) / mean(first)),
    byTenth,
    breakdown: { first: runCost(firstRuns), last: runCost(lastRuns) },
    runs: runs.length,
    carriedBytes: { max: Math.max(0, ...perRun), median: round(median(perRun)) || 0, perRun },
  };
}

/** Per bound input, over a set of runs: what the server's history says each part took. */
export interface RunCost {
  runs: number;
  inputs: number;
  /** Encoded history bytes per input. */
  historyBytesPerInput: number;
  /** Workflow task scheduled → completed, summed per input (worker time plus task queue wait). */
  workflowTaskMsPerInput: number;
  /** Activity scheduled → completed, summed per input, by activity type. */
  activityMsPerInput: Record<string, number>;
  /** Failed workflow tasks per run (the server's UNHANDLED_COMMAND at continue-as-new, mostly). */
  failedTasksPerRun: number;
}

function ms(e: HistoryEvent): number {
  const t = e.eventTime;
  return t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : 0;
}

function runCost(runs: HistoryEvent[][]): RunCost {
  let inputs = 0;
  let bytes = 0;
  let taskMs = 0;
  let failed = 0;
  const activityMs: Record<string, number> = {};
  for (const events of runs) {
    const byId = new Map(events.map((e) => [String(e.eventId), e]));
    for (const e of events) {
      if (e.workflowExecutionSignaledEventAttributes) inputs++;
      bytes += eventBytes(e);
      const done = e.workflowTaskCompletedEventAttributes ?? e.workflowTaskFailedEventAttributes;
      const scheduledId = done?.scheduledEventId ?? e.workflowTaskTimedOutEventAttributes?.scheduledEventId;
      const scheduled = scheduledId ? byId.get(String(scheduledId)) : undefined;
      if (scheduled) taskMs += ms(e) - ms(scheduled);
      if (e.workflowTaskFailedEventAttributes) failed++;
      const activity = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
      const started = activity?.scheduledEventId ? byId.get(String(activity.scheduledEventId)) : undefined;
      const type = started?.activityTaskScheduledEventAttributes?.activityType?.name;
      if (started && type) activityMs[type] = (activityMs[type] ?? 0) + ms(e) - ms(started);
    }
  }
  const per = (n: number) => round(n / Math.max(1, inputs));
  return {
    runs: runs.length,
    inputs,
    historyBytesPerInput: per(bytes),
    workflowTaskMsPerInput: per(taskMs),
    activityMsPerInput: Object.fromEntries(Object.entries(activityMs).map(([k, v]) => [k, per(v)])),
    failedTasksPerRun: round(failed / Math.max(1, runs.length)),
  };
}
