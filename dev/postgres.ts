/**
 * A throwaway PostgreSQL server from Debian's packages (`/usr/lib/postgresql/<n>/bin`): initdb into a
 * fresh temp folder, `postgres` on a loopback port, removed again on stop. The cluster and the tests
 * share it. initdb and postgres refuse to run as root, so as root they run as the `postgres` user.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface PostgresServer {
  port: number;
  dataDir: string;
  /** A connection URL for `database` (default `postgres`) as the superuser `harness`, no password (trust). */
  url(database?: string): string;
  /** Creates a database (no error when it exists) and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Resolves once the server process has exited. */
  exited: Promise<number | null>;
  /** Fast shutdown, then removes the data folder. */
  stop(): Promise<void>;
}

export class PostgresError extends Error {
  override name = 'PostgresError';
}

const SUPERUSER = 'harness';

/** The folder holding `initdb` and `postgres`: HARNESS_PG_BIN, else Debian's newest, else undefined. */
export function findPostgresBin(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const has = (dir: string) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'));
  const override = env.HARNESS_PG_BIN?.trim();
  if (override) return has(override) ? override : undefined;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => join(root, v, 'bin')).find(has);
}

/** uid/gid to run as: ourselves, or the `postgres` system user when we are root. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) {
    throw new PostgresError('running as root, but there is no `postgres` user to run PostgreSQL as');
  }
  return { uid: Number(uid), gid: Number(gid) };
}

async function waitUntilReady(url: string, child: ChildProcess, tail: string[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new PostgresError(`postgres exited before it was ready:\n${tail.join('\n')}`);
    }
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline) {
        throw new PostgresError(`postgres did not accept connections within 30 s: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await client.end().catch(() => {});
    }
  }
}

/**
 * Starts PostgreSQL on 127.0.0.1:`port` in a new temp data folder. Durability is traded for speed
 * (fsync off): the data is thrown away on stop anyway.
 */
export async function startPostgres(options: {
  binDir: string;
  port: number;
  maxConnections?: number;
  log?: (line: string) => void;
}): Promise<PostgresServer> {
  const user = runAs();
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-pg-'));
  if (user) chownSync(dataDir, user.uid, user.gid);
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' };
  const init = spawnSync(
    join(options.binDir, 'initdb'),
    ['-D', dataDir, '-U', SUPERUSER, '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8'],
    { encoding: 'utf8', env, ...(user ?? {}) },
  );
  if (init.status !== 0) {
    rmSync(dataDir, { recursive: true, force: true });
    throw new PostgresError(`initdb failed (${init.status ?? init.signal}): ${init.stderr || String(init.error)}`);
  }
  const args = [
    ['-D', dataDir, '-p', String(options.port)],
    ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    ['-c', `max_connections=${options.maxConnections ?? 200}`],
    ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
  ].flat();
  // Its own process group, so a Ctrl-C meant for us does not stop the database under the services that use it.
  const child = spawn(join(options.binDir, 'postgres'), args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
    env,
    ...(user ?? {}),
  });
  const tail: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.trim()) tail.push(line);
    tail.splice(0, Math.max(0, tail.length - 20));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  const killOnExit = () => {
    killGroup('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('exit', killOnExit);
  void exited.then(() => process.removeListener('exit', killOnExit));

  const url = (database = 'postgres') => `postgres://${SUPERUSER}@127.0.0.1:${options.port}/${database}`;
  try {
    await waitUntilReady(url(), child, tail);
  } catch (err) {
    killOnExit();
    throw err;
  }
  options.log?.(`PostgreSQL on 127.0.0.1:${options.port} (data ${dataDir})`);
  let stopped: Promise<void> | undefined;
  return {
    port: options.port,
    dataDir,
    url,
    exited,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
        if (found.rowCount === 0) await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } catch (err) {
        // Another caller created it between our check and CREATE: what we wanted exists.
        const code = (err as { code?: string }).code;
        if (code !== '42P04' && code !== '23505') throw err;
      } finally {
        await client.end();
      }
      return url(name);
    },
    stop() {
      stopped ??= (async () => {
        // SIGINT is PostgreSQL's fast shutdown: it does not wait for clients to disconnect.
        killGroup('SIGINT');
        const timer = setTimeout(() => killGroup('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
        rmSync(dataDir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
