/**
 * `npm run bench -- --scenarios capacity`: what one worker holds and what an input costs, on the
 * embedded stack (its own `temporal server start-dev` with a SQLite file, and the worker as a separate
 * process, bench/capacity-worker.ts, on the offline local provider).
 *
 * 1. Actions: a few Sessions get an initialize, a new phase and continue inputs one at a time; the
 *    events each input added to the settled history are counted (bench/driver.ts billableActions).
 * 2. Memory: N Sessions each hold a 10-input conversation (initialize, new phase, 8 continue); the
 *    worker reports its workflow thread's used heap after a full collection (inspector, in the
 *    worker process) and its RSS, before the Sessions, after their second input and after their
 *    tenth; the server's SQLite file (with its WAL) is measured at the same points.
 * 3. Saturation: fresh workflows of each flavor (the Session, then the bare baseline) get a burst
 *    of continue inputs each, all at once; inputs/s, and CPU per input of the worker and the server
 *    process from /proc/<pid>/stat over the same window.
 * 4. Replay: the worker restarts (with the cache it sizes itself), so every Session is evicted; an
 *    input to an evicted Session is timed against the next input to the same, now cached, Session.
 *
 * Inputs are timed from the signal to the Session's `turn.finished` event, which the worker process
 * forwards: no query polls the worker meanwhile.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import { startDevServer } from '../dev/dev-server.js';
import { ensureTemporalCli } from '../dev/temporal-cli.js';
import { freePorts } from '../test/support/ports.js';
import type { CapacityWorkerMessage } from './capacity-worker.js';
import {
  FLAVORS,
  TEXT,
  actionsByCategory,
  billableActions,
  changeVersionUpserts,
  close,
  decided,
  send,
  settledEvents,
  start,
  startWith,
  type Driven,
  type Flavor,
  type FlavorName,
} from './driver.js';
import { workflowBundle } from './stack.js';
import { median, percentile, pool, round } from './stats.js';

const ROOT = resolve(import.meta.dirname, '..');
const MIB = 1024 * 1024;

export interface CapacityOptions {
  /** Sessions held open with a 10-input conversation each. */
  sessions: number;
  /** Fresh workflows of each flavor in the saturation burst. */
  saturationWorkflows: number;
  /** Continue inputs each of them gets, all at once. */
  saturationInputs: number;
  /** Sessions whose inputs are counted for actions. */
  actionSamples: number;
  /** USD per million Temporal Cloud actions. */
  pricePerMillionActions: number;
  /** How many Sessions send inputs at once while the conversations run. */
  concurrency: number;
  namespace: string;
  /** `--max-old-space-size` of the worker (MiB); undefined: sized to hold every Session. */
  workerHeapMib?: number;
  /** Only the memory part (heap, RSS, SQLite per Session): a quick check while shrinking a Session. */
  heapOnly?: boolean;
  /** Where to write heap snapshots of the workflow thread at each memory point (base, after-2, after-10). */
  snapshotDir?: string;
  /**
   * False runs the scenario's server without eager activity execution (dev/dev-server.ts
   * DEFAULT_DYNAMIC_CONFIG turns it on, as for `npm start`), to measure what it buys.
   */
  eagerActivities?: boolean;
}

/** Published Temporal Cloud price: "Actions pricing starts at $50 per million Actions" (https://docs.temporal.io/cloud/pricing). */
export const DEFAULT_PRICE_PER_MILLION_ACTIONS = 50;

type Kind = 'initialize' | 'new-phase' | 'continue';

export interface KindActions {
  inputs: number;
  /** Billable actions per input of this kind (billableActions). */
  actions: number;
  /** By category, per input. */
  byCategory: Record<string, number>;
  /** History events per input, and of those the TemporalChangeVersion upserts (history, not billed). */
  events: number;
  changeVersionUpserts: number;
  /** USD per million inputs of this kind at the given price per million actions. */
  usdPerMillionInputs: number;
}

