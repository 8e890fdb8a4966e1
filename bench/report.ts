/**
 * The results file's shape and the printed table: every figure beside the baseline measured in the
 * same run, with the issue-13 target and whether this run meets it.
 */
import Table from 'cli-table3';
import { INPUT_KINDS, SPECULATION_SETTING, type ModelLatencyResult } from './model-latency-scenario.js';
import type { PathologicalResult } from './pathological-scenario.js';
import type { PragmaResult } from './pragma-scenario.js';
import type { StreamingResult } from './streaming-scenario.js';
import { mib, type CapacityResult } from './capacity-scenario.js';
import type { ConversationResult } from './conversation-scenario.js';
import { MAX_TEXT_CHARS } from '../contract/messages.js';
import { round } from './stats.js';
import type { McpRefreshResult, RecallRow } from './recall-scenarios.js';
import type { BurstResult, KindCost, LatencyResult, LongResult, RateResult } from './workflow-scenarios.js';

export interface BenchResults {
  startedAt: string;
  finishedAt?: string;
  machine: { node: string; cpus: number; loadavg: number[] };
  options: object;
  latency?: LatencyResult;
  events?: Record<'continue' | 'new-phase' | 'out-of-scope', KindCost>;
  throughput?: RateResult;
  burst?: BurstResult;
  long?: LongResult;
  recall?: RecallRow[];
  mcp?: McpRefreshResult;
  pragmas?: PragmaResult;
  pathological?: PathologicalResult;
  modelLatency?: ModelLatencyResult;
  streaming?: StreamingResult;
  capacity?: CapacityResult;
  conversation?: ConversationResult;
}

type Row = [measure: string, session: string, baseline: string, ratio: string, target: string, met: string];

const f = (n: number | undefined, unit = '') => (n === undefined || !Number.isFinite(n) ? '-' : `${n}${unit}`);
/** Bytes as KB with one decimal. */
const kb = (bytes: number) => Math.round(bytes / 102.4) / 10;
const verdict = (ok: boolean | undefined) => (ok === undefined ? '' : ok ? 'yes' : 'NO');

