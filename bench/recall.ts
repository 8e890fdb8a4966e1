/**
 * Recall latency at 100, 1,000 and 10,000 catalog entries: `npx tsx bench/recall.ts`.
 *
 * Entries and queries are synthetic, drawn with a seeded PRNG from the demo catalog's vocabulary,
 * so every run measures the same data. Each size reports index build time and p50/p99 recall
 * latency for skills/toolsets (IndexedCatalog, BM25+) and for memories (SQLite FTS5
 * bm25), next to a baseline measured in the same run: a linear scan with substring matching.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Table from 'cli-table3';
import { DEFAULT_RECALL, IndexedCatalog, type CatalogEntry } from '../capabilities/catalog.js';
import { loadCatalogDir } from '../capabilities/catalog-files.js';
import { MemoryStore, type MemoryScope, type NewMemory } from '../capabilities/memory-store.js';
import { isEntryPoint } from '../worker/entry-point.js';

const SIZES = [100, 1_000, 10_000];
const QUERIES = 50;
const RUNS_PER_QUERY = 10;
export const SEED = 0x5eed;

/** mulberry32: a small, well-known seeded PRNG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Draw {
  constructor(private readonly random: () => number) {}
  int(min: number, max: number): number {
    return min + Math.floor(this.random() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.random() * items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }
  words(vocabulary: readonly string[], min: number, max: number): string[] {
    return Array.from({ length: this.int(min, max) }, () => this.pick(vocabulary));
  }
}

/** Words of the demo catalog, in first-seen order (so the draw does not depend on Set iteration quirks). */
export function demoVocabulary(entries: CatalogEntry[]): string[] {
  const words = new Set<string>();
  const add = (text: string) => {
    for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) if (word.length > 2) words.add(word);
  };
  for (const entry of entries) {
    add(`${entry.name} ${entry.description} ${entry.tags.join(' ')}`);
    if (entry.kind === 'toolset') for (const tool of entry.tools) add(`${tool.name} ${tool.description}`);
  }
  return [...words];
}

export function syntheticEntries(size: number, vocabulary: string[], draw: Draw): CatalogEntry[] {
  return Array.from({ length: size }, (_, i): CatalogEntry => {
    const base = {
      name: draw.words(vocabulary, 2, 4).join(' '),
      description: draw.words(vocabulary, 18, 36).join(' '),
      tags: draw.words(vocabulary, 4, 8),
      source: 'bench',
    };
    // Roughly the demo catalog's mix: three skills to two toolsets.
    if (i % 5 < 3) return { kind: 'skill', id: `bench-skill-${i}`, ...base, instructions: () => '' };
    const tools = Array.from({ length: draw.int(2, 5) }, (_, t) => ({
      name: `${draw.words(vocabulary, 2, 2).join('_')}_${t}`,
      description: draw.words(vocabulary, 8, 16).join(' '),
      inputSchema: { type: 'object' },
      requiresApproval: false,
    }));
    return { kind: 'toolset', id: `bench-toolset-${i}`, ...base, tools };
  });
}

function syntheticMemories(size: number, vocabulary: string[], draw: Draw): NewMemory[] {
  return Array.from({ length: size }, (_, i) => {
    const roll = i % 10;
    const scope: MemoryScope =
      roll < 4 ? 'global' : roll < 7 ? { sessionId: `session-${i % 50}` } : { userId: `user-${i % 20}` };
    return { text: draw.words(vocabulary, 12, 40).join(' '), tags: draw.words(vocabulary, 0, 3), scope };
  });
}

/** The baseline: every entry's text lowercased once, then each query scans all of it for each term. */
class LinearScan {
  private readonly docs: Array<{ key: string; text: string }>;
  constructor(docs: Array<{ key: string; text: string }>) {
    this.docs = docs.map((d) => ({ key: d.key, text: d.text.toLowerCase() }));
  }
  recall(query: string, k: number): string[] {
    const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    const hits: Array<{ key: string; matched: number }> = [];
    for (const doc of this.docs) {
      let matched = 0;
      for (const term of terms) if (doc.text.includes(term)) matched++;
      if (matched > 0) hits.push({ key: doc.key, matched });
    }
    return hits
      .sort((a, b) => b.matched - a.matched)
      .slice(0, k)
      .map((h) => h.key);
  }
}

function entryText(entry: CatalogEntry): string {
  const tools = entry.kind === 'toolset' ? entry.tools.map((t) => `${t.name} ${t.description}`).join(' ') : '';
  return `${entry.id} ${entry.name} ${entry.description} ${entry.tags.join(' ')} ${tools}`;
}

export interface Timing {
  buildMs: number;
  /** Percentiles over every sample. On a loaded machine p99 is mostly the OS descheduling the process. */
  p50: number;
  p99: number;
  /** Percentiles over each query's median of its runs: the cost of the query, with preemption filtered out. */
  p50ByQuery: number;
  p99ByQuery: number;
  hits: number;
}

