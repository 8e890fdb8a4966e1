/**
 * The bench's Temporal stack: its own dev server (the pinned CLI, SQLite file in a temp folder, the
 * Session search attributes) or a running server (`--address`), plus one in-process worker that
 * serves both the Session and the baseline workflow with the same activities and LocalModels (or the
 * models the scenario passes).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime, bundleWorkflowCode } from '@temporalio/worker';
import { IndexedCatalog } from '../capabilities/catalog.js';
import { loadCatalogDir } from '../capabilities/catalog-files.js';
import { startDevServer, type DevServer } from '../dev/dev-server.js';
import { ensureTemporalCli } from '../dev/temporal-cli.js';
import { LocalModels } from '../models/local-models.js';
import type { RoleModels } from '../models/roles.js';
import { freePorts } from '../test/support/ports.js';
import { loadConfig } from '../worker/config.js';
import { createSessionWorker, type BuiltWorker } from '../worker/create-worker.js';
import { sharedContractOptions } from '../worker/shared-contract.js';
import { ensureSearchAttributes } from '../worker/search-attributes-setup.js';

const ROOT = resolve(import.meta.dirname, '..');

let bundleCode: Promise<string> | undefined;
/** The Session and the baseline in one bundle, built once per process. */
export function workflowBundle(): Promise<string> {
  bundleCode ??= sharedContractOptions()
    .then((shared) =>
      bundleWorkflowCode({
        workflowsPath: join(ROOT, 'bench', 'workflows.ts'),
        ...shared,
        logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
      }),
    )
    .then((b) => b.code);
  return bundleCode;
}

export interface StackOptions {
  /** A running server; else the bench starts its own. */
  address?: string;
  namespace?: string;
  /** SQLite pragmas for an own server (undefined: the dev server's defaults). */
  sqlitePragmas?: Record<string, string>;
  /** The worker's role models (LocalModels unless set). */
  models?: RoleModels;
  /** Runs workflows in the main thread (the SDK's debug mode), so their heap is this thread's. */
  debugMode?: boolean;
}

export interface Stack {
  address: string;
  namespace: string;
  taskQueue: string;
  client: Client;
  built: BuiltWorker;
  stop(): Promise<void>;
}

let runtimeInstalled = false;

/** Starts (or connects to) a server and runs one worker on a fresh task queue. */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  if (!runtimeInstalled) {
    // Activity failures and workflow logs would drown the table.
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    runtimeInstalled = true;
  }
  const namespace = options.namespace ?? 'default';
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-bench-'));
  let server: DevServer | undefined;
  let address = options.address;
  if (!address) {
    const [port, uiPort, httpPort] = (await freePorts(3)) as [number, number, number];
    server = await startDevServer({
      cliPath: ensureTemporalCli(),
      dbFile: join(dataDir, 'temporal.db'),
      port,
      uiPort,
      httpPort,
      namespace,
      log: () => {},
      ...(options.sqlitePragmas ? { sqlitePragmas: options.sqlitePragmas } : {}),
    });
    address = server.address;
  }
  // The long Session's runs pass gRPC's default 4 MB receive limit (a 10,000-input run failed reading a
  // 4.36 MB history); the bench reads whole histories to count events and carried-state bytes.
  const connection = await Connection.connect({
    address,
    channelArgs: { 'grpc.max_receive_message_length': 64 * 1024 * 1024 },
  });
  if (options.address) await ensureSearchAttributes(connection, namespace);
  const client = new Client({ connection, namespace });
  const taskQueue = `bench-${Date.now().toString(36)}`;
  const built = await createSessionWorker(
    loadConfig({
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      HARNESS_TASK_QUEUE: taskQueue,
      HARNESS_DATA_DIR: dataDir,
      HARNESS_CATALOG_DIR: join(ROOT, 'catalog'),
    }),
    {
      workflowBundle: { code: await workflowBundle() },
      models: options.models ?? new LocalModels(),
      ...(options.debugMode ? { debugMode: true } : {}),
      catalog: new IndexedCatalog(loadCatalogDir(join(ROOT, 'catalog')).entries),
    },
  );
  const running = built.worker.run();
  return {
    address,
    namespace,
    taskQueue,
    client,
    built,
    async stop() {
      built.worker.shutdown();
      await running;
      await built.close();
      await connection.close();
      await server?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