/** The table rows, one per figure; `met` is yes/NO where a target applies. */
export function reportRows(r: BenchResults): Row[] {
  const rows: Row[] = [];
  if (r.latency) {
    const l = r.latency;
    rows.push([
      `latency p50, ${l.inputs} sequential continue inputs`,
      f(l.p50Ms.session, ' ms'),
      f(l.p50Ms.baseline, ' ms'),
      f(l.ratioP50, '×'),
      '≤ 1.05×',
      verdict(l.ratioP50 <= 1.05),
    ]);
    rows.push(['latency p95', f(l.p95Ms.session, ' ms'), f(l.p95Ms.baseline, ' ms'), f(l.ratioP95, '×'), '', '']);
  }
  if (r.events) {
    for (const kind of ['continue', 'new-phase', 'out-of-scope'] as const) {
      const c = r.events[kind];
      const decided = Object.entries(c.decisions)
        .map(([d, n]) => `${n} ${d}`)
        .join(', ');
      const delta = Math.round((c.eventsPerInput.session - c.eventsPerInput.baseline) * 100) / 100;
      rows.push([
        `history events per ${kind} input (${decided})`,
        f(c.eventsPerInput.session),
        f(c.eventsPerInput.baseline),
        `${delta >= 0 ? '+' : ''}${delta}`,
        kind === 'continue' ? '≤ baseline + 0.5' : '',
        kind === 'continue' ? verdict(delta <= 0.5) : '',
      ]);
      rows.push([
        `billable actions per ${kind} input`,
        f(c.actionsPerInput.session),
        f(c.actionsPerInput.baseline),
        '',
        kind === 'continue' ? '= 3' : '',
        kind === 'continue' ? verdict(c.actionsPerInput.session === 3) : '',
      ]);
    }
  }
  if (r.throughput) {
    const t = r.throughput;
    rows.push([
      `throughput, ${t.workflows} workflows × ${t.inputsEach} inputs`,
      f(t.inputsPerSecond.session, '/s'),
      f(t.inputsPerSecond.baseline, '/s'),
      f(t.ratio, '×'),
      '≥ 0.95×',
      verdict(t.ratio >= 0.95),
    ]);
  }
  if (r.burst) {
    const b = r.burst;
    rows.push([
      `burst drain, ${b.inputsEach} inputs on one workflow`,
      f(b.inputsPerSecond.session, '/s'),
      f(b.inputsPerSecond.baseline, '/s'),
      f(b.ratio, '×'),
      '',
      '',
    ]);
    rows.push([
      `burst drain, judging ahead vs one input at a time (${f(b.oneAtATimePerSecond, '/s')})`,
      f(b.inputsPerSecond.session, '/s'),
      '',
      f(b.speedup, '×'),
      '≥ 1.5×',
      verdict(b.speedup >= 1.5),
    ]);
  }
  if (r.long) {
    const l = r.long;
    rows.push([
      `long Session ${l.inputs} inputs: ms/input first ${l.window}`,
      f(l.firstMsPerInput.mean, ' ms'),
      '',
      '',
      '',
      '',
    ]);
    rows.push([
      `long Session: ms/input last ${l.window}`,
      f(l.lastMsPerInput.mean, ' ms'),
      '',
      f(l.ratioLastFirst, '×'),
      '≤ 1.1×',
      verdict(l.ratioLastFirst <= 1.1),
    ]);
    rows.push([
      `long Session: carried state (max of ${l.runs - 1} continued runs)`,
      f(kb(l.carriedBytes.max), ' KB'),
      '',
      '',
      '< 256 KB',
      verdict(l.carriedBytes.max < 256 * 1024),
    ]);
    const info = (measure: string, value: string): Row => [measure, value, '', '', '', ''];
    const pair = (a: number, b: number, unit: string) => `${f(a, unit)} → ${f(b, unit)}`;
    const { first, last } = l.breakdown;
    rows.push(info('long Session: runs', f(l.runs)));
    rows.push(info('long Session: ms/input by tenth of the inputs', l.byTenth.join(' / ')));
    rows.push(
      info(
        'long Session, first → last: history KB / input',
        pair(kb(first.historyBytesPerInput), kb(last.historyBytesPerInput), ''),
      ),
    );
    rows.push(
      info(
        'long Session, first → last: workflow-task ms / input',
        pair(first.workflowTaskMsPerInput, last.workflowTaskMsPerInput, ' ms'),
      ),
    );
    for (const type of Object.keys(last.activityMsPerInput)) {
      rows.push(
        info(
          `long Session, first → last: ${type} ms / input`,
          pair(first.activityMsPerInput[type] ?? 0, last.activityMsPerInput[type] ?? 0, ' ms'),
        ),
      );
    }
    rows.push(
      info(
        'long Session, first → last: inputs / run, failed tasks / run',
        `${f(round(first.inputs / first.runs))}, ${f(first.failedTasksPerRun)} → ` +
          `${f(round(last.inputs / last.runs))}, ${f(last.failedTasksPerRun)}`,
      ),
    );
  }
  for (const row of r.recall ?? []) {
    const target = row.entries === 10_000 ? 2 : row.entries === 100_000 ? 10 : undefined;
    const agree =
      row.agreement === null ? '' : `, agrees with MiniSearch on ${Math.round(row.agreement * 100)}% of queries`;
    rows.push([
      `recall ${row.entries.toLocaleString('en-US')} entries p50${agree}`,
      f(row.p50Ms, ' ms'),
      row.reference ? `${row.reference.p50Ms} ms (MiniSearch)` : '',
      '',
      '',
      '',
    ]);
    rows.push([
      `recall ${row.entries.toLocaleString('en-US')} entries p99 (per-query medians; all runs: ${row.p99RawMs} ms)`,
      f(row.p99Ms, ' ms'),
      row.reference ? `${row.reference.p99Ms} ms (MiniSearch)` : '',
      '',
      target ? `< ${target} ms` : '',
      target ? verdict(row.p99Ms < target) : '',
    ]);
  }
  if (r.mcp) {
    const m = r.mcp;
    const same = m.sameAsFullRebuild ? 'recall = full rebuild' : 'recall DIFFERS from a full rebuild';
    const mini = m.fullRebuildMiniSearchMs === null ? '' : ` (MiniSearch: ${m.fullRebuildMiniSearchMs} ms)`;
    rows.push([
      `MCP refresh, incremental vs full rebuild (1 of ${m.servers} servers changed, ${m.catalogEntries} entries; ` +
        `CPU ${f(m.refreshCpuMs, ' ms')}; ${same})`,
      f(m.refreshMs, ' ms'),
      `${m.fullRebuildMs} ms full rebuild${mini}`,
      f(Math.round((100 * m.refreshMs) / m.fullRebuildMs) / 100, '×'),
      '',
      '',
    ]);
    rows.push([
      `MCP refresh: longest event-loop block, monitorEventLoopDelay, median of ${m.refreshes} ` +
        `(worst ${f(m.worstEventLoopBlockMs, ' ms')}; 1 ms probe ${f(m.probeBlockMs, ' ms')}, worst ${f(m.worstProbeBlockMs, ' ms')})`,
      f(m.maxEventLoopBlockMs, ' ms'),
      `${m.idleEventLoopBlockMs} ms idle (worst ${f(m.worstIdleEventLoopBlockMs, ' ms')})`,
      '',
      '≤ 50 ms',
      verdict(m.maxEventLoopBlockMs <= 50),
    ]);
    rows.push([
      `MCP refresh: most CPU between two 1 ms probe ticks, median of ${m.refreshes} (load-independent)`,
      f(m.busiestGapCpuMs, ' ms'),
      `worst ${f(m.worstBusiestGapCpuMs, ' ms')}`,
      '',
      '≤ 50 ms',
      verdict(m.worstBusiestGapCpuMs <= 50),
    ]);
  }
  if (r.pragmas) {
    const p = r.pragmas;
    rows.push([
      `dev server latency p50, WAL+NORMAL vs SQLite defaults (${p.inputs} inputs)`,
      f(p.wal.p50Ms, ' ms'),
      `${p.defaults.p50Ms} ms (defaults)`,
      f(p.ratioP50, '×'),
      'adopt if < 1',
      verdict(p.ratioP50 < 1),
    ]);
    rows.push([
      'dev stack start (server + worker)',
      f(p.wal.startMs, ' ms'),
      `${p.defaults.startMs} ms (defaults)`,
      '',
      '',
      '',
    ]);
  }
  if (r.pathological) {
    const p = r.pathological;
    for (const input of p.inputs) {
      rows.push([
        `pathological input alone: ${input.name} (p50 ${input.p50Ms} ms, max ${input.maxMs} ms)`,
        f(input.p99Ms, ' ms'),
        '',
        '',
        '',
        '',
      ]);
    }
    rows.push([
      `pathological inputs at ${MAX_TEXT_CHARS.toLocaleString('en-US')} chars, decision p99 (${p.rounds} runs each, ${p.threads} scoring thread(s))`,
      f(p.p99Ms, ' ms'),
      '',
      '',
      '< 50 ms',
      verdict(p.p99Ms < 50),
    ]);
    rows.push([
      'ordinary input while pathological inputs are scored: p50 / p99 (baseline: the same input alone)',
      `${f(p.ordinaryDuringPathological.p50Ms)} / ${f(p.ordinaryDuringPathological.p99Ms, ' ms')}`,
      `${f(p.ordinaryAlone.p50Ms)} / ${f(p.ordinaryAlone.p99Ms, ' ms')}`,
      f(round(p.ordinaryDuringPathological.p99Ms / p.ordinaryAlone.p99Ms), '×'),
      '',
      '',
    ]);
    rows.push([
      'main thread: longest event-loop stall while pathological inputs are scored',
      f(p.mainLoopMaxStallMs, ' ms'),
      '',
      '',
      '≤ 50 ms',
      verdict(p.mainLoopMaxStallMs <= 50),
    ]);
    for (const fence of p.fence) {
      rows.push([
        `parseModelJson: a code fence and ${fence.spaces.toLocaleString('en-US')} spaces`,
        f(fence.ms, ' ms'),
        '',
        '',
        '',
        '',
      ]);
    }
  }
  return rows;
}

