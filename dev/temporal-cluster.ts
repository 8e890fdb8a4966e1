/**
 * A self-hosted Temporal cluster on this machine: PostgreSQL (dev/postgres.ts) holding the
 * persistence and visibility schemas, `temporal-server` with PostgreSQL visibility (custom search
 * attributes work), the `default` namespace and the Session search attributes, and the Web UI server.
 * Every process has its own process group and is stopped (or, if we die, killed) with the cluster.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { ensureSearchAttributes } from '../worker/search-attributes-setup.js';
import { DEFAULT_DYNAMIC_CONFIG } from './dev-server.js';
import { startPostgres, type PostgresServer } from './postgres.js';
import type { ClusterBinaries } from './temporal-server.js';

export interface ClusterOptions {
  binaries: ClusterBinaries;
  /** PostgreSQL bin folder (see findPostgresBin). */
  pgBin: string;
  namespace?: string;
  /** Frontend gRPC and Web UI ports; free ports when left out. */
  port?: number;
  uiPort?: number;
  /** No Web UI server. */
  noUi?: boolean;
  log?: (line: string) => void;
}

export interface TemporalCluster {
  /** Frontend gRPC, `127.0.0.1:<port>`. */
  address: string;
  namespace: string;
  uiUrl: string | undefined;
  postgres: PostgresServer;
  /** Config, dynamic config and the server and UI logs. */
  dir: string;
  /** Resolves with the name of the first cluster process that exits on its own. */
  died: Promise<string>;
  stop(): Promise<void>;
}

async function canListen(port: number): Promise<boolean> {
  const s = createServer();
  const ok = await new Promise<boolean>((resolve) => {
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (ok) await new Promise((resolve) => s.close(resolve));
  return ok;
}

/**
 * Free loopback ports, all distinct. With `below`, from a range under it instead of the OS's
 * ephemeral range: the server stores membership ports in a PostgreSQL smallint (at most 32767).
 */
export async function freePorts(count: number, below?: number): Promise<number[]> {
  if (below !== undefined) {
    const ports: number[] = [];
    for (let port = 20_000 + Math.floor(Math.random() * 8_000); ports.length < count && port < below; port += 7) {
      if (await canListen(port)) ports.push(port);
    }
    if (ports.length < count) throw new Error(`no ${count} free ports below ${below}`);
    return ports;
  }
  const servers = await Promise.all(
    Array.from({ length: count }, async () => {
      const s = createServer();
      await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
      return s;
    }),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/** A child in its own process group, logging to `logFile`, killed with its group if we exit first. */
class Service {
  readonly exited: Promise<number | null>;
  /** The last lines of output, for start-up errors. */
  readonly tail: string[] = [];
  private running = true;
  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    logFile: string,
  ) {
    const log = createWriteStream(logFile);
    // Two sources share one file: neither may end it; the child's 'close' (both streams done) does.
    log.on('error', () => {});
    child.once('close', () => log.end());
    for (const stream of [child.stdout, child.stderr]) {
      stream?.pipe(log, { end: false });
      stream?.on('data', (chunk: Buffer) => {
        // Server log lines carry long stack traces; the start of each says what failed.
        const lines = chunk
          .toString()
          .split('\n')
          .filter((line) => line.trim());
        this.tail.push(...lines.map((line) => line.slice(0, 400)));
        this.tail.splice(0, Math.max(0, this.tail.length - 30));
      });
    }
    const killOnExit = () => this.signal('SIGKILL');
    process.once('exit', killOnExit);
    this.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        this.running = false;
        process.removeListener('exit', killOnExit);
        resolve(code);
      }),
    );
  }
  get isRunning(): boolean {
    return this.running;
  }
  signal(signal: NodeJS.Signals): void {
    try {
      if (this.child.pid) process.kill(-this.child.pid, signal);
    } catch {
      // already gone
    }
  }
  async stop(): Promise<void> {
    if (!this.running) return;
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }
}

