/**
 * A long Session: 2,000 inputs by default (FAULTS_LONG_INPUTS=10000 for the full run), through
 * several continue-as-new runs. Asserts counts (every input bound once, in order, no failed workflow
 * task); prints the carried-state bytes of each run and the per-input latency in 10% buckets and for
 * the first and last 1,000 inputs, so growth shows up as a trend, never as a flaky assert.
 */
import { beforeAll, expect, inject, it } from 'vitest';
import { messageSignal, snapshotQuery } from '../../contract/api.js';
import type { DecisionRecord } from '../../contract/state.js';
import { message, startSession, uniqueId } from '../support/harness.js';
import {
  BindingLog,
  DecisionLog,
  auditInputs,
  carriedBytes,
  replayEvents,
  runHistories,
  until,
  workflowTaskFailures,
} from './audit.js';
import { inputText, scriptFaultRoles } from './roles.js';
import { writeRow } from './rows.js';
import { useKillableWorker } from './sessions.js';

const INPUTS = Number(process.env.FAULTS_LONG_INPUTS ?? 2_000);
/** Inputs sent ahead of the Session: enough to keep it busy, few enough that latency is not queue wait. */
const WINDOW = 50;
/**
 * The suite's 15 minutes fit the default 2,000 inputs; 10,000 take about 45 minutes on a loaded
 * 2-core machine, so the bound scales with the input count (about 0.5 s per input, never less).
 */
const TEST_TIMEOUT_MS = Math.max(900_000, INPUTS * 500);

const w = useKillableWorker();

beforeAll(async () => {
  scriptFaultRoles(w.models);
  await w.start(uniqueId('faults-long'));
});

/** From the first stage's start to the end of the agent turn (or the last stage). */
function latencyMs(record: DecisionRecord): number {
  const start = record.stages[0]?.startedAt ?? 0;
  const end = record.agent?.endedAt ?? record.stages.at(-1)?.endedAt ?? start;
  return end - start;
}

function quantiles(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return `p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, max ${at(1)} ms`;
}

it(
  `binds ${INPUTS} inputs once each through continue-as-new, with bounded carried state`,
  async () => {
    const started = Date.now();
    const handle = await startSession(w, {
      settings: { modelTimeoutMs: 5_000, agentTimeoutMs: 5_000, keepDecisions: 1_000 },
    });
    const firstRunId = (await handle.describe()).runId;
    const log = new DecisionLog();
    const sent: string[] = [];
    for (let k = 0; k < INPUTS; k++) {
      const m = message(inputText(0, k));
      await handle.signal(messageSignal, m);
      sent.push(m.messageId);
      if (sent.length % WINDOW === 0) {
        await w.alive(
          until(
            async () => {
              await log.poll(handle);
              return (await handle.query(snapshotQuery)).seq.lastBound;
            },
            (bound) => bound >= sent.length - WINDOW,
            300_000,
          ),
        );
      }
    }
    const done = await w.alive(
      until(
        async () => {
          await log.poll(handle);
          return handle.query(snapshotQuery);
        },
        (s) => s.seq.lastBound === INPUTS && s.stage === 'Idle' && s.turn === null,
        300_000,
        (s) => s.seq.lastBound,
      ),
    );
    await log.poll(handle);

    const histories = await runHistories(w.client, handle.workflowId, firstRunId);
    const carried = carriedBytes(histories);
    const failures = workflowTaskFailures(histories);
    // Counted from the durable history; the polled decision records only give the latencies.
    const bound = new BindingLog(await replayEvents(handle.workflowId, histories, inject('workflowBundlePath')));
    const audit = auditInputs(bound, sent);
    const records = [...log.bySeq.values()].sort((a, b) => a.seq - b.seq);
    const latencies = records.map(latencyMs);
    const bucket = Math.max(1, Math.ceil(INPUTS / 10));
    const lines = [
      `long Session: ${INPUTS} inputs, ${histories.length} runs, final run ${done.run}`,
      `carried-state bytes at each continue-as-new: ${carried.join(', ') || 'none'}`,
      ...Array.from({ length: 10 }, (_, i) => {
        const slice = latencies.slice(i * bucket, (i + 1) * bucket);
        return slice.length ? `  inputs ${i * bucket + 1}-${i * bucket + slice.length}: ${quantiles(slice)}` : '';
      }).filter(Boolean),
      `  first 1,000: ${quantiles(latencies.slice(0, 1_000))}`,
      `  last 1,000: ${quantiles(latencies.slice(-1_000))}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    writeRow({
      scenario: `4 long Session ${INPUTS} inputs`,
      sessions: 1,
      inputs: INPUTS,
      lost: audit.lost,
      duplicated: audit.duplicated,
      failedTasks: failures.ours.length,
      serverFailedTasks: failures.server,
      timeMs: Date.now() - started,
      notes: `runs ${histories.length}; carried bytes ${carried.join('/')}; latency first 1,000 ${quantiles(latencies.slice(0, 1_000))}; last 1,000 ${quantiles(latencies.slice(-1_000))}`,
    });

    expect(audit).toEqual({ lost: 0, duplicated: 0, gapFree: true, inOrder: true });
    expect(bound.bySeq.size).toBe(INPUTS);
    expect(bound.finishedTurns).toBe(INPUTS);
    expect(done.counts.bound).toBe(INPUTS);
    expect(failures.ours).toEqual([]);
    // The documented cap (contract/budget.ts CARRIED_CAP) holds for every hand-over.
    expect(carried.every((bytes) => bytes <= 1024 * 1024)).toBe(true);
  },
  TEST_TIMEOUT_MS,
);
