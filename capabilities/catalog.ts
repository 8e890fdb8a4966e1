/**
 * The capability catalog behind recall: Skills and ToolSets indexed for BM25+ retrieval
 * (catalog-index.ts). Recall never asks a model to rank the whole catalog.
 */
import { performance } from 'node:perf_hooks';
import type { Candidate } from '../workflows/capabilities.js';
import { Bm25Index } from './catalog-index.js';

export { searchTerms } from './catalog-terms.js';

export interface ToolDeclaration {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  requiresApproval: boolean;
}

interface EntryBase {
  id: string;
  name: string;
  description: string;
  tags: string[];
  /** Where the entry came from: a folder, a file or an MCP server. */
  source: string;
}
export interface SkillEntry extends EntryBase {
  kind: 'skill';
  /** The SKILL.md body, handed to the agent only once the skill is loaded. */
  instructions: () => string;
}
export interface ToolsetEntry extends EntryBase {
  kind: 'toolset';
  tools: ToolDeclaration[];
  /**
   * Who runs the tools: `mcp`, the worker through its live connection to the server that listed
   * them; `external`, a backend service that answers with the `toolResult` signal. Absent: nobody
   * known runs them, so a call gets an error result instead of waiting forever.
   */
  execution?: 'mcp' | 'external';
}
export type CatalogEntry = SkillEntry | ToolsetEntry;

export interface RecallOptions {
  /** Candidates per kind. */
  k: number;
  /** Candidates scoring below this fraction of the best hit of their kind are left out. */
  floor: number;
}

export const DEFAULT_RECALL: RecallOptions = { k: 8, floor: 0.15 };

export interface CapabilityCatalog {
  recall(query: string, options?: Partial<RecallOptions>): { skills: Candidate[]; toolsets: Candidate[] };
  skill(id: string): SkillEntry | undefined;
  toolset(id: string): ToolsetEntry | undefined;
  size(): { skills: number; toolsets: number };
}

const KINDS: Array<CatalogEntry['kind']> = ['skill', 'toolset'];

/** The entry's text per index field (FIELDS order: name, description, tags, tools, id). */
function fieldsOf(entry: CatalogEntry): string[] {
  const tools =
    entry.kind === 'toolset' ? entry.tools.map((t) => `${t.name.replace(/_/g, ' ')} ${t.description}`).join(' ') : '';
  return [entry.name, entry.description, entry.tags.join(' '), tools, entry.id];
}

const keyOf = (entry: Pick<CatalogEntry, 'kind' | 'id'>) => `${entry.kind}:${entry.id}`;

/** Changes to apply to a catalog: entries to add or replace, and entries to remove. */
export interface CatalogChanges {
  put?: CatalogEntry[];
  remove?: Array<Pick<CatalogEntry, 'kind' | 'id'>>;
}

/**
 * An in-memory BM25+ index over catalog entries. `replace` rebuilds it whole (a catalog reload);
 * `update` and `updateGradually` change single entries (an MCP refresh).
 */
export class IndexedCatalog implements CapabilityCatalog {
  private index = new Bm25Index();
  private entries = new Map<string, CatalogEntry>();

  constructor(entries: CatalogEntry[] = []) {
    this.replace(entries);
  }

  /** Replaces every entry at once; a later entry with the kind and id of an earlier one is ignored. */
  replace(entries: CatalogEntry[]): void {
    const index = new Bm25Index();
    const map = new Map<string, CatalogEntry>();
    for (const entry of entries) {
      const key = keyOf(entry);
      if (map.has(key)) continue;
      map.set(key, entry);
      index.add(key, KINDS.indexOf(entry.kind), fieldsOf(entry));
    }
    this.index = index;
    this.entries = map;
  }

  /** Adds or replaces (by kind and id) and removes entries, one at a time. */
  update(changes: CatalogChanges): void {
    for (const entry of changes.remove ?? []) this.removeOne(entry);
    for (const entry of changes.put ?? []) this.putOne(entry);
  }

  /**
   * `update` in slices of about `sliceMs`, yielding to the event loop between them, so a large
   * refresh never holds up the worker's other work (workflow tasks, heartbeats) for long. Each entry
   * changes atomically; a recall during the update sees some entries changed and others not yet.
   */
  async updateGradually(changes: CatalogChanges, sliceMs = 10): Promise<void> {
    const work = [
      ...(changes.remove ?? []).map((entry) => () => this.removeOne(entry)),
      ...(changes.put ?? []).map((entry) => () => this.putOne(entry)),
    ];
    let sliceStart = performance.now();
    for (const step of work) {
      step();
      if (performance.now() - sliceStart >= sliceMs) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
  }

  private putOne(entry: CatalogEntry): void {
    const key = keyOf(entry);
    this.entries.set(key, entry);
    this.index.add(key, KINDS.indexOf(entry.kind), fieldsOf(entry));
  }

  private removeOne(entry: Pick<CatalogEntry, 'kind' | 'id'>): void {
    const key = keyOf(entry);
    this.entries.delete(key);
    this.index.remove(key);
  }

  /**
   * The top `k` skills and toolsets for `query`, each scored by BM25+ summed over the query terms it
   * matched (not multiplied by their number, as MiniSearch's ranking did: that factor squeezed every
   * single-aspect entry, such as the research skill for a task that asks for research and a guide,
   * under the relative floor).
   */
  recall(query: string, options: Partial<RecallOptions> = {}) {
    const { k, floor } = { ...DEFAULT_RECALL, ...options };
    const [skills = [], toolsets = []] = this.index.search(query, KINDS.length, k, floor);
    const candidates = (hits: typeof skills): Candidate[] =>
      hits.flatMap((hit) => {
        const entry = this.entries.get(hit.key);
        return entry ? [{ id: entry.id, name: entry.name, source: entry.source, score: hit.score }] : [];
      });
    return { skills: candidates(skills), toolsets: candidates(toolsets) };
  }

  skill(id: string): SkillEntry | undefined {
    const entry = this.entries.get(`skill:${id}`);
    return entry?.kind === 'skill' ? entry : undefined;
  }

  toolset(id: string): ToolsetEntry | undefined {
    const entry = this.entries.get(`toolset:${id}`);
    return entry?.kind === 'toolset' ? entry : undefined;
  }

  size() {
    let skills = 0;
    for (const e of this.entries.values()) if (e.kind === 'skill') skills++;
    return { skills, toolsets: this.entries.size - skills };
  }
}
