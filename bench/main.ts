/**
 * `npm run bench`: the Session against a bare-Temporal baseline on the same server in the same run,
 * plus recall, MCP refresh, dev-server pragma, fixed-latency model and streamed-reply measurements. Prints a table with the issue-13
 * targets and writes every figure to a JSON file (bench/results/latest.json by default).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { isEntryPoint } from '../worker/entry-point.js';
import { modelLatency } from './model-latency-scenario.js';
import { mcpRefresh, recallLatency } from './recall-scenarios.js';
import { pathological } from './pathological-scenario.js';
import { pragmas } from './pragma-scenario.js';
import { profiled } from './profile.js';
import { printReport, type BenchResults } from './report.js';
import { startStack } from './stack.js';
import { streaming } from './streaming-scenario.js';
import { DEFAULT_PRICE_PER_MILLION_ACTIONS, capacity } from './capacity-scenario.js';
import { conversation } from './conversation-scenario.js';
import { burst, historyCost, latency, longSession, throughput } from './workflow-scenarios.js';

export const SCENARIOS = [
  'latency',
  'events',
  'throughput',
  'burst',
  'long',
  'recall',
  'mcp',
  'pragmas',
  'pathological',
  'model-latency',
  'streaming',
  'capacity',
] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface BenchOptions {
  scenarios: Scenario[];
  address?: string;
  namespace: string;
  out: string;
  latencyInputs: number;
  eventInputs: number;
  sessions: number;
  inputsEach: number;
  burstInputs: number;
  longInputs: number;
  longBatch: number;
  recallSizes: number[];
  mcpEntries: number;
  /** Tools each MCP fixture server lists (40 unless set). */
  mcpTools?: number;
  pragmaInputs: number;
  /** Runs of each pathological input (10 unless set). */
  pathologicalRounds?: number;
  /** Latency of every model call in the model-latency scenario (1000 ms unless set). */
  modelLatencyMs?: number;
  /** Sessions of the model-latency mix, each an initialize, continues and a new phase (3 unless set). */
  modelLatencySessions?: number;
  /** Continue inputs per Session of the mix, half before and half after its new phase (4 unless set). */
  modelLatencyContinues?: number;
  /** Continue inputs timed per run of the streaming scenario (10 unless set). */
  streamingTurns?: number;
  /** About how long the agent's streamed reply is, in characters (600 unless set). */
  streamingReplyChars?: number;
  /** Characters per streamed chunk (8 unless set). */
  streamingChunkChars?: number;
  /** Pause between streamed chunks (20 ms unless set). */
  streamingChunkDelayMs?: number;
  /** Latency of each helper role's model call in the streaming scenario (0 unless set). */
  streamingHelperMs?: number;
  profile?: string;
  /** Sessions the capacity scenario holds open, 10 inputs each (100 unless set; thousands with --capacity-sessions). */
  capacitySessions?: number;
  /** Fresh workflows of each flavor in the capacity scenario's saturation burst (20 unless set). */
  capacityWorkflows?: number;
  /** Continue inputs each of those gets at once (10 unless set). */
  capacityInputs?: number;
  /** Sessions whose inputs are counted for billable actions (2 unless set). */
  capacityActionSamples?: number;
  /** USD per million Temporal Cloud actions (DEFAULT_PRICE_PER_MILLION_ACTIONS unless set). */
  pricePerMillionActions?: number;
  /** `--max-old-space-size` (MiB) of the capacity scenario's worker; default: enough for every Session. */
  capacityWorkerHeapMib?: number;
  /** Only the capacity scenario's memory part. */
  capacityHeapOnly?: boolean;
  /** False: the capacity scenario's server runs without eager activity execution. */
  capacityEagerActivities?: boolean;
  /** Directory for heap snapshots of the capacity worker's workflow thread at each memory point. */
  capacitySnapshots?: string;
  /**
   * Instead of the capacity scenario's parts: one conversation of this many inputs per Session
   * (one Session unless capacitySessions), heap per cached Session along the way (conversation-scenario.ts).
   */
  capacityConversation?: number;
}

const FULL = {
  latencyInputs: 60,
  eventInputs: 10,
  sessions: 100,
  inputsEach: 10,
  burstInputs: 1_500,
  longInputs: 10_000,
  longBatch: 25,
  recallSizes: [1_000, 10_000, 100_000],
  mcpEntries: 10_000,
  pragmaInputs: 40,
};
const QUICK: typeof FULL = {
  latencyInputs: 8,
  eventInputs: 3,
  sessions: 8,
  inputsEach: 4,
  burstInputs: 60,
  longInputs: 100,
  longBatch: 10,
  recallSizes: [1_000, 10_000],
  mcpEntries: 1_000,
  pragmaInputs: 5,
};

