/**
 * Builds the Session worker from configuration: catalog, role models, activities, and a Temporal
 * worker on the task queue. Shared by `npm run worker`, `npm start` and the tests.
 */
import { createRequire } from 'node:module';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { IndexedCatalog } from '../capabilities/catalog.js';
import { loadCatalogDir, type CatalogProblem } from '../capabilities/catalog-files.js';
import { createActivities, type SessionDirectory } from '../activities/index.js';
import { LocalModels } from '../models/local-models.js';
import { connectMcpToolsets, type McpCatalog } from '../capabilities/mcp-catalog.js';
import type { MemoryBackend } from '../capabilities/memory-model.js';
import { openMemoryStore } from '../capabilities/open-memory-store.js';
import { OpenAIModels } from '../models/openai-models.js';
import type { RoleModels } from '../models/roles.js';
import type { HarnessConfig } from './config.js';
import { temporalSessionDirectory } from './session-directory.js';

const require = createRequire(import.meta.url);

export function createModels(config: HarnessConfig['models']): RoleModels {
  if (config.provider === 'openai') {
    return new OpenAIModels({
      ...(config.baseURL ? { baseURL: config.baseURL } : {}),
      ...(config.apiKey ? { apiKey: config.apiKey } : {}),
      models: config.byRole,
      jsonMode: config.jsonMode,
    });
  }
  return new LocalModels();
}

export interface BuiltWorker {
  worker: Worker;
  connection: NativeConnection;
  models: RoleModels;
  catalog: IndexedCatalog;
  catalogProblems: CatalogProblem[];
  mcp: McpCatalog | undefined;
  memories: MemoryBackend;
  /** Stops MCP servers and closes the memory store and both connections. */
  close(): Promise<void>;
}

/** Creates (but does not run) a worker. `workflowBundle` skips bundling when a prebuilt bundle exists. */
export async function createSessionWorker(
  config: HarnessConfig,
  overrides: Partial<Pick<WorkerOptions, 'workflowBundle'>> & {
    models?: RoleModels;
    catalog?: IndexedCatalog;
    /** Wraps the session directory (tests use it to stop a worker at a chosen point). */
    wrapSessions?: (sessions: SessionDirectory) => SessionDirectory;
    memories?: MemoryBackend;
    log?: (line: string) => void;
  } = {},
): Promise<BuiltWorker> {
  let catalog = overrides.catalog;
  let catalogProblems: CatalogProblem[] = [];
  let mcp: McpCatalog | undefined;
  if (!catalog) {
    const loaded = loadCatalogDir(config.catalogDir);
    catalog = new IndexedCatalog(loaded.entries);
    catalogProblems = loaded.problems;
    if (config.mcp.configPath) {
      const connected = await connectMcpToolsets({
        configPath: config.mcp.configPath,
        catalog,
        baseEntries: loaded.entries,
        timeoutMs: config.mcp.timeoutMs,
        refreshIntervalMs: config.mcp.refreshIntervalMs,
        ...(overrides.log ? { log: overrides.log } : {}),
      });
      mcp = connected.mcp;
      catalogProblems = [...catalogProblems, ...connected.problems];
    }
  }
  let memories: MemoryBackend | undefined = overrides.memories;
  const opened: Array<() => Promise<void> | void> = [
    () => mcp?.close(),
    () => (overrides.memories ? undefined : memories?.close()),
  ];
  let closed = false;
  const closeAll = async () => {
    if (closed) return;
    closed = true;
    for (const close of [...opened].reverse()) await close();
  };
  try {
    memories ??= await openMemoryStore({ url: config.memoryUrl, file: config.memoryDb });
    const models = overrides.models ?? createModels(config.models);
    const connection = await NativeConnection.connect({ address: config.temporal.address });
    opened.push(() => connection.close());
    const clientConnection = await Connection.connect({ address: config.temporal.address });
    opened.push(() => clientConnection.close());
    const directory = temporalSessionDirectory(
      new Client({ connection: clientConnection, namespace: config.temporal.namespace }),
    );
    const sessions = overrides.wrapSessions ? overrides.wrapSessions(directory) : directory;
    const worker = await Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      ...(overrides.workflowBundle
        ? { workflowBundle: overrides.workflowBundle }
        : { workflowsPath: require.resolve('../workflows/index.ts') }),
      activities: createActivities({
        models,
        catalog,
        memories,
        recall: config.recall,
        sessions,
        ...(mcp ? { mcp } : {}),
      }),
    });
    return { worker, connection, models, catalog, catalogProblems, mcp, memories, close: closeAll };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
