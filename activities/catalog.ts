/**
 * The capability catalog behind recall: Skills and ToolSets indexed for BM25 retrieval (MiniSearch
 * ranks with BM25+). Recall never asks a model to rank the whole catalog.
 */
import MiniSearch from 'minisearch';
import type { Candidate } from '../workflows/capabilities.js';

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
  /** The SKILL.md body, read only when the skill is loaded. */
  instructions: () => string;
}
export interface ToolsetEntry extends EntryBase {
  kind: 'toolset';
  tools: ToolDeclaration[];
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

interface IndexedDoc {
  key: string;
  kind: CatalogEntry['kind'];
  id: string;
  name: string;
  description: string;
  tags: string;
  tools: string;
}

/** Lowercases and splits on anything that is not a letter or digit, keeping CJK runs whole. */
function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** An in-memory BM25 index over catalog entries. Rebuilt whole on `replace` (catalog refresh). */
export class IndexedCatalog implements CapabilityCatalog {
  private index = IndexedCatalog.emptyIndex();
  private entries = new Map<string, CatalogEntry>();

  constructor(entries: CatalogEntry[] = []) {
    this.replace(entries);
  }

  private static emptyIndex() {
    return new MiniSearch<IndexedDoc>({
      idField: 'key',
      fields: ['name', 'description', 'tags', 'tools', 'id'],
      storeFields: ['kind', 'id', 'name'],
      tokenize,
      searchOptions: { boost: { name: 2, tags: 1.5, id: 1.5 }, prefix: (term) => term.length >= 5, fuzzy: 0 },
    });
  }

  replace(entries: CatalogEntry[]): void {
    const index = IndexedCatalog.emptyIndex();
    const map = new Map<string, CatalogEntry>();
    for (const entry of entries) {
      const key = `${entry.kind}:${entry.id}`;
      if (map.has(key)) continue;
      map.set(key, entry);
      index.add({
        key,
        kind: entry.kind,
        id: entry.id,
        name: entry.name,
        description: entry.description,
        tags: entry.tags.join(' '),
        tools:
          entry.kind === 'toolset'
            ? entry.tools.map((t) => `${t.name.replace(/_/g, ' ')} ${t.description}`).join(' ')
            : '',
      });
    }
    this.index = index;
    this.entries = map;
  }

  recall(query: string, options: Partial<RecallOptions> = {}) {
    const { k, floor } = { ...DEFAULT_RECALL, ...options };
    const hits = this.index.search(query, { combineWith: 'OR' });
    const pick = (kind: CatalogEntry['kind']): Candidate[] => {
      const ofKind = hits.filter((h) => h.kind === kind);
      const best = ofKind[0]?.score ?? 0;
      return ofKind
        .filter((h) => h.score >= best * floor)
        .slice(0, k)
        .map((h) => {
          const entry = this.entries.get(h.id as string);
          return {
            id: String(h.id).slice(kind.length + 1),
            name: entry?.name ?? '',
            source: entry?.source ?? '',
            score: h.score,
          };
        });
    };
    return { skills: pick('skill'), toolsets: pick('toolset') };
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