const KIND_NAMES = { continue: 'continue', 'new-phase': 'new phase', initialize: 'initialize' } as const;

/** The model-latency scenario's two tables (helper depth; tokens, events and actions) and its overhead line. */
export function modelLatencyReport(m: ModelLatencyResult): string {
  const depth = new Table({
    style: { head: [], border: [] },
    head: ['input kind', 'target', 'measured p50 / max', 'model calls per input', 'met'],
    colAligns: ['left', 'left', 'right', 'left', 'left'],
  });
  for (const kind of INPUT_KINDS) {
    const k = m.defaults.byKind[kind];
    const calls = Object.entries(k.callsPerInput)
      .map(([role, n]) => `${role} ${n}`)
      .join(', ');
    depth.push([KIND_NAMES[kind], `≤ ${k.target}`, `${f(k.depthP50)} / ${f(k.depthMax)}`, calls, verdict(k.met)]);
  }
  const off = 'byKind' in m.noSpeculation ? m.noSpeculation : null;
  const tokens = new Table({
    style: { head: [], border: [] },
    head: [
      'input kind',
      'tokens per input (cached)',
      `${SPECULATION_SETTING}: false`,
      'history events per input',
      'billable actions per input',
    ],
    colAligns: ['left', 'right', 'right', 'right', 'right'],
  });
  for (const kind of INPUT_KINDS) {
    const k = m.defaults.byKind[kind];
    tokens.push([
      `${KIND_NAMES[kind]} (${k.inputs}: ${Object.entries(k.decisions)
        .map(([d, n]) => `${n} ${d}`)
        .join(', ')})`,
      `${f(k.tokensPerInput)} (${f(k.cachedTokensPerInput)})`,
      off ? f(off.byKind[kind].tokensPerInput) : '-',
      f(k.eventsPerInput),
      f(k.actionsPerInput),
    ]);
  }
  const overhead = off
    ? `speculative token overhead: ${f(m.speculativeOverheadPct ?? undefined, ' %')} of ${m.defaults.tokens} tokens (without speculation ${off.tokens}); ` +
      `${m.defaults.discarded} discarded step(s), ${m.defaults.unknownUsage} cancelled before answering (usage unknown, not in the tokens; a provider may still bill their prompt)`
    : 'speculation setting not available on this build';
  return [
    `model latency: ${m.latencyMs} ms per model call, ${m.sessions} Session(s) of initialize, ${m.continuesPerSession} continue and 1 new-phase input; load average ${m.loadavg.start} → ${m.loadavg.end}`,
    'helper depth = elapsed / latency − the agent calls of the input (signal to finished decision record)',
    `first input after the worker started (an initialize, not in the mix): ${m.firstInputMs} ms`,
    depth.toString(),
    tokens.toString(),
    overhead,
  ].join('\n');
}

