/**
 * How many Sessions the worker keeps in its sticky cache (the SDK's `maxCachedWorkflows`), and how
 * much heap the workflow thread uses.
 *
 * The SDK sizes the cache at about 600 workflows per GiB of heap (worker-options.js), i.e. it assumes
 * ~1.7 MB per workflow. A cached Session measured more than that (`npm run bench -- --scenarios
 * capacity`), so the SDK's default filled the workflow thread's heap and the worker died with
 * ERR_WORKER_OUT_OF_MEMORY, taking every running turn with it. An evicted Session only costs a replay
 * of its current run on its next input, so the cache is sized to fit, with headroom.
 */
import { Worker as ThreadWorker } from 'node:worker_threads';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';

/**
 * Workflow-thread heap one cached Session may take, in MiB, with headroom. Measured 2026-12-04 with
 * call scopes under retired generations (workflows/run/call-scopes.ts; `npm run bench -- --scenarios
 * capacity --capacity-heap-only`): 0.24-0.35 MiB after a Session's first 10 inputs and 2.5-7 KB more per
 * input (30 and 10 Sessions) until it continues as new, by default after 500 inputs: at most
 * 0.35 + 500 x 7 KB = 3.8 MiB at the end of a run. 4 MiB covers that; HEAP_FRACTION below keeps V8's
 * room to collect on top. (Before: 6, when a Session took 2.5 MiB and ~12 KB per input.) Since call
 * scopes settle with their call (2026-12-06, `--capacity-conversation 300`): 0.83 MiB after 300
 * inputs, 0.8 KB more per input past the 200th, so 4 MiB now leaves more headroom than it needs.
 */
export const SESSION_HEAP_MIB = 4;

/**
 * Heap the workflow thread needs with no Session cached (the SDK, the evaluated bundle, activation
 * buffers), in MiB; measured 40-60 MiB on main, rounded up.
 */
export const THREAD_BASE_MIB = 96;

/** Share of what is left after the base that cached Sessions may fill: V8 needs room to collect. */
export const HEAP_FRACTION = 0.7;

/** Fewest Sessions the cache holds (the SDK refuses 1; a few keep an active conversation warm). */
const MIN_CACHE = 10;

const MIB = 1024 * 1024;

/**
 * The heap limit of a worker thread started as the SDK starts its workflow thread (no
 * resourceLimits): a V8 heap of its own, sized by the same flags as the main thread's
 * (`--max-old-space-size` in NODE_OPTIONS, else V8's default from the machine's memory). Read in
 * such a thread rather than assumed, since that inheritance is Node's choice, not a promise.
 */
export async function workflowThreadHeapLimit(): Promise<number> {
  const probe = new ThreadWorker(
    "require('node:worker_threads').parentPort.postMessage(require('node:v8').getHeapStatistics().heap_size_limit)",
    { eval: true },
  );
  try {
    return await new Promise<number>((resolve, reject) => {
      probe.once('message', (limit: number) => resolve(limit));
      probe.once('error', reject);
    });
  } finally {
    await probe.terminate();
  }
}

/** The cache size that fits `heapLimitBytes`: what is left after the base, times the fraction, per Session. */
export function cacheSizeFor(heapLimitBytes: number, sessionMib = SESSION_HEAP_MIB): number {
  const usable = Math.max(0, heapLimitBytes / MIB - THREAD_BASE_MIB) * HEAP_FRACTION;
  return Math.max(MIN_CACHE, Math.floor(usable / sessionMib));
}

export interface StickyCache {
  /** `maxCachedWorkflows` to pass the SDK. */
  size: number;
  /** Set from HARNESS_MAX_CACHED_WORKFLOWS (true) or computed from the heap limit (false). */
  configured: boolean;
  heapLimitBytes: number;
  /** The start-up log line. */
  line: string;
}

/**
 * The sticky cache of this process's worker: `configured` (HARNESS_MAX_CACHED_WORKFLOWS) when set,
 * else computed from the workflow thread's heap limit. `npm start`, `npm run worker` and the cluster
 * workers all get it from createSessionWorker.
 */
export async function stickyCache(configured: number | undefined): Promise<StickyCache> {
  const heapLimitBytes = await workflowThreadHeapLimit();
  const size = configured ?? cacheSizeFor(heapLimitBytes);
  const gb = (heapLimitBytes / 1024 ** 3).toFixed(2);
  const source = configured === undefined ? '' : ' (HARNESS_MAX_CACHED_WORKFLOWS)';
  const line =
    size === 0
      ? `sticky cache: off${source}, every workflow task replays its Session; heap limit ${gb} GB`
      : `sticky cache: ${size} Sessions${source}, ~${SESSION_HEAP_MIB} MB each, heap limit ${gb} GB`;
  return { size, configured: configured !== undefined, heapLimitBytes, line };
}

