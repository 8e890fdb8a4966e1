/**
 * Runs `temporal server start-dev` as a child process with SQLite persistence and the built-in
 * Web UI, and waits until its frontend answers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Connection } from '@temporalio/client';
import { devServerSearchAttributeFlags } from '../worker/search-attributes-setup.js';

export interface DevServerOptions {
  cliPath: string;
  dbFile: string;
  port: number;
  uiPort: number;
  httpPort: number;
  namespace: string;
  log: (line: string) => void;
  /** SQLite pragmas for the server's database (`--sqlite-pragma`); default DEFAULT_SQLITE_PRAGMAS. */
  sqlitePragmas?: Record<string, string>;
}

/**
 * Write-ahead logging with `synchronous=NORMAL`: a commit appends to the log and is fsynced only at
 * checkpoints, instead of fsyncing the rollback journal and the database on every commit. The trade:
 * a commit survives a crash of the server process, but the last commits before a power loss or OS
 * crash may be lost (the database stays consistent). For a dev server on one machine that is the
 * right side of the trade; `npm run bench -- --pragmas` measures what it buys.
 */
export const DEFAULT_SQLITE_PRAGMAS: Readonly<Record<string, string>> = { journal_mode: 'wal', synchronous: 'normal' };

export interface DevServer {
  address: string;
  uiUrl: string;
  child: ChildProcess;
  /** Resolves once the server process has exited. */
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** Starts the server and resolves once its frontend answers; `stop()` ends it. */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  mkdirSync(dirname(options.dbFile), { recursive: true });
  const args = [
    'server',
    'start-dev',
    '--db-filename',
    options.dbFile,
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--ui-port',
    String(options.uiPort),
    '--http-port',
    String(options.httpPort),
    '--namespace',
    options.namespace,
    '--log-level',
    'warn',
    ...Object.entries(options.sqlitePragmas ?? DEFAULT_SQLITE_PRAGMAS).flatMap(([name, value]) => [
      '--sqlite-pragma',
      `${name}=${value}`,
    ]),
    ...devServerSearchAttributeFlags(),
  ];
  // Its own process group: Ctrl-C reaches only us, and we stop the server after the worker has drained.
  const child = spawn(options.cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const tail: string[] = [];
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.trim()) tail.push(line);
    tail.splice(0, Math.max(0, tail.length - 20));
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let running = true;
  // The server has its own process group, so it would outlive us: take it down whenever we exit.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  void exited.then(() => {
    running = false;
    process.removeListener('exit', killOnExit);
  });

  const address = `127.0.0.1:${options.port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (!running) {
      throw new Error(`temporal server start-dev exited before it was ready:\n${tail.join('\n')}`);
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        child.kill('SIGTERM');
        throw new Error(
          `temporal server did not answer on ${address} within 60 s: ${(err as Error).message}\n${tail.join('\n')}`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  return {
    address,
    uiUrl: `http://localhost:${options.uiPort}`,
    child,
    exited,
    async stop() {
      if (!running) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
