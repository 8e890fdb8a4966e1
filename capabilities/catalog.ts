/**
 * The capability catalog behind recall: Skills and ToolSets indexed for BM25 retrieval (MiniSearch
 * ranks with BM25+). Recall never asks a model to rank the whole catalog.
 */
import { createRequire } from 'node:module';
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

interface IndexedDoc {
  key: string;
  kind: CatalogEntry['kind'];
  id: string;
  name: string;
  description: string;
  tags: string;
  tools: string;
}

// stopword ships no type declarations; its English list is a plain string array.
const { eng } = createRequire(import.meta.url)('stopword') as { eng: string[] };
const STOPWORDS = new Set(eng);
// Letters with their combining marks (accents, Indic vowel signs) and digits.
const WORD_RUNS = /[\p{L}\p{M}\p{N}]+/gu;
// Han, kana: scripts written without spaces between words.
const UNSPACED_SCRIPT = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]+)/u;

/**
 * The analyzer shared by the catalog index and the memory store: lowercase words split on anything
 * that is not a letter or digit, with runs of Chinese or Japanese characters cut into overlapping
 * character bigrams (as Lucene's CJK analyzer does), so "写客服周报" matches a tag "周报" without a
 * word segmenter. English stopwords are dropped: they say nothing about a capability, yet under
 * BM25+ every entry containing one would gain a share of score from it.
 */
export function searchTerms(text: string): string[] {
  const terms: string[] = [];
  for (const run of text.toLowerCase().match(WORD_RUNS) ?? []) {
    for (const part of run.split(UNSPACED_SCRIPT)) {
      if (part === '') continue;
      if (!UNSPACED_SCRIPT.test(part)) {
        if (!STOPWORDS.has(part)) terms.push(part);
        continue;
      }
      const chars = Array.from(part);
      if (chars.length === 1) terms.push(part);
      for (let i = 0; i + 1 < chars.length; i++) terms.push(`${chars[i]}${chars[i + 1]}`);
    }
  }
  return terms;
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
      // Only `kind`: a stored field named like the id field would overwrite the hit's id.
      storeFields: ['kind'],
      tokenize: searchTerms,
      // searchTerms already lowercases and drops stopwords; the default processTerm would lowercase again.
      processTerm: (term) => term,
      searchOptions: {
        boost: { name: 2, tags: 1.5, id: 1.5 },
        // A longer query word also finds the words it starts ("schedule" -> "scheduling"), and a long
        // word one edit away ("reports" -> "report"); short words must match exactly.
        prefix: (term) => term.length >= 5,
        fuzzy: (term) => (term.length >= 6 ? 1 : false),
      },
    });
  }

  /** Replaces every entry at once; a later entry with the kind and id of an earlier one is ignored. */
  replace(entries: CatalogEntry[]): void {
    const index = IndexedCatalog.emptyIndex();
    const map = new Map<string, CatalogEntry>();
    const docs: IndexedDoc[] = [];
    for (const entry of entries) {
      const key = `${entry.kind}:${entry.id}`;
      if (map.has(key)) continue;
      map.set(key, entry);
      docs.push({
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
    index.addAll(docs);
    this.index = index;
    this.entries = map;
  }

  /**
   * The top `k` skills and toolsets for `query`, each scored by BM25+ summed over the query terms it
   * matched. MiniSearch multiplies that sum by the number of matched terms; recall divides it back
   * out, because that extra factor squeezes every single-aspect entry (a task that asks for research
   * and a guide wants the research skill too) under the relative floor.
   */
  recall(query: string, options: Partial<RecallOptions> = {}) {
    const { k, floor } = { ...DEFAULT_RECALL, ...options };
    const hits = this.index
      .search(query, { combineWith: 'OR' })
      .map((hit) => ({
        key: String(hit.id),
        kind: hit.kind as CatalogEntry['kind'],
        score: hit.score / hit.queryTerms.length,
      }))
      .sort((a, b) => b.score - a.score || a.key.localeCompare(b.key));
    const pick = (kind: CatalogEntry['kind']): Candidate[] => {
      const candidates: Candidate[] = [];
      let best: number | undefined;
      for (const hit of hits) {
        if (hit.kind !== kind) continue;
        best ??= hit.score;
        if (hit.score < best * floor || candidates.length >= k) break;
        const entry = this.entries.get(hit.key);
        if (entry) candidates.push({ id: entry.id, name: entry.name, source: entry.source, score: hit.score });
      }
      return candidates;
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