/** The streaming scenario's table: first delta against finished turn, with and without speculation. */
export function streamingReport(s: StreamingResult): string {
  const table = new Table({
    style: { head: [], border: [] },
    head: ['settings', 'first delta p50 / p95', 'turn.finished p50 / p95', 'ratio p50 / p95', 'deltas = reply'],
    colAligns: ['left', 'right', 'right', 'right', 'right'],
  });
  const runs: Array<[string, StreamingResult['noSpeculation']]> = [
    ['defaults (speculation on)', s.defaults],
    [`${SPECULATION_SETTING}: false`, s.noSpeculation],
  ];
  for (const [name, run] of runs) {
    if (!('turns' in run)) {
      table.push([name, 'not available on this build', '', '', '']);
      continue;
    }
    table.push([
      name,
      `${f(run.firstDeltaMs.p50)} / ${f(run.firstDeltaMs.p95, ' ms')}`,
      `${f(run.finishedMs.p50)} / ${f(run.finishedMs.p95, ' ms')}`,
      `${f(run.ratioP50)} / ${f(run.ratioP95)}`,
      `${run.textMatched} of ${run.turns.length} turns${run.withDeltas < run.turns.length ? ` (${run.turns.length - run.withDeltas} without deltas)` : ''}`,
    ]);
  }
  return [
    `streaming: ${s.turns} continue inputs per run, replies of ~${s.replyChars} characters in ${s.chunkChars}-character chunks ${s.chunkDelayMs} ms apart (${s.streamMs} ms of pacing), helper calls ${s.helperLatencyMs} ms; load average ${s.loadavg.start} → ${s.loadavg.end}`,
    'times from the input signal, as a SessionClient.events subscriber saw them',
    table.toString(),
  ].join('\n');
}