export interface CapacityResult {
  sessions: number;
  /** The sticky cache the measuring worker ran with (set to hold every Session). */
  measuringCache: number;
  /** What the worker sizes by itself at its heap limit (the restarted worker's log line); not in a heap-only run. */
  defaultCache?: { size: number; heapLimitBytes: number; line: string };
  heap: {
    /** Workflow-thread used heap after a full collection: before the Sessions, after 2 and after 10 inputs. */
    baseBytes: number;
    after2Bytes: number;
    after10Bytes: number;
    perSessionAfter2Bytes: number;
    perSessionAfter10Bytes: number;
    /** Growth per continue input between the 2nd and the 10th. */
    perInputBytes: number;
  };
  rss: { baseBytes: number; after10Bytes: number; perSessionBytes: number };
  sqlite: { perSessionBytes: number; totalBytes: number };
  /** Continue inputs of the conversations, `concurrency` Sessions at a time: signal → turn.finished. */
  latency: { inputs: number; concurrency: number; p50Ms: number; p95Ms: number };
  actions?: Record<Kind, KindActions>;
  pricePerMillionActions: number;
  saturation?: Record<
    FlavorName,
    {
      inputs: number;
      inputsPerSecond: number;
      workerCpuMsPerInput: number;
      serverCpuMsPerInput: number;
      /** This process: the Temporal client sending the signals, on the same cores. */
      clientCpuMsPerInput: number;
    }
  > & { ratio: number };
  /** Whether the scenario's server executed activities eagerly. */
  eagerActivities: boolean;
  replay?: {
    samples: number;
    /** History events of the sampled Sessions' current runs (median). */
    historyEvents: number;
    evictedP50Ms: number;
    cachedP50Ms: number;
    /** evicted − cached, p50. */
    costMs: number;
  };
  loadavg: { start: number[]; end: number[] };
}

/** The fields of /proc/<pid>/stat after the command name, or null once the process is gone. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** utime + stime of a process in ms, from /proc/<pid>/stat (all its threads). */
function cpuMs(pid: number): number {
  const fields = statFields(pid);
  // USER_HZ is 100 on Linux for every architecture Node supports.
  return fields ? (Number(fields[11]) + Number(fields[12])) * 10 : 0;
}

/**
 * CPU of a process and every live process under it, in ms. The dev server is a tree (the CLI that
 * `startDevServer` runs may start the server as a child of its own): its own pid alone can miss
 * the work.
 */
export function treeCpuMs(root: number): number {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const ppid = Number(statFields(pid)?.[1]);
    if (Number.isInteger(ppid)) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  let total = 0;
  const todo = [root];
  for (let pid = todo.pop(); pid !== undefined; pid = todo.pop()) {
    total += cpuMs(pid);
    todo.push(...(children.get(pid) ?? []));
  }
  return total;
}

