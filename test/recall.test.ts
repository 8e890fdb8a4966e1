/**
 * Recall on the demo catalog: the source article's tasks find the capabilities they need, and the
 * recall activity returns catalog and memory candidates together.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { IndexedCatalog, searchTerms, type CatalogEntry } from '../capabilities/catalog.js';
import { loadCatalogDir } from '../capabilities/catalog-files.js';
import { createActivities } from '../activities/index.js';
import { MemoryStore } from '../capabilities/memory-store.js';
import { LocalModels } from '../models/local-models.js';

const demo = loadCatalogDir('catalog');
const catalog = new IndexedCatalog(demo.entries);
const ids = (candidates: Array<{ id: string }>) => candidates.map((c) => c.id);

describe('recall on the demo catalog (default k and floor)', () => {
  it('"Research ComfyUI and deliver a Markdown guide": research and guide skills, web search', () => {
    const found = catalog.recall('Research ComfyUI and deliver a Markdown guide');
    expect(ids(found.skills).slice(0, 3).sort()).toEqual(['markdown-guide', 'technical-research', 'web-research']);
    expect(ids(found.toolsets).slice(0, 2)).toContain('web-search');
  });

  it('"Convert the Markdown we just created to Word": markdown-to-docx and doc-convert first', () => {
    const found = catalog.recall('Convert the Markdown we just created to Word');
    expect(found.skills[0]?.id).toBe('markdown-to-docx');
    expect(found.toolsets[0]?.id).toBe('doc-convert');
  });

  it('"Write the customer-support weekly report with charts": report and chart skills, ticketing and charts', () => {
    const found = catalog.recall('Write the customer-support weekly report with charts');
    expect(ids(found.skills).slice(0, 3).sort()).toEqual([
      'data-visualization',
      'support-ticket-report',
      'weekly-report',
    ]);
    expect(ids(found.toolsets).slice(0, 2).sort()).toEqual(['charts', 'ticketing']);
  });

  it('finds the same capabilities from extracted terms as from the raw text', () => {
    const found = catalog.recall(['ComfyUI', 'research', 'Markdown guide'].join(' '));
    expect(ids(found.skills)).toEqual(expect.arrayContaining(['technical-research', 'web-research', 'markdown-guide']));
  });

  it('matches Chinese tasks against Chinese tags through character bigrams', () => {
    expect(searchTerms('写客服周报')).toEqual(['写客', '客服', '服周', '周报']);
    const found = catalog.recall('帮我写客服周报，带图表');
    expect(ids(found.skills).slice(0, 3).sort()).toEqual([
      'data-visualization',
      'support-ticket-report',
      'weekly-report',
    ]);
    expect(ids(found.toolsets).slice(0, 2).sort()).toEqual(['charts', 'ticketing']);
    expect(catalog.recall('把刚才的 Markdown 转成 Word').skills[0]?.id).toBe('markdown-to-docx');
  });

  it('splits ASCII text as the Unicode path does (one non-ASCII word sends the whole text down it)', () => {
    for (const entry of demo.entries) {
      const text = `${entry.name} ${entry.description} ${entry.tags.join(' ')} ${entry.id}`;
      expect([...searchTerms(text), 'café']).toEqual(searchTerms(`${text} café`));
    }
    expect(searchTerms('Search_the web, v2 (TOP-10)')).toEqual(['search', 'web', 'v2', 'top', '10']);
  });

  it('returns each candidate with its id, name, source and a descending score', () => {
    const found = catalog.recall('Convert the Markdown we just created to Word');
    expect(found.skills[0]).toEqual({
      id: 'markdown-to-docx',
      name: 'Convert Markdown to Word (DOCX)',
      source: 'catalog/skills/markdown-to-docx/SKILL.md',
      score: expect.any(Number) as number,
    });
    for (const list of [found.skills, found.toolsets]) {
      const scores = list.map((c) => c.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
    }
  });

  it('honours k and the floor', () => {
    const query = 'Write the customer-support weekly report with charts';
    const wide = catalog.recall(query, { k: 30, floor: 0 });
    expect(wide.skills.length).toBeGreaterThan(3);
    expect(catalog.recall(query, { k: 2, floor: 0 }).skills).toHaveLength(2);
    const strict = catalog.recall(query, { k: 30, floor: 0.5 });
    const best = strict.skills[0]?.score ?? 0;
    expect(strict.skills.every((c) => c.score >= best * 0.5)).toBe(true);
    expect(strict.skills.length).toBeLessThan(wide.skills.length);
  });

  it('finds nothing for an empty query or stopwords only', () => {
    expect(catalog.recall('')).toEqual({ skills: [], toolsets: [] });
    expect(catalog.recall('the and of with')).toEqual({ skills: [], toolsets: [] });
  });
});

describe('IndexedCatalog.replace', () => {
  it('swaps the whole catalog, keeping the first of two entries with the same kind and id', () => {
    const index = new IndexedCatalog(demo.entries);
    const extra: CatalogEntry = {
      kind: 'toolset',
      id: 'mcp-vector-db',
      name: 'Vector DB',
      description: 'Embeddings similarity search over a vector database.',
      tags: [],
      source: 'mcp:vector-db',
      tools: [
        {
          name: 'nearest',
          description: 'Nearest neighbours',
          inputSchema: { type: 'object' },
          requiresApproval: false,
        },
      ],
    };
    expect(index.recall('vector embeddings').toolsets).toEqual([]);
    index.replace([...demo.entries, extra, { ...extra, name: 'Ignored duplicate' }]);
    expect(index.recall('vector embeddings').toolsets).toEqual([
      { id: 'mcp-vector-db', name: 'Vector DB', source: 'mcp:vector-db', score: expect.any(Number) as number },
    ]);
    expect(index.size()).toEqual({ skills: 30, toolsets: 19 });
    expect(index.toolset('mcp-vector-db')?.tools[0]?.name).toBe('nearest');
  });
});

describe('the recall activity', () => {
  const memories = MemoryStore.open(':memory:');
  afterAll(() => memories.close());

  it('returns skills, toolsets and the memories visible to the Session', async () => {
    // Other topics, as a real store holds: FTS5 gives a word found in most memories almost no weight.
    memories.addMany(
      ['Prefers metric units', 'Time zone is Europe/Berlin', 'Invoices are due on the 5th', 'Uses pnpm, not npm'].map(
        (text) => ({ text, scope: 'global' as const }),
      ),
    );
    const global = memories.add({
      text: 'Weekly support reports go to Dana on Fridays, charts as PNG',
      scope: 'global',
    });
    const mine = memories.add({
      text: 'This session: the weekly report covers the EMEA queue only',
      scope: { sessionId: 's-1' },
    });
    memories.add({ text: 'Another session: weekly report for APAC', scope: { sessionId: 's-2' } });
    const activities = createActivities({ models: new LocalModels(), catalog, memories, recall: { k: 5, floor: 0.1 } });
    const found = await activities.recall({
      sessionId: 's-1',
      terms: ['customer-support', 'weekly report', 'charts'],
      text: 'ignored while terms are present',
    });
    expect(found.skills[0]?.id).toBe('support-ticket-report');
    expect(found.toolsets[0]?.id).toBe('ticketing');
    expect(found.memories.map((m) => m.id).sort()).toEqual([global.id, mine.id].sort());
    expect(found.memories.map((m) => m.source).sort()).toEqual(['memory:global', 'memory:session:s-1']);
  });
});

describe('IndexedCatalog.updateGradually', () => {
  const toolset = (name: string, tools: number): CatalogEntry => ({
    kind: 'toolset',
    id: 'mcp-gradual',
    name,
    description: 'A toolset an MCP server lists.',
    tags: [],
    source: 'mcp:gradual',
    tools: Array.from({ length: tools }, (_, i) => ({
      name: `tool_${i}`,
      description: `Tool ${i} exports gradual reports.`,
      inputSchema: { type: 'object' },
      requiresApproval: false,
    })),
  });

  it('applies updates in call order, so the newest one settles last and wins', async () => {
    const index = new IndexedCatalog(demo.entries);
    // The first update takes many slices, the second one; one after the other all the same.
    const first = index.updateGradually({ put: [toolset('First listing', 400)] }, 0);
    let firstDone = false;
    void first.then(() => (firstDone = true));
    await index.updateGradually({ put: [toolset('Second listing', 1)] }, 0);
    expect(firstDone).toBe(true);
    expect(index.toolset('mcp-gradual')?.name).toBe('Second listing');
    const recalled = index.recall('gradual reports').toolsets.filter((c) => c.id === 'mcp-gradual');
    expect(recalled.map((c) => c.name)).toEqual(['Second listing']);
  });
});
