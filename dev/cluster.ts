/**
 * `npm run cluster`: a self-hosted Temporal cluster on this machine in one command — PostgreSQL,
 * temporal-server with PostgreSQL visibility, the Web UI, the Session search attributes — plus N
 * Session workers on one task queue sharing a PostgreSQL memory store. Ctrl-C stops the workers
 * (they drain), then the server, the UI and PostgreSQL; the data is thrown away.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { sharedContractOptions } from '../worker/shared-contract.js';
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, loadConfig } from '../worker/config.js';
import { isEntryPoint } from '../worker/entry-point.js';
import { PostgresError, findPostgresBin } from './postgres.js';
import { startTemporalCluster } from './temporal-cluster.js';
import { TemporalCliError } from './temporal-cli.js';
import { ensureClusterBinaries } from './temporal-server.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface ClusterRunOptions {
  workers: number;
  port?: number;
  uiPort?: number;
  ui: boolean;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

const defaultLog = (line: string) => process.stdout.write(`[cluster] ${line}\n`);

/** A worker process in its own group, its output prefixed with `[worker n]`. */
function spawnWorker(index: number, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'dev', 'cluster-worker.ts')], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream?.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) process.stdout.write(`[worker ${index}] ${line}\n`);
    });
  }
  return child;
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** Starts everything, then waits for Ctrl-C (or a cluster process dying) and stops everything. */
export async function runCluster(options: ClusterRunOptions): Promise<void> {
  const log = options.log ?? defaultLog;
  const env = options.env ?? process.env;
  const base = loadConfig(env);
  const pgBin = findPostgresBin(env);
  if (!pgBin)
    throw new PostgresError('PostgreSQL is not installed: apt-get install postgresql (or set HARNESS_PG_BIN)');
  // Until everything runs, Ctrl-C exits at once: every process we started is killed on exit.
  const interrupt = () => {
    log('interrupted during start-up');
    process.exit(130);
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const workers: ChildProcess[] = [];
  // Whatever happens to us, no worker outlives us (the cluster's own processes are covered likewise).
  process.once('exit', () => workers.forEach((child) => signalGroup(child, 'SIGKILL')));

  const binaries = ensureClusterBinaries({ env, log });
  const cluster = await startTemporalCluster({
    binaries,
    pgBin,
    namespace: base.temporal.namespace,
    ...(options.port ? { port: options.port } : {}),
    ...(options.uiPort ? { uiPort: options.uiPort } : {}),
    noUi: !options.ui,
    log,
  });
  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => {
    stopping ??= (async () => {
      log(`${reason}: stopping ${workers.length} workers, then the cluster`);
      await Promise.all(
        workers.map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = new Promise((r) => child.once('exit', r));
          signalGroup(child, 'SIGTERM');
          const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), 20_000);
          await exited;
          clearTimeout(timer);
        }),
      );
      await cluster.stop();
      log('stopped');
    })();
    return stopping;
  };
  const memoryUrl = await cluster.postgres.createDatabase('harness_memory');
  log('bundling the workflow code once for all workers');
  const bundlePath = join(cluster.dir, 'workflow-bundle.js');
  const bundle = await bundleWorkflowCode({
    workflowsPath: join(root, 'workflows', 'index.ts'),
    ...(await sharedContractOptions()),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: (m) => log(m), error: (m) => log(m) },
  });
  writeFileSync(bundlePath, bundle.code);
  const workerEnv = {
    ...env,
    TEMPORAL_ADDRESS: cluster.address,
    HARNESS_MEMORY_URL: memoryUrl,
    HARNESS_WORKFLOW_BUNDLE: bundlePath,
  };
  for (let i = 1; i <= options.workers && !stopping; i++) {
    const child = spawnWorker(i, workerEnv);
    workers.push(child);
    child.once('exit', (code, signal) => {
      if (!stopping)
        log(`worker ${i} (pid ${child.pid}) exited (${signal ?? code}); the others take over its Sessions`);
    });
  }
  void cluster.died.then((name) => {
    if (!stopping) {
      log(`${name} exited unexpectedly`);
      process.exitCode = 1;
      void stop('cluster process died').then(() => process.exit(1));
    }
  });
  log(`Temporal gRPC:      ${cluster.address} (namespace ${cluster.namespace})`);
  if (cluster.uiUrl) log(`Temporal Web UI:    ${cluster.uiUrl}/namespaces/${cluster.namespace}/workflows`);
  log(`PostgreSQL:         ${cluster.postgres.url()} (databases temporal, temporal_visibility, harness_memory)`);
  log(`Memory store:       HARNESS_MEMORY_URL=${memoryUrl}`);
  log(`Workers:            ${options.workers} on task queue "${base.temporal.taskQueue}"`);
  log(`Logs and config:    ${cluster.dir}`);
  log(`Send a message:     TEMPORAL_ADDRESS=${cluster.address} npx harness send demo "Hello" --wait`);
  log('Ctrl-C stops everything.');
  await new Promise<void>((resolveStopped) => {
    process.removeListener('SIGINT', interrupt);
    process.removeListener('SIGTERM', interrupt);
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.on(signal, () => void stop(signal).then(resolveStopped));
    }
  });
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number ≥ 0');
  return n;
}

async function main(): Promise<void> {
  const program = new Command('cluster')
    .description('a self-hosted Temporal cluster on PostgreSQL with N Session workers')
    .option('-w, --workers <n>', 'Session worker processes', positiveInt, 3)
    .option('--port <port>', 'Temporal frontend gRPC port (default: a free port)', positiveInt)
    .option('--ui-port <port>', 'Web UI port (default: a free port)', positiveInt)
    .option('--no-ui', 'do not start the Web UI server')
    .parse();
  const opts = program.opts<{ workers: number; port?: number; uiPort?: number; ui: boolean }>();
  try {
    await runCluster(opts);
  } catch (err) {
    const known = err instanceof ConfigError || err instanceof TemporalCliError || err instanceof PostgresError;
    process.stderr.write(`${known ? err.message : ((err as Error).stack ?? String(err))}\n`);
    process.exit(1);
  }
}

if (isEntryPoint(import.meta.url)) await main();