function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** The worker process and what it reports. */
export interface WorkerProcess {
  pid: number;
  ready: Extract<CapacityWorkerMessage, { type: 'ready' }>;
  /** The workflow thread's heap after a full collection; with `snapshotPath`, a heap snapshot is written there. */
  heap(snapshotPath?: string): Promise<Extract<CapacityWorkerMessage, { type: 'heap' }>>;
  /** Resolves when the Session's turn for input `seq` (or a later one) has finished. */
  turn(sessionId: string, seq: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startWorker(env: Record<string, string>, nodeFlags: string[] = []): Promise<WorkerProcess> {
  const args = [...nodeFlags, '--import', 'tsx', join(ROOT, 'bench', 'capacity-worker.ts')];
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, HARNESS_MODEL_PROVIDER: 'local', OPENAI_API_KEY: '', OPENAI_BASE_URL: '', ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const finished = new Map<string, number>();
  const waiters = new Map<string, Array<{ seq: number; resolve: () => void }>>();
  let heapWaiter: ((m: Extract<CapacityWorkerMessage, { type: 'heap' }>) => void) | undefined;
  let exited = false;
  const exit = new Promise<number | null>((r) =>
    child.once('exit', (code) => {
      exited = true;
      r(code);
    }),
  );
  const ready = await new Promise<Extract<CapacityWorkerMessage, { type: 'ready' }>>((resolveReady, reject) => {
    child.on('message', (m: CapacityWorkerMessage) => {
      if (m.type === 'ready') resolveReady(m);
      else if (m.type === 'heap') heapWaiter?.(m);
      else {
        finished.set(m.sessionId, Math.max(finished.get(m.sessionId) ?? 0, m.seq));
        const list = waiters.get(m.sessionId) ?? [];
        for (const w of list.filter((w) => w.seq <= m.seq)) w.resolve();
        waiters.set(
          m.sessionId,
          list.filter((w) => w.seq > m.seq),
        );
      }
    });
    void exit.then((code) => reject(new Error(`capacity worker exited (code ${code}) before it was ready`)));
  });
  return {
    pid: child.pid ?? 0,
    ready,
    heap: (snapshotPath) =>
      new Promise((r) => {
        heapWaiter = r;
        child.send({ type: 'heap', ...(snapshotPath ? { snapshotPath } : {}) });
      }),
    turn: (sessionId, seq, timeoutMs = 300_000) =>
      new Promise<void>((resolveTurn, reject) => {
        if ((finished.get(sessionId) ?? 0) >= seq) return resolveTurn();
        if (exited) return reject(new Error('the capacity worker has exited'));
        const timer = setTimeout(
          () => reject(new Error(`no turn.finished for ${sessionId} seq ${seq} in ${timeoutMs} ms`)),
          timeoutMs,
        );
        const list = waiters.get(sessionId) ?? [];
        list.push({
          seq,
          resolve: () => {
            clearTimeout(timer);
            resolveTurn();
          },
        });
        waiters.set(sessionId, list);
      }),
    async stop() {
      // SIGTERM: the SDK drains the worker, then the process closes its IPC channel and exits.
      if (!exited) child.kill('SIGTERM');
      await exit;
    },
  };
}

const sessionIdOf = (d: Driven) => d.handle.workflowId.replace(/^session:/, '');

/** Sends `text` to a Session and waits for its turn; returns signal → turn.finished in ms. */
export async function timedInput(worker: WorkerProcess, d: Driven, text: string): Promise<number> {
  const t0 = performance.now();
  const seq = await send(d, text);
  await worker.turn(sessionIdOf(d), seq);
  return performance.now() - t0;
}

/** Billable actions of each input kind, from the settled history before and after each input. */
async function countActions(
  client: Client,
  worker: WorkerProcess,
  taskQueue: string,
  samples: number,
  price: number,
): Promise<Record<Kind, KindActions>> {
  const plan: Array<[Kind, string]> = [
    ['initialize', TEXT.goal],
    ['new-phase', TEXT.newPhase],
    ['continue', TEXT.continue],
    ['continue', TEXT.continue],
    ['continue', TEXT.continue],
  ];
  const sums = {} as Record<
    Kind,
    { inputs: number; actions: number; events: number; cv: number; by: Record<string, number> }
  >;
  for (const [kind] of plan) sums[kind] ??= { inputs: 0, actions: 0, events: 0, cv: 0, by: {} };
  for (let i = 0; i < samples; i++) {
    // The first input comes with the start, by signal-with-start, as the project's client sends it.
    let d: Driven | null = null;
    let before: Awaited<ReturnType<typeof settledEvents>> = [];
    for (const [kind, text] of plan) {
      if (d === null) {
        d = await startWith(client, taskQueue, FLAVORS.session, text);
        await worker.turn(sessionIdOf(d), 1);
      } else {
        await timedInput(worker, d, text);
      }
      const after = await settledEvents(client, d.handle.workflowId);
      const added = after.slice(before.length);
      before = after;
      const s = sums[kind];
      s.inputs++;
      s.actions += billableActions(added);
      s.events += added.length;
      s.cv += changeVersionUpserts(added);
      for (const [c, n] of Object.entries(actionsByCategory(added))) s.by[c] = (s.by[c] ?? 0) + n;
    }
    if (d === null) continue;
    await close(d);
    await d.handle.result();
  }
  const out = {} as Record<Kind, KindActions>;
  for (const [kind, s] of Object.entries(sums) as Array<[Kind, (typeof sums)[Kind]]>) {
    const actions = round(s.actions / s.inputs);
    out[kind] = {
      inputs: s.inputs,
      actions,
      byCategory: Object.fromEntries(Object.entries(s.by).map(([c, n]) => [c, round(n / s.inputs)])),
      events: round(s.events / s.inputs),
      changeVersionUpserts: round(s.cv / s.inputs),
      usdPerMillionInputs: round(actions * price),
    };
  }
  return out;
}

/** `workflows` fresh workflows of `flavor`, set up untimed, then `inputs` continue inputs each at once, and close. */
async function saturate(
  client: Client,
  worker: WorkerProcess,
  serverPid: number,
  taskQueue: string,
  flavor: Flavor,
  workflows: number,
  inputs: number,
) {
  const driven = await pool(Array.from({ length: workflows }), 8, async () => {
    const d = await start(client, taskQueue, flavor);
    if (flavor.name === 'session') {
      await timedInput(worker, d, TEXT.goal);
      await timedInput(worker, d, TEXT.newPhase);
    } else {
      await send(d, TEXT.goal);
      await decided(d, await send(d, TEXT.newPhase), 120_000, 20);
    }
    return d;
  });
  const w0 = cpuMs(worker.pid);
  const s0 = treeCpuMs(serverPid);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    driven.map(async (d) => {
      for (let i = 0; i < inputs; i++) await send(d, TEXT.continue);
      await close(d);
      await d.handle.result();
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const own = process.cpuUsage(c0);
  const total = workflows * inputs;
  return {
    inputs: total,
    inputsPerSecond: round(total / seconds),
    workerCpuMsPerInput: round((cpuMs(worker.pid) - w0) / total),
    serverCpuMsPerInput: round((treeCpuMs(serverPid) - s0) / total),
    clientCpuMsPerInput: round((own.user + own.system) / 1000 / total),
  };
}

/** A dev server of its own with a SQLite file, a client, the bench bundle, and the worker's environment. */
export async function embeddedStack(namespace: string, dynamicConfig?: Record<string, unknown>) {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-capacity-'));
  const dbFile = join(dataDir, 'temporal.db');
  const [port, uiPort, httpPort] = (await freePorts(3)) as [number, number, number];
  const server = await startDevServer({
    cliPath: ensureTemporalCli(),
    dbFile,
    port,
    uiPort,
    httpPort,
    namespace,
    log: () => {},
    ...(dynamicConfig ? { dynamicConfig } : {}),
  });
  const connection = await Connection.connect({
    address: server.address,
    channelArgs: { 'grpc.max_receive_message_length': 64 * 1024 * 1024 },
  });
  const client = new Client({ connection, namespace });
  const bundlePath = join(dataDir, 'workflow-bundle.js');
  writeFileSync(bundlePath, await workflowBundle());
  const taskQueue = `capacity-${Date.now().toString(36)}`;
  const env = {
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: namespace,
    HARNESS_TASK_QUEUE: taskQueue,
    HARNESS_DATA_DIR: dataDir,
    HARNESS_CATALOG_DIR: join(ROOT, 'catalog'),
    HARNESS_WORKFLOW_BUNDLE: bundlePath,
  };
  return {
    server,
    client,
    dbFile,
    taskQueue,
    env,
    async stop() {
      await connection.close();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs the whole scenario on its own dev server and worker process. */
export async function capacity(options: CapacityOptions, log: (line: string) => void): Promise<CapacityResult> {
  const startLoad = loadavg().map((x) => round(x));
  const eagerActivities = options.eagerActivities !== false;
  const stack = await embeddedStack(
    options.namespace,
    eagerActivities ? undefined : { 'system.enableActivityEagerExecution': false },
  );
  const { server, client, dbFile, env, taskQueue } = stack;
  const n = options.sessions;
  const measuringCache = n + options.saturationWorkflows * 2 + options.actionSamples + 20;
  // Enough heap for every Session at the size measured on main (2.4 MiB) twice over, plus the base.
  const heapMib = options.workerHeapMib ?? Math.max(2048, Math.ceil(n * 5 + 512));
  let worker = await startWorker({
    ...env,
    HARNESS_MAX_CACHED_WORKFLOWS: String(measuringCache),
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=${heapMib}`.trim(),
  });
  try {
    const serverPid = server.child.pid ?? 0;
    log(`  worker ${worker.pid} (${worker.ready.line}), server ${serverPid}`);
    // The action samples (or one Session) run and close first, so that what the first workflow
    // loads once is in the base.
    let actions: Record<Kind, KindActions> | undefined;
    if (options.heapOnly) {
      const d = await start(client, taskQueue, FLAVORS.session);
      await timedInput(worker, d, TEXT.goal);
      await close(d);
      await d.handle.result();
    } else {
      log(`  actions: ${options.actionSamples} Session(s), one input at a time, settled history between inputs`);
      actions = await countActions(client, worker, taskQueue, options.actionSamples, options.pricePerMillionActions);
    }

    const db = () => fileBytes(dbFile) + fileBytes(`${dbFile}-wal`);
    const snapshot = (name: string) =>
      options.snapshotDir ? join(options.snapshotDir, `${name}.heapsnapshot`) : undefined;
    if (options.snapshotDir) mkdirSync(options.snapshotDir, { recursive: true });
    const heap0 = await worker.heap(snapshot('base'));
    const db0 = db();
    log(`  memory: ${n} Sessions, a 10-input conversation each, ${options.concurrency} at a time`);
    const opened = await pool(Array.from({ length: n }), options.concurrency, async () => {
      const d = await start(client, taskQueue, FLAVORS.session);
      await timedInput(worker, d, TEXT.goal);
      await timedInput(worker, d, TEXT.newPhase);
      return d;
    });
    const heap2 = await worker.heap(snapshot('after-2'));
    const latencies: number[] = [];
    await pool(opened, options.concurrency, async (d) => {
      for (let i = 0; i < 8; i++) latencies.push(await timedInput(worker, d, TEXT.continue));
    });
    const heap10 = await worker.heap(snapshot('after-10'));
    const db10 = db();

    /** Saturation (both flavors), then the worker restarts for the replay cost. */
    const saturationAndReplay = async () => {
      log(
        `  saturation: ${options.saturationWorkflows} workflows × ${options.saturationInputs} continue inputs, baseline then Session`,
      );
      const baseline = await saturate(
        client,
        worker,
        serverPid,
        taskQueue,
        FLAVORS.baseline,
        options.saturationWorkflows,
        options.saturationInputs,
      );
      const session = await saturate(
        client,
        worker,
        serverPid,
        taskQueue,
        FLAVORS.session,
        options.saturationWorkflows,
        options.saturationInputs,
      );

      log('  replay: the worker restarts with the cache it sizes itself; evicted vs cached inputs');
      await worker.stop();
      worker = await startWorker(env);
      // A fresh Session first, so the samples do not pay the new process's first workflow (JIT, bundle).
      const warm = await start(client, taskQueue, FLAVORS.session);
      await timedInput(worker, warm, TEXT.goal);
      const samples = opened.slice(0, Math.min(10, opened.length));
      const evicted: number[] = [];
      const cached: number[] = [];
      for (const d of samples) {
        evicted.push(await timedInput(worker, d, TEXT.continue));
        cached.push(await timedInput(worker, d, TEXT.continue));
      }
      const historyEvents = median(
        await Promise.all(samples.map(async (d) => (await d.handle.fetchHistory()).events?.length ?? 0)),
      );
      return {
        defaultCache: {
          size: worker.ready.cacheSize,
          heapLimitBytes: worker.ready.heapLimitBytes,
          line: worker.ready.line,
        },
        saturation: { baseline, session, ratio: round(session.inputsPerSecond / baseline.inputsPerSecond) },
        replay: {
          samples: samples.length,
          historyEvents,
          evictedP50Ms: round(median(evicted)),
          cachedP50Ms: round(median(cached)),
          costMs: round(median(evicted) - median(cached)),
        },
      };
    };
    const rest = options.heapOnly ? undefined : await saturationAndReplay();
    const perSession = (a: number, b: number) => round((b - a) / n);
    return {
      sessions: n,
      measuringCache,
      eagerActivities,
      ...rest,
      heap: {
        baseBytes: heap0.usedBytes,
        after2Bytes: heap2.usedBytes,
        after10Bytes: heap10.usedBytes,
        perSessionAfter2Bytes: perSession(heap0.usedBytes, heap2.usedBytes),
        perSessionAfter10Bytes: perSession(heap0.usedBytes, heap10.usedBytes),
        perInputBytes: round((heap10.usedBytes - heap2.usedBytes) / (8 * n)),
      },
      rss: {
        baseBytes: heap0.rssBytes,
        after10Bytes: heap10.rssBytes,
        perSessionBytes: perSession(heap0.rssBytes, heap10.rssBytes),
      },
      sqlite: { perSessionBytes: perSession(db0, db10), totalBytes: db10 },
      latency: {
        inputs: latencies.length,
        concurrency: options.concurrency,
        p50Ms: round(percentile(latencies, 50)),
        p95Ms: round(percentile(latencies, 95)),
      },
      ...(actions ? { actions } : {}),
      pricePerMillionActions: options.pricePerMillionActions,
      loadavg: { start: startLoad, end: loadavg().map((x) => round(x)) },
    };
  } finally {
    await worker.stop();
    await stack.stop();
  }
}

/** MiB with two decimals. */
export const mib = (bytes: number) => Math.round((bytes / MIB) * 100) / 100;
