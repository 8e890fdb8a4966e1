/**
 * `npm run bench` in its smallest form: every scenario runs once on tiny sizes and the results file
 * holds each scenario's fields. No speed is asserted (benchmarks are not timed tests).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SCENARIOS, runBench } from '../bench/main.js';
import type { BenchResults } from '../bench/report.js';
import {
  capacityReport,
  conversationReport,
  modelLatencyReport,
  reportRows,
  streamingReport,
} from '../bench/report.js';

const dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pair = { session: expect.any(Number) as number, baseline: expect.any(Number) as number };
const kind = {
  samples: expect.any(Number) as number,
  eventsPerInput: pair,
  actionsPerInput: pair,
  sessionEventTypes: expect.any(Object) as object,
};

/** Every size at its smallest; each case picks its scenarios. */
const tiny = {
  namespace: 'default',
  latencyInputs: 2,
  eventInputs: 1,
  sessions: 2,
  inputsEach: 2,
  burstInputs: 4,
  longInputs: 12,
  longBatch: 4,
  recallSizes: [300],
  mcpEntries: 300,
  pragmaInputs: 1,
  pathologicalRounds: 1,
  modelLatencyMs: 50,
  modelLatencySessions: 1,
  modelLatencyContinues: 1,
  streamingTurns: 2,
  streamingReplyChars: 120,
  streamingChunkChars: 8,
  streamingChunkDelayMs: 5,
  streamingHelperMs: 5,
};

