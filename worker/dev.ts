/**
 * `npm start`: the embedded stack in one command — `temporal server start-dev` with a SQLite file
 * under HARNESS_DATA_DIR and the Web UI, the project's search attributes, then one worker.
 * Ctrl-C stops both; the next start reuses the data.
 */
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { ConfigError, loadConfig } from './config.js';
import { startDevServer } from './dev-server.js';
import { ensureSearchAttributes } from './search-attributes-setup.js';
import { runWorker } from './run-worker.js';
import { TemporalCliError, ensureTemporalCli } from './temporal-cli.js';

const log = (line: string) => process.stdout.write(`[harness] ${line}\n`);

async function main(): Promise<void> {
  const base = loadConfig();
  const cliPath = ensureTemporalCli({ log });
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
    await runWorker(config, log);
  } finally {
    log('stopping temporal server');
    await stopServer();
  }
}

main().catch((err: unknown) => {
  const known = err instanceof ConfigError || err instanceof TemporalCliError;
  process.stderr.write(`${known ? err.message : ((err as Error).stack ?? String(err))}\n`);
  process.exit(1);
});
