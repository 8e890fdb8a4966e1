/**
 * The recall index as it was before catalog-index.ts: MiniSearch with BM25+, prefix and fuzzy
 * matching. Kept in the bench as the reference that the new index's rankings are compared with, and
 * whose build time shows what a full rebuild used to cost.
 */
import MiniSearch from 'minisearch';
import { DEFAULT_RECALL, searchTerms, type CatalogEntry, type RecallOptions } from '../capabilities/catalog.js';

interface IndexedDoc {
  key: string;
  kind: CatalogEntry['kind'];
  id: string;
  name: string;
  description: string;
  tags: string;
  tools: string;
}

export class MiniSearchReference {
  private readonly index = new MiniSearch<IndexedDoc>({
    idField: 'key',
    fields: ['name', 'description', 'tags', 'tools', 'id'],
    storeFields: ['kind'],
    tokenize: searchTerms,
    processTerm: (term) => term,
    searchOptions: {
      boost: { name: 2, tags: 1.5, id: 1.5 },
      prefix: (term) => term.length >= 5,
      fuzzy: (term) => (term.length >= 6 ? 1 : false),
    },
  });

  constructor(entries: CatalogEntry[]) {
    const seen = new Set<string>();
    const docs: IndexedDoc[] = [];
    for (const entry of entries) {
      const key = `${entry.kind}:${entry.id}`;
      if (seen.has(key)) continue;
      seen.add(key);
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
    this.index.addAll(docs);
  }

  /** Recalled keys (`kind:id`) per kind, best first, as the old IndexedCatalog.recall ranked them. */
  recall(query: string, options: Partial<RecallOptions> = {}): { skills: string[]; toolsets: string[] } {
    const { k, floor } = { ...DEFAULT_RECALL, ...options };
    const hits = this.index
      .search(query, { combineWith: 'OR' })
      .map((hit) => ({ key: String(hit.id), kind: hit.kind as string, score: hit.score / hit.queryTerms.length }))
      .sort((a, b) => b.score - a.score || a.key.localeCompare(b.key));
    const pick = (kind: string) => {
      const keys: string[] = [];
      let best: number | undefined;
      for (const hit of hits) {
        if (hit.kind !== kind) continue;
        best ??= hit.score;
        if (hit.score < best * floor || keys.length >= k) break;
        keys.push(hit.key);
      }
      return keys;
    };
    return { skills: pick('skill'), toolsets: pick('toolset') };
  }
}