/** Heap of one SDK workflow thread, as V8 reports it. */
export interface ThreadHeap {
  usedBytes: number;
  totalBytes: number;
}

/** The SDK's workflow threads: the `workerThread` of each client of its ThreadedVMWorkflowCreator. */
function isWorkflowThreadUrl(url: string): boolean {
  return /workflow-worker-thread(\.js)?$/.test(url);
}

/**
 * The used heap of this process's SDK workflow thread(s), after a full garbage collection when
 * `collect` is set, read through the inspector's NodeWorker domain (Node 20 has no
 * `Worker.getHeapStatistics()`). The SDK exposes no handle on its thread, so it is recognised by
 * its script (`workflow-worker-thread.js`). For measurement (the capacity benchmark), not for
 * every request: the inspector session attaches to every worker thread while it runs. With
 * `snapshotPath`, a heap snapshot of the thread is written there too (for finding what a Session keeps).
 */
export async function workflowThreadHeaps(
  options: { collect?: boolean; snapshotPath?: string } = {},
): Promise<ThreadHeap[]> {
  const session = new Session();
  session.connect();
  const threads: string[] = [];
  session.on('NodeWorker.attachedToWorker', ({ params }) => {
    if (isWorkflowThreadUrl(params.workerInfo.url)) threads.push(params.sessionId);
  });
  const pending = new Map<number, (result: unknown) => void>();
  const chunks: string[] = [];
  session.on('NodeWorker.receivedMessageFromWorker', ({ params }) => {
    const message = JSON.parse(params.message) as {
      id?: number;
      result?: unknown;
      method?: string;
      params?: { chunk?: string };
    };
    if (message.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.push(message.params?.chunk ?? '');
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
    if (message.id !== undefined) pending.delete(message.id);
  });
  let nextId = 0;
  const call = <T>(sessionId: string, method: string) =>
    new Promise<T>((resolve) => {
      const id = ++nextId;
      pending.set(id, resolve as (result: unknown) => void);
      void session.post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method }) });
    });
  try {
    // attachedToWorker arrives for the threads already running before enable's answer.
    await session.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
    const heaps: ThreadHeap[] = [];
    for (const thread of threads) {
      if (options.collect) await call(thread, 'HeapProfiler.collectGarbage');
      const usage = await call<{ usedSize: number; totalSize: number }>(thread, 'Runtime.getHeapUsage');
      heaps.push({ usedBytes: usage.usedSize, totalBytes: usage.totalSize });
      if (options.snapshotPath) {
        // The chunks arrive as notifications before takeHeapSnapshot's answer.
        chunks.length = 0;
        await call(thread, 'HeapProfiler.takeHeapSnapshot');
        writeFileSync(`${options.snapshotPath}${heaps.length > 1 ? `.${heaps.length}` : ''}`, chunks.join(''));
      }
    }
    return heaps;
  } finally {
    await session.post('NodeWorker.disable').catch(() => {});
    session.disconnect();
  }
}

/**
 * The longest one workflow activation may run on the workflow thread before the SDK gives up on it
 * (its `isolateExecutionTimeout`, 5 s by default and not in its typed options; the SDK spreads what
 * it is given over its defaults, which test/unit/capacity.test.ts checks).
 *
 * Why not 5 s: when that timer fires while the activation's microtasks run (the workflow context
 * uses `microtaskMode: 'afterEvaluate'`), Node leaves its async-hook stack unbalanced and aborts
 * the whole worker process ("async hook stack has become corrupted", nodejs/node#38503, still open
 * in Node 20.20; temporalio/sdk-typescript#939): every Session on the worker stops until it is
 * restarted. A signal burst makes such activations: while a task is in flight, the server fails it
 * once more than about 100 signals are buffered (FORCE_CLOSE_COMMAND), the worker evicts the run,
 * and the next task replays every signal since the last completed one in a single activation.
 * Measured 2026-12-05 (test/faults/burst.fault.ts, 1,600 signals, 2 cores at load average 15-24):
 * fifteen force-closed tasks in a row, then one activation holding all 1,600 signals; replayed, that
 * activation alone took 1.9-5.1 s, and the live worker process aborted within 17 s of the burst. A
 * deadlocked workflow still fails; only later, and it would take the process with it either way.
 */
export const ACTIVATION_LIMIT = '30s';