function runSqlTool(binaries: ClusterBinaries, postgres: PostgresServer, database: string, args: string[]): void {
  const base = ['--plugin', 'postgres12', '--ep', '127.0.0.1', '-p', String(postgres.port), '-u', 'harness'];
  const run = spawnSync(binaries.sqlTool, [...base, '--db', database, ...args], { encoding: 'utf8' });
  if (run.status !== 0) {
    throw new Error(`temporal-sql-tool ${args.join(' ')} on ${database} failed:\n${run.stdout}\n${run.stderr}`);
  }
}

/** Creates both databases and brings their schemas to the versions this server ships. */
function setUpSchemas(binaries: ClusterBinaries, postgres: PostgresServer): void {
  for (const [database, folder] of [
    ['temporal', 'temporal'],
    ['temporal_visibility', 'visibility'],
  ] as const) {
    runSqlTool(binaries, postgres, database, ['create-database']);
    runSqlTool(binaries, postgres, database, ['setup-schema', '-v', '0.0']);
    const versioned = join(binaries.schemaDir, 'postgresql', 'v12', folder, 'versioned');
    runSqlTool(binaries, postgres, database, ['update-schema', '-d', versioned]);
  }
}

function datastore(database: string, port: number, maxConns: number): string {
  return `
      sql:
        pluginName: postgres12
        databaseName: ${database}
        connectAddr: 127.0.0.1:${port}
        connectProtocol: tcp
        user: harness
        password: ""
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: 1h`;
}

/** The server config: one process running all four services on loopback ports. */
function serverConfig(pgPort: number, ports: number[], dynamicConfig: string): string {
  const [frontend, http, history, matching, worker, ...membership] = ports;
  const service = (grpc: number | undefined, member: number | undefined, extra = '') => `
    rpc:
      grpcPort: ${grpc}
      membershipPort: ${member}
      bindOnIP: 127.0.0.1${extra}`;
  return `log:
  stdout: true
  level: warn
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
    postgres-default:${datastore('temporal', pgPort, 10)}
    postgres-visibility:${datastore('temporal_visibility', pgPort, 5)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:${service(frontend, membership[0], `\n      httpPort: ${http}`)}
  history:${service(history, membership[1])}
  matching:${service(matching, membership[2])}
  worker:${service(worker, membership[3])}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:${frontend}
      httpAddress: 127.0.0.1:${http}
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: ${dynamicConfig}
  pollInterval: 10s
`;
}

// Search attributes registered through the operator API are usable at once (as with start-dev), and
// the rest is what `npm start`'s dev server runs with (dev/dev-server.ts DEFAULT_DYNAMIC_CONFIG), written
// from that table so the two cannot drift. Values are JSON, which is YAML.
const DYNAMIC_CONFIG = Object.entries({
  'system.forceSearchAttributesCacheRefreshOnRead': true,
  ...DEFAULT_DYNAMIC_CONFIG,
})
  .map(([key, value]) => `${key}:\n  - value: ${JSON.stringify(value)}\n`)
  .join('');

/** Retries `fn` until it succeeds or `timeoutMs` passes; fails early when `alive` turns false. */
async function retry<T>(what: string, fn: () => Promise<T>, alive: () => boolean, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!alive()) throw new Error(`${what}: the process exited`, { cause: err });
      if (Date.now() > deadline)
        throw new Error(`${what} did not succeed within ${timeoutMs / 1000} s`, { cause: err });
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** Registers the namespace (once) and waits until the frontend serves it. */
async function ensureNamespace(connection: Connection, namespace: string): Promise<void> {
  try {
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('3 days'),
    });
  } catch (err) {
    if (!/already exists/i.test((err as Error).message)) throw err;
  }
  await connection.workflowService.describeNamespace({ namespace });
}

