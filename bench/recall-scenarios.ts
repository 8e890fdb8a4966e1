/**
 * Recall latency over large synthetic catalogs (next to the MiniSearch index it replaced, and how
 * often the two agree), and an MCP refresh against a catalog of that size: how long it takes and the
 * longest the event loop was blocked meanwhile.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_RECALL, IndexedCatalog } from '../capabilities/catalog.js';
import { connectMcpToolsets } from '../capabilities/mcp-toolsets.js';
import type { FixtureTool } from '../test/support/mcp-fixture-server.js';
import { spawnHttpFixture, type ChildHttpFixture } from '../test/support/mcp-fixture.js';
import { watchEventLoop, type LoopBlock } from './event-loop.js';
import { MiniSearchReference } from './minisearch-reference.js';
import { Draw, SEED, benchQueries, measure, prng, syntheticEntries } from './recall.js';
import { median, round } from './stats.js';

export interface RecallRow {
  entries: number;
  buildMs: number;
  /** Over each query's median of its runs (preemption by other processes filtered out); the targets apply here. */
  p50Ms: number;
  p99Ms: number;
  /** Over every single run, noise included. */
  p99RawMs: number;
  /** The MiniSearch index this replaced, on the same entries and queries (skipped above 10,000: minutes to build). */
  reference: { buildMs: number; p50Ms: number; p99Ms: number; p99RawMs: number } | null;
  /** Share of queries whose recalled skills and toolsets (ids and order) equal the reference's. */
  agreement: number | null;
}

/** p50/p99 recall over `sizes` catalog entries; targets: p99 < 2 ms at 10,000 and < 10 ms at 100,000. */
export function recallLatency(sizes: number[]): RecallRow[] {
  const { vocabulary, queries } = benchQueries();
  const { k, floor } = DEFAULT_RECALL;
  return sizes.map((size) => {
    const entries = syntheticEntries(size, vocabulary, new Draw(prng(SEED + size)));
    let t0 = performance.now();
    const catalog = new IndexedCatalog(entries);
    const timing = measure(queries, performance.now() - t0, (q) => {
      const found = catalog.recall(q, { k, floor });
      return found.skills.length + found.toolsets.length;
    });
    let reference: RecallRow['reference'] = null;
    let agreement: number | null = null;
    if (size <= 10_000) {
      t0 = performance.now();
      const mini = new MiniSearchReference(entries);
      const refTiming = measure(queries, performance.now() - t0, (q) => {
        const found = mini.recall(q, { k, floor });
        return found.skills.length + found.toolsets.length;
      });
      reference = {
        buildMs: round(refTiming.buildMs),
        p50Ms: round(refTiming.p50ByQuery),
        p99Ms: round(refTiming.p99ByQuery),
        p99RawMs: round(refTiming.p99),
      };
      const keys = (q: string) => {
        const found = catalog.recall(q, { k, floor });
        return JSON.stringify([found.skills.map((c) => `skill:${c.id}`), found.toolsets.map((c) => `toolset:${c.id}`)]);
      };
      const same = queries.filter((q) => {
        const ref = mini.recall(q, { k, floor });
        return keys(q) === JSON.stringify([ref.skills, ref.toolsets]);
      }).length;
      agreement = round(same / queries.length);
    }
    return {
      entries: size,
      buildMs: round(timing.buildMs),
      p50Ms: round(timing.p50ByQuery),
      p99Ms: round(timing.p99ByQuery),
      p99RawMs: round(timing.p99),
      reference,
      agreement,
    };
  });
}

export interface McpRefreshResult {
  catalogEntries: number;
  servers: number;
  toolsPerServer: number;
  refreshes: number;
  /** Median over the refreshes: one server's tools changed, then `refresh()` until the catalog holds the change. */
  refreshMs: number;
  /**
   * Median over the refreshes of the CPU time the process spent on each (user + system, all threads):
   * the worker's own work, which the machine's load does not stretch as it does wall-clock time.
   */
  refreshCpuMs: number;
  /**
   * Median over the refreshes of the longest event-loop delay in each (monitorEventLoopDelay, 1 ms
   * resolution). The fixture servers run in child processes, so this is the worker's own work.
   */
  maxEventLoopBlockMs: number;
  /** The longest of those over all the refreshes. */
  worstEventLoopBlockMs: number;
  /** The same two figures from a 1 ms setInterval probe (longest gap between ticks beyond 1 ms). */
  probeBlockMs: number;
  worstProbeBlockMs: number;
  /**
   * Median and worst over the refreshes of the most CPU time the process spent between two probe
   * ticks: the worker's longest stretch of work without the event loop turning (an upper bound), which
   * the machine's load does not stretch as it does the wall-clock figures above.
   */
  busiestGapCpuMs: number;
  worstBusiestGapCpuMs: number;
  /** monitorEventLoopDelay over as long a stretch with nothing to do: the machine's own noise, for comparison. */
  idleEventLoopBlockMs: number;
  worstIdleEventLoopBlockMs: number;
  /** What rebuilding the whole index would block for at this size: the new index, and the MiniSearch one (skipped above 10,000 entries: minutes to build). */
  fullRebuildMs: number;
  fullRebuildMiniSearchMs: number | null;
  /** Whether every bench query recalls the same candidates (ids, order, scores) as a full rebuild. */
  sameAsFullRebuild: boolean;
}