describe('npm run bench', () => {
  it('runs every scenario but streaming and capacity and writes each one’s figures', { timeout: 360_000 }, async () => {
    const out = join(dir, 'results.json');
    // The streaming and capacity scenarios have their own cases below.
    await runBench(
      { ...tiny, scenarios: SCENARIOS.filter((s) => s !== 'streaming' && s !== 'capacity'), out },
      () => {},
    );
    const results = JSON.parse(readFileSync(out, 'utf8')) as BenchResults;
    expect(results.latency).toMatchObject({ p50Ms: pair, p95Ms: pair, ratioP50: expect.any(Number) as number });
    expect(results.events).toMatchObject({ continue: kind, 'new-phase': kind, 'out-of-scope': kind });
    for (const rate of [results.throughput, results.burst]) {
      expect(rate).toMatchObject({ inputsPerSecond: pair, ratio: expect.any(Number) as number });
    }
    expect(results.long).toMatchObject({ inputs: 12, ratioLastFirst: expect.any(Number) as number });
    expect(results.long?.runs).toBeGreaterThan(1);
    expect(results.long?.carriedBytes.max).toBeGreaterThan(0);
    expect(results.recall?.[0]).toMatchObject({ entries: 300, p99Ms: expect.any(Number) as number, agreement: 1 });
    expect(results.mcp).toMatchObject({
      refreshMs: expect.any(Number) as number,
      maxEventLoopBlockMs: expect.any(Number) as number,
    });
    expect(results.pragmas).toMatchObject({ ratioP50: expect.any(Number) as number });
    expect(results.pathological?.inputs.length).toBeGreaterThanOrEqual(3);
    expect(results.pathological).toMatchObject({
      p99Ms: expect.any(Number) as number,
      mainLoopMaxStallMs: expect.any(Number) as number,
    });
    const mix = results.modelLatency?.defaults;
    expect(Object.values(mix?.byKind ?? {}).map((k) => [k.inputs, k.decisions])).toEqual([
      [1, { continue: 1 }],
      [1, { 'new-phase': 1 }],
      [1, { initialize: 1 }],
    ]);
    for (const k of Object.values(mix?.byKind ?? {})) {
      expect(k).toMatchObject({ depthP50: expect.any(Number) as number, target: expect.any(Number) as number });
      expect(k.tokensPerInput).toBeGreaterThan(0);
      // A new phase follows a continue: its early agent step, discarded, may have answered too.
      if (k.decisions['new-phase']) expect(k.callsPerInput['agent']).toBeGreaterThanOrEqual(1);
      else expect(k.callsPerInput['agent']).toBe(1);
      expect(k.actionsPerInput).toBeGreaterThan(0);
    }
    // The build has the speculation setting, so the mix ran a second time without it.
    expect(results.modelLatency?.noSpeculation).toSatisfy((run: object) => 'byKind' in run);
    // The new phase follows a continue, so its input sent the agent's first step ahead and discarded it.
    expect(mix?.discarded).toBe(1);
    expect(mix?.unknownUsage).toBeLessThanOrEqual(1);
    expect(modelLatencyReport(results.modelLatency!)).toContain('helper depth');
    expect(reportRows(results).length).toBeGreaterThan(15);
  });

  it(
    'streaming: the first delta comes before turn.finished, with and without speculation',
    { timeout: 240_000 },
    async () => {
      const out = join(dir, 'streaming.json');
      await runBench({ ...tiny, scenarios: ['streaming'], out }, () => {});
      const s = (JSON.parse(readFileSync(out, 'utf8')) as BenchResults).streaming;
      expect(s).toMatchObject({ turns: 2, replyChars: 120, chunkChars: 8, chunkDelayMs: 5, helperLatencyMs: 5 });
      // This build has the speculation setting, so both runs are there.
      for (const run of [s?.defaults, s?.noSpeculation]) {
        expect(run).toMatchObject({
          firstDeltaMs: { p50: expect.any(Number) as number, p95: expect.any(Number) as number },
          finishedMs: { p50: expect.any(Number) as number, p95: expect.any(Number) as number },
          ratioP50: expect.any(Number) as number,
          textMatched: expect.any(Number) as number,
        });
        const turns = run && 'turns' in run ? run.turns : [];
        expect(turns.map((t) => t.decision)).toEqual(['continue', 'continue']);
        for (const t of turns) {
          expect(t.deltas).toBeGreaterThan(0);
          expect(t.replyChars).toBeGreaterThanOrEqual(120);
          expect(t.firstDeltaMs).toBeLessThan(t.finishedMs);
        }
      }
      expect(streamingReport(s!)).toContain('deltas = reply');
    },
  );

  it(
    'capacity: heap, actions, saturation and replay figures from a worker process of its own',
    { timeout: 360_000 },
    async () => {
      const out = join(dir, 'capacity.json');
      await runBench(
        {
          ...tiny,
          scenarios: ['capacity'],
          out,
          capacitySessions: 3,
          capacityWorkflows: 2,
          capacityInputs: 2,
          capacityActionSamples: 1,
          pricePerMillionActions: 10,
        },
        () => {},
      );
      const c = (JSON.parse(readFileSync(out, 'utf8')) as BenchResults).capacity;
      expect(c?.sessions).toBe(3);
      // Three Sessions of ten inputs each take heap; the worker measured it (no speed asserted).
      expect(c?.heap.after10Bytes).toBeGreaterThan(c?.heap.baseBytes ?? Infinity);
      expect(c?.heap.perSessionAfter10Bytes).toBeGreaterThan(0);
      expect(c?.sqlite.perSessionBytes).toBeGreaterThan(0);
      expect(c?.latency.inputs).toBe(3 * 8);
      // Every input kind costs its signal and at least one activity.
      for (const kind of ['initialize', 'new-phase', 'continue'] as const) {
        const a = c?.actions?.[kind];
        expect(a?.byCategory['signal']).toBe(1);
        expect(a?.byCategory['activity']).toBeGreaterThanOrEqual(1);
        expect(a?.usdPerMillionInputs).toBe((a?.actions ?? NaN) * 10);
      }
      expect(c?.actions?.initialize.byCategory['workflow started']).toBe(1);
      for (const flavor of ['session', 'baseline'] as const) {
        expect(c?.saturation?.[flavor]).toMatchObject({
          inputs: 4,
          inputsPerSecond: expect.any(Number) as number,
          workerCpuMsPerInput: expect.any(Number) as number,
          serverCpuMsPerInput: expect.any(Number) as number,
          clientCpuMsPerInput: expect.any(Number) as number,
        });
        // Read over the server's process tree (its pid is the guardian's): the server works for every input.
        expect(c?.saturation?.[flavor].serverCpuMsPerInput).toBeGreaterThan(0);
      }
      // The scenario's server is `npm start`'s: activities executed eagerly (dev/dev-server.ts).
      expect(c?.eagerActivities).toBe(true);
      expect(capacityReport(c!)).toContain('eager activity execution on');
      expect(c?.replay?.samples).toBe(3);
      expect(c?.defaultCache?.line).toMatch(/^sticky cache: \d+ Sessions/);
      expect(capacityReport(c!)).toContain('replay cost');
    },
  );

  it(
    'capacity conversation: heap per cached Session along a 12-input conversation, and the state it carries',
    { timeout: 240_000 },
    async () => {
      const out = join(dir, 'conversation.json');
      await runBench({ ...tiny, scenarios: ['capacity'], out, capacityConversation: 12 }, () => {});
      const c = (JSON.parse(readFileSync(out, 'utf8')) as BenchResults).conversation;
      expect(c).toMatchObject({ inputs: 12, sessions: 1 });
      expect(c?.points.map((p) => p.inputs)).toEqual([2, 10, 12]);
      // A Session takes heap, more after 12 inputs than after 2 (its decision records alone grow).
      expect(c?.points[0]?.perSessionBytes).toBeGreaterThan(0);
      expect(c?.points[2]?.heapBytes).toBeGreaterThan(c?.points[0]?.heapBytes ?? Infinity);
      // The 13th input made it continue-as-new, carrying one decision record and one bound id per input.
      expect(c?.carried?.lists['decisions']?.items).toBe(13);
      expect(c?.carried?.lists['recent']?.items).toBe(13);
      expect(c?.carried?.bytes).toBeGreaterThan(0);
      // Without compiled code, from the heap snapshot at each point: the Session's own objects, less than all.
      expect(c?.points[0]?.perSessionDataBytes).toBeGreaterThan(0);
      expect(c?.points[2]?.dataBytes).toBeLessThan(c?.points[2]?.heapBytes ?? 0);
      // 12 inputs leave no late window (from the 100th on).
      expect(c?.late).toBeNull();
      expect(conversationReport(c!)).toContain('carried into the next run after 13 inputs');
      expect(conversationReport(c!)).toContain('late growth per input: -');
    },
  );
});