/** Starts PostgreSQL, the Temporal server and the Web UI, and prepares the namespace. */
export async function startTemporalCluster(options: ClusterOptions): Promise<TemporalCluster> {
  const log = options.log ?? (() => {});
  const namespace = options.namespace ?? 'default';
  const dir = mkdtempSync(join(tmpdir(), 'harness-cluster-'));
  const [pgPort, frontendPort, uiPort, ...rpc] = await freePorts(7);
  const ports = [options.port ?? frontendPort, ...rpc, ...(await freePorts(4, 32_768))] as number[];
  const services: Service[] = [];
  let postgres: PostgresServer | undefined;
  const stop = async () => {
    for (const service of [...services].reverse()) await service.stop();
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    postgres = await startPostgres({ binDir: options.pgBin, port: pgPort as number, log });
    setUpSchemas(options.binaries, postgres);
    log('Temporal schemas set up (temporal, temporal_visibility)');
    mkdirSync(join(dir, 'config'));
    const dynamicConfig = join(dir, 'dynamicconfig.yaml');
    writeFileSync(dynamicConfig, DYNAMIC_CONFIG);
    writeFileSync(join(dir, 'config', 'cluster.yaml'), serverConfig(postgres.port, ports, dynamicConfig));
    const serverArgs = ['--root', dir, '--config', 'config', '--env', 'cluster', '--allow-no-auth', 'start'];
    const server = new Service(
      'temporal-server',
      spawn(options.binaries.server, serverArgs, { stdio: ['ignore', 'pipe', 'pipe'], detached: true }),
      join(dir, 'temporal-server.log'),
    );
    services.push(server);
    const address = `127.0.0.1:${ports[0]}`;
    const connection = await retry(
      `temporal-server on ${address} (log: ${join(dir, 'temporal-server.log')})`,
      async () => {
        const c = await Connection.connect({ address, connectTimeout: 1_000 });
        await c.workflowService.getSystemInfo({});
        return c;
      },
      () => server.isRunning,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${server.tail.join('\n')}`);
    });
    try {
      await retry(
        `namespace ${namespace}`,
        () => ensureNamespace(connection, namespace),
        () => server.isRunning,
      );
      const added = await retry(
        'search attributes',
        () => ensureSearchAttributes(connection, namespace),
        () => server.isRunning,
      );
      if (added.length > 0) log(`registered search attributes: ${added.join(', ')}`);
    } finally {
      await connection.close();
    }
    let uiUrl: string | undefined;
    if (!options.noUi) {
      const port = options.uiPort ?? uiPort;
      mkdirSync(join(dir, 'ui'));
      writeFileSync(
        join(dir, 'ui', 'cluster.yaml'),
        `temporalGrpcAddress: ${address}\nhost: 127.0.0.1\nport: ${port}\nenableUi: true\n` +
          `defaultNamespace: ${namespace}\ncors:\n  cookieInsecure: true\n  allowOrigins:\n    - http://localhost:${port}\n`,
      );
      const uiArgs = ['--root', dir, '--config', 'ui', '--env', 'cluster', 'start'];
      const ui = new Service(
        'temporal-ui-server',
        spawn(options.binaries.uiServer, uiArgs, { stdio: ['ignore', 'pipe', 'pipe'], detached: true }),
        join(dir, 'temporal-ui-server.log'),
      );
      services.push(ui);
      uiUrl = `http://localhost:${port}`;
      await retry(
        `Web UI on ${uiUrl}`,
        async () => {
          const res = await fetch(`http://127.0.0.1:${port}/api/v1/settings`);
          if (!res.ok) throw new Error(`HTTP ${res.status}`);
        },
        () => ui.isRunning,
        30_000,
      );
    }
    const died = Promise.race([
      ...services.map((s) => s.exited.then(() => s.name)),
      postgres.exited.then(() => 'postgres'),
    ]);
    return { address, namespace, uiUrl, postgres, dir, died, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