/** Runs the selected scenarios and returns (and writes) the results. */
export async function runBench(
  options: BenchOptions,
  log = (line: string) => console.log(line),
): Promise<BenchResults> {
  const results: BenchResults = {
    startedAt: new Date().toISOString(),
    machine: { node: process.version, cpus: cpus().length, loadavg: loadavg().map((x) => Number(x.toFixed(2))) },
    options: { ...options },
  };
  const selected = new Set(options.scenarios);
  const workflowScenarios = (['latency', 'events', 'throughput', 'burst', 'long'] as const).filter((s) =>
    selected.has(s),
  );
  if (workflowScenarios.length > 0) {
    log(options.address ? `using the server at ${options.address}` : 'starting a dev server and a bench worker');
    const stack = await startStack({
      ...(options.address ? { address: options.address } : {}),
      namespace: options.namespace,
    });
    try {
      const step = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
        log(`- ${name}`);
        const t0 = Date.now();
        const value = await profiled(options.profile, name, work);
        log(`  done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
        return value;
      };
      if (selected.has('latency')) results.latency = await step('latency', () => latency(stack, options.latencyInputs));
      if (selected.has('events')) results.events = await step('events', () => historyCost(stack, options.eventInputs));
      if (selected.has('throughput')) {
        results.throughput = await step('throughput', () => throughput(stack, options.sessions, options.inputsEach));
      }
      if (selected.has('burst')) results.burst = await step('burst', () => burst(stack, options.burstInputs));
      if (selected.has('long')) {
        results.long = await step('long', () => longSession(stack, options.longInputs, options.longBatch));
      }
    } finally {
      await stack.stop();
    }
  }
  if (selected.has('recall')) {
    log('- recall');
    results.recall = recallLatency(options.recallSizes);
  }
  if (selected.has('mcp')) {
    log('- mcp refresh');
    results.mcp = await mcpRefresh(options.mcpEntries, 5, options.mcpTools);
  }
  if (selected.has('pragmas')) {
    log('- dev server SQLite pragmas');
    results.pragmas = await pragmas(options.pragmaInputs);
  }
  if (selected.has('pathological')) {
    log('- pathological inputs');
    results.pathological = await pathological(options.pathologicalRounds ?? 10);
  }
  if (selected.has('model-latency')) {
    const latencyMs = options.modelLatencyMs ?? 1000;
    log(`- model latency (${latencyMs} ms per model call)`);
    results.modelLatency = await modelLatency(
      {
        latencyMs,
        sessions: options.modelLatencySessions ?? 3,
        continues: options.modelLatencyContinues ?? 4,
        ...(options.address ? { address: options.address } : {}),
        namespace: options.namespace,
      },
      log,
    );
  }
  if (selected.has('streaming')) {
    const o = {
      turns: options.streamingTurns ?? 10,
      replyChars: options.streamingReplyChars ?? 600,
      chunkChars: options.streamingChunkChars ?? 8,
      chunkDelayMs: options.streamingChunkDelayMs ?? 20,
      helperLatencyMs: options.streamingHelperMs ?? 0,
    };
    log(
      `- streaming (${o.replyChars}-character replies in ${o.chunkChars}-character chunks ${o.chunkDelayMs} ms apart)`,
    );
    results.streaming = await streaming(
      { ...o, ...(options.address ? { address: options.address } : {}), namespace: options.namespace },
      log,
    );
  }
  if (selected.has('capacity') && options.capacityConversation) {
    const o = {
      inputs: options.capacityConversation,
      sessions: options.capacitySessions ?? 1,
      namespace: options.namespace,
      ...(options.capacitySnapshots ? { snapshotDir: options.capacitySnapshots } : {}),
    };
    log(`- capacity conversation (${o.sessions} Session(s) × ${o.inputs} inputs on a worker process of their own)`);
    results.conversation = await conversation(o, log);
  } else if (selected.has('capacity')) {
    const o = {
      sessions: options.capacitySessions ?? 100,
      saturationWorkflows: options.capacityWorkflows ?? 20,
      saturationInputs: options.capacityInputs ?? 10,
      actionSamples: options.capacityActionSamples ?? 2,
      pricePerMillionActions: options.pricePerMillionActions ?? DEFAULT_PRICE_PER_MILLION_ACTIONS,
      concurrency: 8,
      namespace: options.namespace,
      ...(options.capacityWorkerHeapMib ? { workerHeapMib: options.capacityWorkerHeapMib } : {}),
      ...(options.capacityHeapOnly ? { heapOnly: true } : {}),
      ...(options.capacitySnapshots ? { snapshotDir: options.capacitySnapshots } : {}),
      ...(options.capacityEagerActivities === false ? { eagerActivities: false } : {}),
    };
    log(`- capacity (${o.sessions} Sessions on a worker process of their own)`);
    results.capacity = await capacity(o, log);
  }
  results.finishedAt = new Date().toISOString();
  mkdirSync(dirname(options.out), { recursive: true });
  writeFileSync(options.out, `${JSON.stringify(results, null, 2)}\n`);
  return results;
}

const int = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`expected a positive whole number, got "${value}"`);
  return n;
};

const wholeMs = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`expected a whole number of milliseconds, got "${value}"`);
  return n;
};

async function main(): Promise<void> {
  const program = new Command('bench')
    .description('Session vs bare-Temporal baseline, recall, MCP refresh and dev-server pragmas')
    .addOption(
      new Option('--scenarios <list>', `comma-separated, from ${SCENARIOS.join(', ')}`).default(
        'latency,events,throughput,burst,recall,mcp,pathological',
      ),
    )
    .option('--quick', 'small sizes everywhere (a smoke run of a minute or two)')
    .option('--long', 'add the long-Session scenario (10,000 inputs unless --long-inputs)')
    .option('--pragmas', 'add the dev-server SQLite pragma scenario (two dev servers, one after the other)')
    .option('--all', 'every scenario')
    .option('--address <host:port>', 'use a running Temporal server instead of starting one')
    .option('--namespace <name>', 'namespace', 'default')
    .option('--out <file>', 'results file', resolve(import.meta.dirname, 'results', 'latest.json'))
    .option('--latency-inputs <n>', 'sequential inputs per flavor', int)
    .option('--event-inputs <n>', 'continue inputs whose history cost is counted', int)
    .option('--sessions <n>', 'workflows per flavor in the throughput scenario', int)
    .option('--inputs-each <n>', 'inputs per workflow in the throughput scenario', int)
    .option('--burst-inputs <n>', 'inputs in the burst on one workflow', int)
    .option('--long-inputs <n>', 'inputs of the long Session', int)
    .option('--long-batch <n>', 'inputs signalled at once in the long Session', int)
    .option('--recall-sizes <list>', 'catalog sizes, comma-separated')
    .option('--mcp-entries <n>', 'catalog entries beside the MCP toolsets', int)
    .option('--mcp-tools <n>', 'tools each of the 5 MCP fixture servers lists (default 40)', int)
    .option('--pragma-inputs <n>', 'sequential inputs per pragma setting', int)
    .option('--pathological-rounds <n>', 'runs of each pathological input (default 10)', int)
    .option('--model-latency-ms <n>', 'latency of every model call in the model-latency scenario (default 1000)', int)
    .option('--model-latency-sessions <n>', 'Sessions of the model-latency mix (default 3)', int)
    .option('--model-latency-continues <n>', 'continue inputs per Session of the model-latency mix (default 4)', int)
    .option('--streaming-turns <n>', 'continue inputs timed per run of the streaming scenario (default 10)', int)
    .option('--streaming-reply-chars <n>', 'about how long the streamed agent reply is (default 600)', int)
    .option('--streaming-chunk-chars <n>', 'characters per streamed chunk (default 8)', int)
    .option('--streaming-chunk-delay-ms <n>', 'pause between streamed chunks (default 20)', wholeMs)
    .option(
      '--streaming-helper-ms <n>',
      'latency of each helper role call in the streaming scenario (default 0)',
      wholeMs,
    )
    .option('--capacity-sessions <n>', 'Sessions the capacity scenario holds, 10 inputs each (default 100)', int)
    .option('--capacity-workflows <n>', 'workflows of each flavor in the capacity saturation burst (default 20)', int)
    .option('--capacity-inputs <n>', 'continue inputs each of them gets at once (default 10)', int)
    .option('--capacity-action-samples <n>', 'Sessions whose inputs are counted for actions (default 2)', int)
    .option('--capacity-heap-only', 'capacity: only heap, RSS and SQLite per Session (a quick check)')
    .addOption(
      new Option('--capacity-eager-activities <mode>', "capacity: the server's eager activity execution")
        .choices(['on', 'off'])
        .default('on'),
    )
    .option(
      '--capacity-snapshots <dir>',
      "capacity: write heap snapshots of the worker's workflow thread here (base and at each memory point)",
    )
    .option(
      '--capacity-conversation <n>',
      'capacity: only a conversation of n inputs per Session (--capacity-sessions, default 1), heap per Session after 2, 10, 50, 100, ... inputs',
      int,
    )
    .option(
      '--capacity-worker-heap-mib <n>',
      "the capacity worker's --max-old-space-size (default: room for every Session)",
      int,
    )
    .option(
      '--price-per-million-actions <usd>',
      `USD per million Temporal Cloud actions (default ${DEFAULT_PRICE_PER_MILLION_ACTIONS})`,
      (v: string) => {
        const n = Number(v);
        if (!Number.isFinite(n) || n < 0) throw new Error(`expected a price in USD, got "${v}"`);
        return n;
      },
    )
    .option('--profile <dir>', 'write a CPU profile of each workflow scenario here and print the top functions');
  program.parse();
  const o = program.opts<Record<string, string | number | boolean | undefined>>();
  const sizes = o.quick ? QUICK : FULL;
  const pick = <K extends keyof typeof FULL>(key: K): (typeof FULL)[K] => (o[key] as (typeof FULL)[K]) ?? sizes[key];
  let scenarios = String(o.scenarios)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean) as Scenario[];
  if (o.all) scenarios = [...SCENARIOS];
  if (o.long) scenarios.push('long');
  if (o.pragmas) scenarios.push('pragmas');
  for (const s of scenarios) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario "${s}"`);
  const options: BenchOptions = {
    scenarios: [...new Set(scenarios)],
    ...(o.address ? { address: String(o.address) } : {}),
    namespace: String(o.namespace),
    out: resolve(String(o.out)),
    latencyInputs: pick('latencyInputs'),
    eventInputs: pick('eventInputs'),
    sessions: pick('sessions'),
    inputsEach: pick('inputsEach'),
    burstInputs: pick('burstInputs'),
    longInputs: pick('longInputs'),
    longBatch: pick('longBatch'),
    recallSizes: o.recallSizes ? String(o.recallSizes).split(',').map(int) : sizes.recallSizes,
    mcpEntries: pick('mcpEntries'),
    ...(o.mcpTools ? { mcpTools: Number(o.mcpTools) } : {}),
    pragmaInputs: pick('pragmaInputs'),
    ...(o.pathologicalRounds ? { pathologicalRounds: Number(o.pathologicalRounds) } : {}),
    ...(o.modelLatencyMs ? { modelLatencyMs: Number(o.modelLatencyMs) } : {}),
    ...(o.modelLatencySessions ? { modelLatencySessions: Number(o.modelLatencySessions) } : {}),
    ...(o.modelLatencyContinues ? { modelLatencyContinues: Number(o.modelLatencyContinues) } : {}),
    ...(o.streamingTurns ? { streamingTurns: Number(o.streamingTurns) } : {}),
    ...(o.streamingReplyChars ? { streamingReplyChars: Number(o.streamingReplyChars) } : {}),
    ...(o.streamingChunkChars ? { streamingChunkChars: Number(o.streamingChunkChars) } : {}),
    ...(o.streamingChunkDelayMs !== undefined ? { streamingChunkDelayMs: Number(o.streamingChunkDelayMs) } : {}),
    ...(o.streamingHelperMs !== undefined ? { streamingHelperMs: Number(o.streamingHelperMs) } : {}),
    ...(o.profile ? { profile: resolve(String(o.profile)) } : {}),
    ...(o.capacitySessions ? { capacitySessions: Number(o.capacitySessions) } : {}),
    ...(o.capacityWorkflows ? { capacityWorkflows: Number(o.capacityWorkflows) } : {}),
    ...(o.capacityInputs ? { capacityInputs: Number(o.capacityInputs) } : {}),
    ...(o.capacityActionSamples ? { capacityActionSamples: Number(o.capacityActionSamples) } : {}),
    ...(o.capacityWorkerHeapMib ? { capacityWorkerHeapMib: Number(o.capacityWorkerHeapMib) } : {}),
    ...(o.capacityHeapOnly ? { capacityHeapOnly: true } : {}),
    ...(o.capacityEagerActivities === 'off' ? { capacityEagerActivities: false } : {}),
    ...(o.capacitySnapshots ? { capacitySnapshots: resolve(String(o.capacitySnapshots)) } : {}),
    ...(o.capacityConversation ? { capacityConversation: Number(o.capacityConversation) } : {}),
    ...(o.pricePerMillionActions !== undefined ? { pricePerMillionActions: Number(o.pricePerMillionActions) } : {}),
  };
  const results = await runBench(options);
  printReport(results);
  console.log(`results: ${options.out}`);
}

if (isEntryPoint(import.meta.url)) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
      process.exit(1);
    },
  );
}