/** The capacity scenario's table: memory, actions and cost, saturation against the baseline, replay. */
export function capacityReport(c: CapacityResult): string {
  const table = new Table({
    style: { head: [], border: [] },
    head: ['measure', 'Session', 'baseline', 'note'],
    colAligns: ['left', 'right', 'right', 'left'],
  });
  const kb = (bytes: number) => `${Math.round(bytes / 102.4) / 10} KB`;
  table.push(
    [
      'workflow-thread heap per Session after 10 inputs',
      `${mib(c.heap.perSessionAfter10Bytes)} MiB`,
      '',
      `used heap after a full GC, ${mib(c.heap.baseBytes)} → ${mib(c.heap.after10Bytes)} MiB`,
    ],
    ['workflow-thread heap per Session after 2 inputs', `${mib(c.heap.perSessionAfter2Bytes)} MiB`, '', ''],
    ['heap growth per continue input (2nd → 10th)', kb(c.heap.perInputBytes), '', ''],
    [
      'worker RSS per Session after 10 inputs',
      `${mib(c.rss.perSessionBytes)} MiB`,
      '',
      `${mib(c.rss.baseBytes)} → ${mib(c.rss.after10Bytes)} MiB`,
    ],
    ['SQLite bytes per Session after 10 inputs', kb(c.sqlite.perSessionBytes), '', 'temporal.db + WAL'],
    [
      `latency p50 / p95, ${c.latency.inputs} continue inputs, ${c.latency.concurrency} Sessions at a time`,
      `${f(c.latency.p50Ms)} / ${f(c.latency.p95Ms, ' ms')}`,
      '',
      'signal → turn.finished',
    ],
  );
  const sat = c.saturation;
  if (sat) {
    const s = sat.session;
    const b = sat.baseline;
    table.push(
      [
        `inputs/s at saturation (${s.inputs} continue inputs)`,
        f(s.inputsPerSecond, '/s'),
        f(b.inputsPerSecond, '/s'),
        f(sat.ratio, '×'),
      ],
      [
        'CPU per input: worker process',
        f(s.workerCpuMsPerInput, ' ms'),
        f(b.workerCpuMsPerInput, ' ms'),
        '/proc/<pid>/stat',
      ],
      [
        'CPU per input: dev server process tree',
        f(s.serverCpuMsPerInput, ' ms'),
        f(b.serverCpuMsPerInput, ' ms'),
        `eager activity execution ${c.eagerActivities ? 'on' : 'off (--capacity-eager-activities off)'}`,
      ],
      [
        'CPU per input: the bench client (signals)',
        f(s.clientCpuMsPerInput, ' ms'),
        f(b.clientCpuMsPerInput, ' ms'),
        'this process, on the same cores',
      ],
    );
  }
  const actions = c.actions;
  for (const kind of actions ? (['initialize', 'new-phase', 'continue'] as const) : []) {
    const a = actions![kind];
    const by = Object.entries(a.byCategory)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    table.push([
      `billable actions per ${KIND_NAMES[kind]} input (${a.inputs} inputs)`,
      f(a.actions),
      '',
      `${by}; ${f(a.events)} events, of them ${f(a.changeVersionUpserts)} TemporalChangeVersion upserts (exempt)`,
    ]);
  }
  for (const kind of actions ? (['initialize', 'new-phase', 'continue'] as const) : []) {
    table.push([
      `USD per million ${KIND_NAMES[kind]} inputs`,
      `$${f(actions![kind].usdPerMillionInputs)}`,
      '',
      `at $${c.pricePerMillionActions} per million actions`,
    ]);
  }
  const r = c.replay;
  if (r) {
    table.push([
      `input to an evicted Session vs a cached one (p50 of ${r.samples}, ${r.historyEvents} history events)`,
      `${f(r.evictedP50Ms)} / ${f(r.cachedP50Ms, ' ms')}`,
      '',
      `replay cost ${f(r.costMs, ' ms')}`,
    ]);
  }
  return [
    `capacity: ${c.sessions} Sessions held (cache ${c.measuringCache} while measuring); load average ${c.loadavg.start.join(' ')} → ${c.loadavg.end.join(' ')}`,
    c.defaultCache ? `worker default at its heap limit: ${c.defaultCache.line}` : 'heap-only run',
    table.toString(),
  ].join('\n');
}

