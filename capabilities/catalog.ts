/**
 * The capability catalog behind recall: Skills and ToolSets indexed for BM25+ retrieval
 * (catalog-index.ts). Recall never asks a model to rank the whole catalog.
 */
import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers/promises';
import type { Candidate } from '../contract/activity-contract.js';
import { Bm25Index, type FieldText, type StagedDoc } from './catalog-index.js';

export { searchTerms } from './catalog-terms.js';

export interface ToolDeclaration {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  requiresApproval: boolean;
  /** Labels the approval policy's rules match on (`writes-files`, `network`); from the toolset file or MCP config. */
  riskTags?: string[];
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

/** The entry's text per index field (FIELDS order: name, description, tags, tools, id); tools one piece per tool. */
function fieldsOf(entry: CatalogEntry): FieldText[] {
  const tools = entry.kind === 'toolset' ? entry.tools.map((t) => `${t.name.replace(/_/g, ' ')} ${t.description}`) : '';
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
 * `update` and `updateGradually` change the entries named (an MCP refresh), all at once.
 */
export class IndexedCatalog implements CapabilityCatalog {
  private index = new Bm25Index();
  private entries = new Map<string, CatalogEntry>();
  /** The gradual update under way (settled when none is): the next one starts after it. */
  private updating: Promise<void> = Promise.resolve();

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

  /** Removes, then adds or replaces (by kind and id), entries; a recall sees all of the changes or none. */
  update(changes: CatalogChanges): void {
    const index = this.index;
    const staged = (changes.put ?? []).map((entry) =>
      index.stage(keyOf(entry), KINDS.indexOf(entry.kind), fieldsOf(entry)),
    );
    this.commit(index, changes, staged);
  }

  /**
   * `update` without holding up the worker's event loop (workflow tasks, heartbeats) for long: the
   * changed entries are tokenised and indexed off to the side, in slices of about `sliceMs` with the
   * event loop running between them (a slice ends between two of a toolset's tools, so a server
   * listing thousands of them is spread over several), and then all of them become visible at once.
   * A recall meanwhile sees the catalog as it was before the update; one after it sees every change.
   * Gradual updates apply one after the other, in call order; a `replace` made while one is under
   * way wins over it.
   */
  updateGradually(changes: CatalogChanges, sliceMs = 10): Promise<void> {
    const run = this.updating.then(async () => {
      const index = this.index;
      const staged: StagedDoc[] = [];
      let sliceStart = performance.now();
      for (const entry of changes.put ?? []) {
        const steps = index.staging(keyOf(entry), KINDS.indexOf(entry.kind), fieldsOf(entry));
        for (let step = steps.next(); ; step = steps.next()) {
          if (step.done) {
            staged.push(step.value);
            break;
          }
          if (performance.now() - sliceStart >= sliceMs) {
            await setImmediate();
            sliceStart = performance.now();
          }
        }
      }
      // Replaced meanwhile: the catalog given to `replace` is the newer one.
      if (this.index === index) this.commit(index, changes, staged);
    });
    this.updating = run.catch(() => undefined);
    return run;
  }

  /** Makes `changes`, staged in `index`, visible together: in the index and in the entry map. */
  private commit(index: Bm25Index, changes: CatalogChanges, staged: StagedDoc[]): void {
    index.commit((changes.remove ?? []).map(keyOf), staged);
    for (const entry of changes.remove ?? []) this.entries.delete(keyOf(entry));
    for (const entry of changes.put ?? []) this.entries.set(keyOf(entry), entry);
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
