/**
 * `npm run bench -- --scenarios capacity --capacity-conversation <n>`: whether a cached Session's
 * workflow heap stays bounded as one conversation goes on, rather than what a 10-input Session costs.
 *
 * A few Sessions (one unless `--capacity-sessions`) on the capacity scenario's embedded stack and
 * worker process each get an initialize, a new phase and then `Continue` inputs, all in one run
 * (their continue-as-new is set past the end, and the server's suggestion raised). The worker's workflow thread reports its used heap
 * after a full collection before the Sessions and once all of them have had 2, 10, 50, 100, then
 * every further 100 inputs, and n: heap per cached Session at each point, and the growth per input
 * between points. A heap snapshot is taken at each point (into `--capacity-snapshots <dir>` as
 * `base`, `after-<k>`, kept for bench/heap-diff.ts; otherwise into a temporary directory, removed):
 * from it, the heap without compiled code. Code grows as functions get hot and is shared by every
 * workflow on the thread, so with few Sessions it would read as theirs; without it, what a Session
 * keeps. The late window (from the last point at least 200 inputs before the end, 100 or later, to
 * the end) says whether a long conversation still grows once its bounded lists have filled.
 *
 * At the end one Session gets one more input, which makes it continue-as-new: the state it
 * carries, read from the new run's start event, shows how long each bounded list has become.
 */
import { Buffer } from 'node:buffer';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { embeddedStack, startWorker, timedInput } from './capacity-scenario.js';
import { FLAVORS, TEXT, allRuns, start, type Driven } from './driver.js';
import { groupNodes, type HeapSnapshot } from './heap-diff.js';
import { percentile, pool, round } from './stats.js';

export interface ConversationOptions {
  /** Inputs each Session gets. */
  inputs: number;
  /** Sessions holding the conversation side by side (their mean is the per-Session figure). */
  sessions: number;
  namespace: string;
  /** Where to write heap snapshots of the workflow thread at each point. */
  snapshotDir?: string;
}

export interface ConversationPoint {
  inputs: number;
  /** Workflow-thread used heap after a full collection, and its growth over the base per Session. */
  heapBytes: number;
  perSessionBytes: number;
  /** Growth per Session per input since the previous point (from the base for the first). */
  perInputBytes: number;
  /** The same without compiled code (from the point's heap snapshot): what the Sessions keep. */
  dataBytes: number;
  perSessionDataBytes: number;
  perInputDataBytes: number;
}

/** Growth per Session and input between two points late in the conversation. */
export interface ConversationWindow {
  from: number;
  to: number;
  perInputBytes: number;
  /** Without compiled code: what a long conversation still adds once its bounded lists have filled. */
  perInputDataBytes: number;
}

export interface ConversationResult {
  inputs: number;
  sessions: number;
  baseBytes: number;
  points: ConversationPoint[];
  /** Growth per input from the 10th input to the last: what a long conversation adds. */
  perInputAfter10Bytes: number;
  /** Heap without compiled code before the Sessions (the snapshot's), for the data figures. */
  baseDataBytes: number;
  /** Growth per input over the late window (null when the conversation has fewer than 300 inputs). */
  late: ConversationWindow | null;
  /** Signal → turn.finished over every input, p50 / p95. */
  latency: { p50Ms: number; p95Ms: number };
  /** The state one Session carried into its next run after `inputs + 1` inputs: items and JSON bytes per list. */
  carried: { bytes: number; lists: Record<string, { items: number; bytes: number }> } | null;
  loadavg: { start: number[]; end: number[] };
}

/** The measuring points: 2, 10, 50, 100, every further 100, and the last input. */
export function conversationPoints(inputs: number): number[] {
  const points = [2, 10, 50];
  for (let k = 100; k < inputs; k += 100) points.push(k);
  return [...new Set([...points.filter((k) => k < inputs), inputs])];
}

/**
 * The late window's first point: the last one at least 200 inputs before the end, 100 or later. Call
 * scopes are let go of in generations (workflows/run/call-scopes.ts, hundreds of calls),
 * so heap rises and falls by some KB per Session over that period; a shorter window reads the swing.
 */
export function lateFrom(points: number[]): number | null {
  const last = points.at(-1) ?? 0;
  const from = points.filter((k) => k >= 100 && k <= last - 200).at(-1);
  return from ?? null;
}

/**
 * Self sizes of a heap snapshot's nodes in the V8 heap but compiled code (bench/heap-diff.ts groups):
 * `native` and `synthetic` nodes are memory outside it (buffers, Node's own objects) or none.
 */
export function dataBytesOf(path: string): number {
  const groups = groupNodes(JSON.parse(readFileSync(path, 'utf8')) as HeapSnapshot);
  let bytes = 0;
  for (const [key, group] of groups) if (!/^(code|native|synthetic)\b/.test(key)) bytes += group.bytes;
  return bytes;
}

const textOf = (seq: number) => (seq === 1 ? TEXT.goal : seq === 2 ? TEXT.newPhase : TEXT.continue);