/** The capacity conversation's table: heap per cached Session along one conversation, and what it carries. */
export function conversationReport(c: ConversationResult): string {
  const table = new Table({
    style: { head: [], border: [] },
    head: [
      'after inputs',
      'heap per Session',
      'without compiled code',
      'growth per input since the previous point',
      'without compiled code',
    ],
    colAligns: ['right', 'right', 'right', 'right', 'right'],
  });
  for (const p of c.points) {
    table.push([
      p.inputs,
      `${mib(p.perSessionBytes)} MiB`,
      p.perSessionDataBytes === undefined ? '-' : `${mib(p.perSessionDataBytes)} MiB`,
      `${kb(p.perInputBytes)} KB`,
      p.perInputDataBytes === undefined ? '-' : `${Math.round(p.perInputDataBytes)} B`,
    ]);
  }
  // Results written before the late window was measured have no `late`.
  const late = c.late
    ? `late growth per input, ${c.late.from}th → ${c.late.to}th: ${Math.round(c.late.perInputDataBytes)} B without compiled code (${Math.round(c.late.perInputBytes)} B with it)`
    : 'late growth per input: - (fewer than 300 inputs)';
  const lists = c.carried
    ? Object.entries(c.carried.lists)
        .filter(([, l]) => l.items > 0)
        .map(([name, l]) => `${name} ${l.items} (${kb(l.bytes)} KB)`)
        .join(', ')
    : 'not read';
  return [
    `capacity conversation: ${c.sessions} Session(s) × ${c.inputs} inputs, workflow-thread used heap after a full GC (base ${mib(c.baseBytes)} MiB); load average ${c.loadavg.start.join(' ')} → ${c.loadavg.end.join(' ')}`,
    table.toString(),
    late,
    `growth per input from the 10th to the ${c.inputs}th: ${kb(c.perInputAfter10Bytes)} KB; latency p50 / p95 ${f(c.latency.p50Ms)} / ${f(c.latency.p95Ms, ' ms')}`,
    `carried into the next run after ${c.inputs + 1} inputs: ${c.carried ? `${kb(c.carried.bytes)} KB` : '-'}; lists: ${lists}`,
  ].join('\n');
}

export function printReport(r: BenchResults): void {
  const table = new Table({
    style: { head: [], border: [] },
    head: ['measure', 'Session', 'baseline', 'ratio / Δ', 'target', 'met'],
    colAligns: ['left', 'right', 'right', 'right', 'left', 'left'],
  });
  const rows = reportRows(r);
  for (const row of rows) table.push(row);
  console.log(`node ${r.machine.node}, ${r.machine.cpus} CPUs, load average ${r.machine.loadavg.join(' ')} at start`);
  if (rows.length > 0) console.log(table.toString());
  if (r.modelLatency) console.log(modelLatencyReport(r.modelLatency));
  if (r.streaming) console.log(streamingReport(r.streaming));
  if (r.capacity) console.log(capacityReport(r.capacity));
  if (r.conversation) console.log(conversationReport(r.conversation));
}
