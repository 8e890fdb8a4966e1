/**
 * Keeps an indexed catalog in step with the live MCP toolsets: merges them with the toolsets loaded
 * from the catalog folder (the folder wins on an id clash) and re-indexes only what changed.
 */
import type { CatalogEntry, IndexedCatalog, ToolsetEntry } from './catalog.js';
import type { CatalogProblem } from './catalog-files.js';
import { McpCatalog, type McpCatalogOptions } from './mcp-catalog.js';

/** The ids of the catalog's own toolsets, each with where it came from. */
function toolsetSources(base: CatalogEntry[]): Map<string, string> {
  return new Map(base.filter((e) => e.kind === 'toolset').map((e) => [e.id, e.source]));
}

/** The MCP toolsets whose id no catalog file uses (`taken`), and a problem for each that one does. */
function admitMcpToolsets(
  taken: Map<string, string>,
  toolsets: ToolsetEntry[],
): { added: ToolsetEntry[]; problems: CatalogProblem[] } {
  const problems: CatalogProblem[] = [];
  const added = toolsets.filter((toolset) => {
    const other = taken.get(toolset.id);
    if (other !== undefined) {
      problems.push({
        file: toolset.source,
        message: `toolset id "${toolset.id}" is already used by ${other}; skipped`,
      });
    }
    return other === undefined;
  });
  return { added, problems };
}

/**
 * The catalog's entries with the MCP toolsets added; an MCP toolset whose id a catalog file already
 * uses is left out and reported (the file wins, as it did before the server was configured).
 */
export function withMcpToolsets(
  base: CatalogEntry[],
  toolsets: ToolsetEntry[],
): { entries: CatalogEntry[]; problems: CatalogProblem[] } {
  const { added, problems } = admitMcpToolsets(toolsetSources(base), toolsets);
  return { entries: [...base, ...added], problems };
}

export interface McpToolsetsOptions extends Omit<McpCatalogOptions, 'onChange' | 'file'> {
  /** The `mcpServers` config file. */
  configPath: string;
  /** The catalog to keep up to date: on every change the MCP toolsets that changed are re-indexed. */
  catalog: IndexedCatalog;
  /** The entries loaded from the catalog folder (they win over an MCP toolset with the same id). */
  baseEntries: CatalogEntry[];
}

/**
 * Starts the MCP servers of `configPath` and keeps `catalog` in step with their tools. Resolves once
 * every server has been listed or has failed (each bounded by its timeout) and the catalog holds their
 * toolsets; `problems` holds the config file's bad entries and the servers that were skipped. Close
 * the returned catalog at shutdown.
 *
 * A refresh is incremental: only toolsets whose listing changed are removed and re-indexed, staged in
 * short slices between which the worker's event loop runs and then made visible at once (the whole
 * index used to be rebuilt, blocking the worker for seconds at 10,000 entries). Nothing on the way
 * walks the whole catalog: the catalog's own toolset ids are looked up once, and a toolset whose
 * listing did not change is the very object indexed before (McpCatalog keeps it). `applied()`
 * resolves once the catalog reflects every change seen so far.
 */
export async function connectMcpToolsets(
  options: McpToolsetsOptions,
): Promise<{ mcp: McpCatalog; problems: CatalogProblem[]; applied: () => Promise<void> }> {
  const { configPath, catalog, baseEntries, ...rest } = options;
  const taken = toolsetSources(baseEntries);
  let indexed = new Map<string, ToolsetEntry>();
  let applying = Promise.resolve();
  const apply = (toolsets: ToolsetEntry[]) => {
    const { added, problems } = admitMcpToolsets(taken, toolsets);
    const next = new Map(added.map((toolset) => [toolset.id, toolset]));
    const put = added.filter((toolset) => indexed.get(toolset.id) !== toolset);
    const remove = [...indexed.keys()].filter((id) => !next.has(id)).map((id) => ({ kind: 'toolset' as const, id }));
    indexed = next;
    // The catalog applies gradual updates in call order, so the newest settles after every earlier one.
    applying = catalog.updateGradually({ put, remove });
    return problems;
  };
  let started = false;
  const { mcp, problems } = McpCatalog.fromFile(configPath, {
    ...rest,
    onChange: (toolsets) => {
      const collisions = apply(toolsets);
      if (started) for (const p of collisions) rest.log?.(`mcp: ${p.file}: ${p.message}`);
    },
  });
  const report = await mcp.start();
  started = true;
  const applied = () => applying;
  await applied();
  return {
    mcp,
    problems: [...problems, ...report.problems, ...admitMcpToolsets(taken, report.toolsets).problems],
    applied,
  };
}