const tools = (server: number, version: number, count: number): FixtureTool[] =>
  Array.from({ length: count }, (_, i) => ({
    name: `tool_${server}_${i}_v${version}`,
    description: `Operation ${i} of server ${server}, revision ${version}: search, convert and export documents.`,
  }));

/**
 * MCP servers (streamable HTTP fixtures, each in its own child process) beside `entries` catalog
 * entries: one server's tools change, then a refresh, `refreshes` times.
 */
export async function mcpRefresh(
  entries: number,
  servers = 5,
  toolsPerServer = 40,
  refreshes = 5,
): Promise<McpRefreshResult> {
  const { vocabulary, queries } = benchQueries();
  const base = syntheticEntries(entries, vocabulary, new Draw(prng(SEED + entries)));
  const catalog = new IndexedCatalog(base);
  const dir = mkdtempSync(join(tmpdir(), 'bench-mcp-'));
  const fixtures: ChildHttpFixture[] = [];
  try {
    for (let s = 0; s < servers; s++) fixtures.push(await spawnHttpFixture(tools(s, 0, toolsPerServer)));
    const configPath = join(dir, 'mcp.json');
    const mcpServers = Object.fromEntries(fixtures.map((f, s) => [`bench-${s}`, { url: f.url }]));
    writeFileSync(configPath, JSON.stringify({ mcpServers }));
    const { mcp, applied } = await connectMcpToolsets({ configPath, catalog, baseEntries: base });
    try {
      const refreshMs: number[] = [];
      const refreshCpuMs: number[] = [];
      const blocks: LoopBlock[] = [];
      const idle: LoopBlock[] = [];
      for (let version = 1; version <= refreshes; version++) {
        await (fixtures[0] as ChildHttpFixture).setTools(tools(0, version, toolsPerServer));
        const loop = watchEventLoop();
        const t0 = performance.now();
        const cpu0 = process.cpuUsage();
        await mcp.refresh();
        await applied();
        const cpu = process.cpuUsage(cpu0);
        const took = performance.now() - t0;
        blocks.push(loop.stop());
        refreshMs.push(took);
        refreshCpuMs.push((cpu.user + cpu.system) / 1000);
        if (!catalog.toolset('mcp-bench-0')?.tools[0]?.name.endsWith(`_v${version}`)) {
          throw new Error('the refresh was not applied');
        }
        const quiet = watchEventLoop();
        await new Promise((resolve) => setTimeout(resolve, took));
        idle.push(quiet.stop());
      }
      const { k, floor } = DEFAULT_RECALL;
      const recalled = (index: IndexedCatalog) => queries.map((q) => index.recall(q, { k, floor }));
      const incremental = JSON.stringify(recalled(catalog));
      let t = performance.now();
      catalog.replace([...base, ...mcp.toolsets()]);
      const fullRebuildMs = performance.now() - t;
      const sameAsFullRebuild = JSON.stringify(recalled(catalog)) === incremental;
      let fullRebuildMiniSearchMs: number | null = null;
      if (entries <= 10_000) {
        t = performance.now();
        new MiniSearchReference([...base, ...mcp.toolsets()]);
        fullRebuildMiniSearchMs = round(performance.now() - t);
      }
      const histogram = blocks.map((b) => b.histogramMs);
      const probe = blocks.map((b) => b.intervalMs);
      const quiet = idle.map((b) => b.histogramMs);
      return {
        catalogEntries: entries,
        servers,
        toolsPerServer,
        refreshes,
        refreshMs: round(median(refreshMs)),
        refreshCpuMs: round(median(refreshCpuMs)),
        maxEventLoopBlockMs: round(median(histogram)),
        worstEventLoopBlockMs: round(Math.max(...histogram)),
        probeBlockMs: round(median(probe)),
        worstProbeBlockMs: round(Math.max(...probe)),
        busiestGapCpuMs: round(median(blocks.map((b) => b.busiestGapCpuMs))),
        worstBusiestGapCpuMs: round(Math.max(...blocks.map((b) => b.busiestGapCpuMs))),
        idleEventLoopBlockMs: round(median(quiet)),
        worstIdleEventLoopBlockMs: round(Math.max(...quiet)),
        fullRebuildMs: round(fullRebuildMs),
        fullRebuildMiniSearchMs,
        sameAsFullRebuild,
      };
    } finally {
      await mcp.close();
    }
  } finally {
    await Promise.all(fixtures.map((f) => f.close()));
    rmSync(dir, { recursive: true, force: true });
  }
}
