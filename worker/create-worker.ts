/**
 * Builds the Session worker from configuration: catalog, role models, activities, and a Temporal
 * worker on the task queue. Shared by `npm run worker`, `npm start` and the tests.
 */
import { createRequire } from 'node:module';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { IndexedCatalog } from '../activities/catalog.js';
import { loadCatalogDir, type CatalogProblem } from '../activities/catalog-files.js';
import { createActivities, type SessionDirectory } from '../activities/index.js';
import { NoModels } from '../activities/no-models.js';
import { OpenAIModels } from '../activities/openai-models.js';
import type { RoleModels } from '../activities/roles.js';
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
  return new NoModels();
}

export interface BuiltWorker {
  worker: Worker;
  connection: NativeConnection;
  /** Client connection the activities use to start sub-sessions. */
  clientConnection: Connection;
  models: RoleModels;
  catalog: IndexedCatalog;
  catalogProblems: CatalogProblem[];
}

/** Creates (but does not run) a worker. `workflowBundle` skips bundling when a prebuilt bundle exists. */
export async function createSessionWorker(
  config: HarnessConfig,
  overrides: Partial<Pick<WorkerOptions, 'workflowBundle'>> & {
    models?: RoleModels;
    catalog?: IndexedCatalog;
    /** Wraps the session directory (tests use it to stop a worker at a chosen point). */
    wrapSessions?: (sessions: SessionDirectory) => SessionDirectory;
  } = {},
): Promise<BuiltWorker> {
  let catalog = overrides.catalog;
  let catalogProblems: CatalogProblem[] = [];
  if (!catalog) {
    const loaded = loadCatalogDir(config.catalogDir);
    catalog = new IndexedCatalog(loaded.entries);
    catalogProblems = loaded.problems;
  }
  const models = overrides.models ?? createModels(config.models);
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const clientConnection = await Connection.connect({ address: config.temporal.address });
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
    activities: createActivities({ models, catalog, recall: config.recall, sessions }),
  });
  return { worker, connection, clientConnection, models, catalog, catalogProblems };
}
