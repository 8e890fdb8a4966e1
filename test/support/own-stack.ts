/**
 * A dev server of a test's own (with the Web UI and HTTP API on free ports, SQLite in a temp folder)
 * and a worker built by createSessionWorker against it: for tests that need what the shared test
 * server does not offer, such as the UI or the HTTP API.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import type { RoleModels } from '../../models/roles.js';
import { loadConfig } from '../../worker/config.js';
import { createSessionWorker, type BuiltWorker } from '../../worker/create-worker.js';
import { startDevServer, type DevServer } from '../../dev/dev-server.js';
import { catalog, uniqueId } from './harness.js';
import { freePorts } from './ports.js';

export interface OwnStack {
  server: DevServer;
  built: BuiltWorker;
  taskQueue: string;
  httpPort: number;
  stop(): Promise<void>;
}

export async function startOwnStack(options: {
  name: string;
  models: RoleModels;
  /** Extra worker environment, e.g. HARNESS_ENCRYPTION_KEYS. */
  env?: Record<string, string>;
  uiCodecEndpoint?: string;
}): Promise<OwnStack> {
  const [port, uiPort, httpPort] = (await freePorts(3)) as [number, number, number];
  const dataDir = mkdtempSync(join(tmpdir(), `harness-${options.name}-`));
  const taskQueue = uniqueId(options.name);
  const server = await startDevServer({
    cliPath: inject('temporalCliPath'),
    dbFile: join(dataDir, 'temporal.db'),
    port,
    uiPort,
    httpPort,
    namespace: 'default',
    ...(options.uiCodecEndpoint ? { uiCodecEndpoint: options.uiCodecEndpoint } : {}),
    log: () => {},
  });
  const built = await createSessionWorker(
    loadConfig({
      ...options.env,
      TEMPORAL_ADDRESS: server.address,
      HARNESS_TASK_QUEUE: taskQueue,
      HARNESS_DATA_DIR: dataDir,
    }),
    {
      // An encrypting worker needs a bundle with its interceptor module: it bundles its own at start.
      ...(options.env?.HARNESS_ENCRYPTION_KEYS ? {} : { workflowBundle: { codePath: inject('workflowBundlePath') } }),
      models: options.models,
      catalog: catalog(),
    },
  );
  const running = built.worker.run();
  return {
    server,
    built,
    taskQueue,
    httpPort,
    async stop() {
      built.worker.shutdown();
      await running;
      await built.close();
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
