/**
 * `npm start` and `harness dev`: the embedded stack in one command — `temporal server start-dev`
 * with a SQLite file under HARNESS_DATA_DIR and the Web UI, the project's search attributes, then
 * one worker. Ctrl-C stops both; the next start reuses the data.
 */
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { ConfigError, loadConfig } from '../worker/config.js';
import { isEntryPoint } from '../worker/entry-point.js';
import { startDevServer } from './dev-server.js';
import { ensureSearchAttributes } from '../worker/search-attributes-setup.js';
import { runWorker } from '../worker/run-worker.js';
import { startDevGateway } from './dev-gateway.js';
import { TemporalCliError, ensureTemporalCli } from './temporal-cli.js';

export interface DevOptions {
  /** Configuration source; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

const defaultLog = (line: string) => process.stdout.write(`[harness] ${line}\n`);

/**
 * Runs the dev server and a worker until the worker stops (SIGINT/SIGTERM), then stops the server.
 * Throws ConfigError for bad configuration and TemporalCliError when the CLI cannot be found or built.
 */
export async function runDev(options: DevOptions = {}): Promise<void> {
  const log = options.log ?? defaultLog;
  // Until the worker runs (and handles signals itself), Ctrl-C exits at once; the dev server is
  // killed on exit (see startDevServer), so nothing is left behind.
  const interrupt = () => {
    log('interrupted during start-up');
    process.exit(130);
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const base = loadConfig(options.env);
  const cliPath = ensureTemporalCli({ ...(options.env ? { env: options.env } : {}), log });
  const dbFile = join(base.dataDir, 'temporal.db');
  log(`starting temporal server start-dev (SQLite ${dbFile})`);
  const server = await startDevServer({
    cliPath,
    dbFile,
    port: base.dev.port,
    uiPort: base.dev.uiPort,
    httpPort: base.dev.httpPort,
    namespace: base.temporal.namespace,
    log,
  });
  const config = { ...base, temporal: { ...base.temporal, address: server.address } };
  let stopping = false;
  const stopServer = async () => {
    if (stopping) return;
    stopping = true;
    await server.stop();
  };
  void server.exited.then((code) => {
    if (!stopping) {
      log(`temporal server exited unexpectedly (code ${code}); stopping`);
      process.exit(1);
    }
  });
  try {
    const connection = await Connection.connect({ address: server.address });
    const added = await ensureSearchAttributes(connection, config.temporal.namespace);
    if (added.length > 0) log(`registered search attributes: ${added.join(', ')}`);
    await connection.close();
    log(`Temporal gRPC on ${server.address}, HTTP API on http://127.0.0.1:${config.dev.httpPort}`);
    log(`Temporal Web UI: ${server.uiUrl}/namespaces/${config.temporal.namespace}/workflows`);
    process.removeListener('SIGINT', interrupt);
    process.removeListener('SIGTERM', interrupt);
    await runWorker(config, log, { alongside: (built) => startDevGateway(config, built.events, log) });
  } finally {
    log('stopping temporal server');
    await stopServer();
  }
}

async function main(): Promise<void> {
  try {
    // `npm start -- --no-check` skips the start-up model check, as HARNESS_MODEL_CHECK=off does.
    await runDev(process.argv.includes('--no-check') ? { env: { ...process.env, HARNESS_MODEL_CHECK: 'off' } } : {});
  } catch (err) {
    const known = err instanceof ConfigError || err instanceof TemporalCliError;
    process.stderr.write(`${known ? err.message : ((err as Error).stack ?? String(err))}\n`);
    process.exit(1);
  }
}

if (isEntryPoint(import.meta.url)) await main();