function time<T>(fn: () => T): { ms: number; value: T } {
  const start = performance.now();
  const value = fn();
  return { ms: performance.now() - start, value };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** Runs every query RUNS_PER_QUERY times after one warm-up pass; returns latency percentiles in ms. */
export function measure(queries: string[], buildMs: number, recall: (query: string) => number): Timing {
  for (const query of queries) recall(query);
  const samples: number[] = [];
  const byQuery: number[][] = queries.map(() => []);
  let hits = 0;
  for (let run = 0; run < RUNS_PER_QUERY; run++) {
    queries.forEach((query, q) => {
      const { ms, value } = time(() => recall(query));
      samples.push(ms);
      byQuery[q]?.push(ms);
      hits += value;
    });
  }
  samples.sort((a, b) => a - b);
  const medians = byQuery
    .map((runs) =>
      percentile(
        [...runs].sort((a, b) => a - b),
        50,
      ),
    )
    .sort((a, b) => a - b);
  return {
    buildMs,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    p50ByQuery: percentile(medians, 50),
    p99ByQuery: percentile(medians, 99),
    hits: hits / samples.length,
  };
}

const ms = (value: number) => (value >= 100 ? value.toFixed(0) : value >= 1 ? value.toFixed(1) : value.toFixed(3));

/** The demo catalog's vocabulary and the bench queries: three from the article, the rest drawn from it. */
export function benchQueries(): { vocabulary: string[]; queries: string[] } {
  const demo = loadCatalogDir(join(import.meta.dirname, '..', 'catalog'));
  if (demo.problems.length > 0) throw new Error(`demo catalog problems: ${JSON.stringify(demo.problems)}`);
  const vocabulary = demoVocabulary(demo.entries);
  const queryDraw = new Draw(prng(SEED));
  const queries = [
    'Research ComfyUI and deliver a Markdown guide',
    'Convert the Markdown we just created to Word',
    'Write the customer-support weekly report with charts',
    ...Array.from({ length: QUERIES - 3 }, () => queryDraw.words(vocabulary, 3, 8).join(' ')),
  ];
  return { vocabulary, queries };
}

function main(): void {
  const { vocabulary, queries } = benchQueries();
  const { k, floor } = DEFAULT_RECALL;
  const scratch = mkdtempSync(join(tmpdir(), 'recall-bench-'));
  const table = new Table({
    style: { head: [], border: [] },
    head: ['entries', 'what', 'build ms', 'p50 ms', 'p99 ms', 'hits/query'],
    colAligns: ['right', 'left', 'right', 'right', 'right', 'right'],
  });
  console.log(
    `node ${process.version}; vocabulary ${vocabulary.length} words from the demo catalog; seed ${SEED}; ` +
      `${queries.length} queries x ${RUNS_PER_QUERY} runs per row; k=${k}, floor=${floor}`,
  );
  try {
    for (const size of SIZES) {
      const draw = new Draw(prng(SEED + size));
      const entries = syntheticEntries(size, vocabulary, draw);
      const memories = syntheticMemories(size, vocabulary, draw);

      const catalogBuild = time(() => new IndexedCatalog(entries));
      const catalog = catalogBuild.value;
      const catalogTiming = measure(queries, catalogBuild.ms, (q) => {
        const found = catalog.recall(q, { k, floor });
        return found.skills.length + found.toolsets.length;
      });

      const scanBuild = time(() => new LinearScan(entries.map((e) => ({ key: e.id, text: entryText(e) }))));
      const scanTiming = measure(queries, scanBuild.ms, (q) => scanBuild.value.recall(q, 2 * k).length);

      const store = MemoryStore.open(join(scratch, `memory-${size}.db`));
      const memoryBuild = time(() => store.addMany(memories));
      const scope = { sessionId: 'session-7', userId: 'user-3' };
      const memoryTiming = measure(queries, memoryBuild.ms, (q) => store.recall(q, scope, { k, floor }).length);
      store.close();

      const memoryScanBuild = time(() => new LinearScan(memories.map((m, i) => ({ key: String(i), text: m.text }))));
      const memoryScanTiming = measure(queries, memoryScanBuild.ms, (q) => memoryScanBuild.value.recall(q, k).length);

      const rows: Array<[string, Timing]> = [
        ['skills+toolsets: IndexedCatalog (BM25+, typed postings)', catalogTiming],
        ['skills+toolsets: baseline linear substring scan', scanTiming],
        ['memories: SQLite FTS5 bm25 (file, WAL)', memoryTiming],
        ['memories: baseline linear substring scan', memoryScanTiming],
      ];
      for (const [what, t] of rows) {
        table.push([size.toLocaleString('en-US'), what, ms(t.buildMs), ms(t.p50), ms(t.p99), t.hits.toFixed(1)]);
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  console.log(table.toString());
  console.log(
    'build: IndexedCatalog construction / MemoryStore.addMany in one transaction / lowercasing for the scans.\n' +
      'hits/query: candidates returned (BM25 rows: per kind up to k, above the floor; scans: up to 2k or k).',
  );
}

if (isEntryPoint(import.meta.url)) main();