export async function conversation(
  options: ConversationOptions,
  log: (line: string) => void,
): Promise<ConversationResult> {
  const startLoad = loadavg().map((x) => round(x));
  // The server suggests continue-as-new past 4,096 events (~270 inputs): raised, so that the
  // conversation stays one run and its growth shows (the Session's own continueAsNewAfter ends it).
  const stack = await embeddedStack(options.namespace, {
    'limit.historyCount.suggestContinueAsNew': 1_000_000,
    'limit.historySize.suggestContinueAsNew': 1_000_000_000,
  });
  // V8 flushes the bytecode of functions it has not run lately at a collection: shared by every
  // Session, it would move the per-Session figures by whole MiB between points.
  const worker = await startWorker({ ...stack.env, HARNESS_MAX_CACHED_WORKFLOWS: String(options.sessions + 10) }, [
    '--no-flush-bytecode',
  ]);
  const snapshotDir = options.snapshotDir ?? mkdtempSync(join(tmpdir(), 'harness-conversation-'));
  try {
    mkdirSync(snapshotDir, { recursive: true });
    // Snapshots not asked for are parsed and removed at once: each is tens of MB.
    const measure = async (name: string) => {
      const path = join(snapshotDir, `${name}.heapsnapshot`);
      const heap = await worker.heap(path);
      const dataBytes = dataBytesOf(path);
      if (!options.snapshotDir) rmSync(path, { force: true });
      return { ...heap, dataBytes };
    };
    // One Session first, so what the first workflow loads once per worker is in the base.
    const warm = await start(stack.client, stack.taskQueue, FLAVORS.session);
    await timedInput(worker, warm, TEXT.goal);
    await timedInput(worker, warm, TEXT.newPhase);
    const base = await measure('base');
    log(`  conversation: ${options.sessions} Session(s) × ${options.inputs} inputs, worker ${worker.pid}`);
    const settings = { continueAsNewAfter: options.inputs + 1 };
    const sessions: Driven[] = [];
    for (let i = 0; i < options.sessions; i++) {
      sessions.push(await start(stack.client, stack.taskQueue, FLAVORS.session, settings));
    }
    const latencies: number[] = [];
    const points: ConversationPoint[] = [];
    let previous = { inputs: 0, heapBytes: base.usedBytes, dataBytes: base.dataBytes };
    for (const k of conversationPoints(options.inputs)) {
      await pool(sessions, 8, async (d) => {
        while (d.sent < k) latencies.push(await timedInput(worker, d, textOf(d.sent + 1)));
      });
      const heap = await measure(`after-${k}`);
      const perSession = (heap.usedBytes - base.usedBytes) / options.sessions;
      const perSessionData = (heap.dataBytes - base.dataBytes) / options.sessions;
      const perInput = (bytes: number, before: number) =>
        round((bytes - before) / options.sessions / (k - previous.inputs));
      const point = {
        inputs: k,
        heapBytes: heap.usedBytes,
        perSessionBytes: round(perSession),
        perInputBytes: perInput(heap.usedBytes, previous.heapBytes),
        dataBytes: heap.dataBytes,
        perSessionDataBytes: round(perSessionData),
        perInputDataBytes: perInput(heap.dataBytes, previous.dataBytes),
      };
      const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(2);
      log(`  after ${k} inputs: ${mib(perSession)} MiB per Session (${mib(perSessionData)} MiB without compiled code)`);
      points.push(point);
      previous = point;
    }
    const at10 = points.find((p) => p.inputs === 10);
    const last = points.at(-1)!;
    const from = points.find((p) => p.inputs === lateFrom(points.map((q) => q.inputs)));
    const per = (bytes: number, inputs: number) => round(bytes / options.sessions / inputs);
    return {
      inputs: options.inputs,
      sessions: options.sessions,
      baseBytes: base.usedBytes,
      points,
      perInputAfter10Bytes:
        at10 && last.inputs > 10 ? round((last.heapBytes - at10.heapBytes) / options.sessions / (last.inputs - 10)) : 0,
      baseDataBytes: base.dataBytes,
      late: from
        ? {
            from: from.inputs,
            to: last.inputs,
            perInputBytes: per(last.heapBytes - from.heapBytes, last.inputs - from.inputs),
            perInputDataBytes: per(last.dataBytes - from.dataBytes, last.inputs - from.inputs),
          }
        : null,
      latency: { p50Ms: round(percentile(latencies, 50)), p95Ms: round(percentile(latencies, 95)) },
      carried: await carriedState(stack.client, worker, sessions[0]!),
      loadavg: { start: startLoad, end: loadavg().map((x) => round(x)) },
    };
  } finally {
    await worker.stop();
    await stack.stop();
    if (!options.snapshotDir) rmSync(snapshotDir, { recursive: true, force: true });
  }
}

/** One more input makes the Session continue-as-new; the new run's start argument is the state it carried. */
async function carriedState(
  client: Parameters<typeof allRuns>[0],
  worker: Awaited<ReturnType<typeof startWorker>>,
  d: Driven,
): Promise<ConversationResult['carried']> {
  await timedInput(worker, d, TEXT.continue);
  for (let tries = 0; tries < 200; tries++) {
    const runs = await allRuns(client, d.handle.workflowId, d.handle.firstExecutionRunId);
    const data = runs[1]?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
    if (data) {
      const state = (JSON.parse(Buffer.from(data).toString('utf8')) as { carried?: Record<string, unknown> }).carried;
      if (!state) return null;
      const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
      const lists = Object.fromEntries(
        Object.entries(state)
          .filter((e): e is [string, unknown[]] => Array.isArray(e[1]))
          .map(([name, list]) => [name, { items: list.length, bytes: bytes(list) }]),
      );
      return { bytes: bytes(state), lists };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}
