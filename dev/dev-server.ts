/**
 * Runs `temporal server start-dev` with SQLite persistence and the built-in Web UI, under a guardian
 * process that stops it when this process ends however it ends, and waits until its frontend answers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { devServerSearchAttributeFlags } from '../worker/search-attributes-setup.js';

export interface DevServerOptions {
  cliPath: string;
  dbFile: string;
  port: number;
  uiPort: number;
  httpPort: number;
  namespace: string;
  /** Remote codec server the Web UI calls to show encrypted payloads (`npm run codec-server`). */
  uiCodecEndpoint?: string;
  log: (line: string) => void;
  /** SQLite pragmas for the server's database (`--sqlite-pragma`); default DEFAULT_SQLITE_PRAGMAS. */
  sqlitePragmas?: Record<string, string>;
  /**
   * Dynamic config values (`--dynamic-config-value key=value`, the value as JSON), over
   * DEFAULT_DYNAMIC_CONFIG.
   */
  dynamicConfig?: Record<string, unknown>;
}

/**
 * Write-ahead logging with `synchronous=NORMAL`: a commit appends to the log and is fsynced only at
 * checkpoints, instead of fsyncing the rollback journal and the database on every commit. The trade:
 * a commit survives a crash of the server process, but the last commits before a power loss or OS
 * crash may be lost (the database stays consistent). For a dev server on one machine that is the
 * right side of the trade; `npm run bench -- --pragmas` measures what it buys.
 */
export const DEFAULT_SQLITE_PRAGMAS: Readonly<Record<string, string>> = { journal_mode: 'wal', synchronous: 'normal' };

/**
 * Eager activity execution: when a workflow task's completion schedules an activity on the worker's
 * own task queue and the worker has a free slot (the SDK reserves up to
 * `maxEagerActivityReservationsPerWorkflowTask`, 3), the server hands the activity task back in the
 * completion's response instead of queueing it for a poll. The history is the same (the activity's
 * scheduled, started and completed events; the same billable actions); what goes is the matching
 * round trip. Off by default in the server (`system.enableActivityEagerExecution`); on here because
 * every model-gated step of a Session is an activity scheduled right after a workflow task.
 * `npm run bench -- --scenarios capacity --capacity-eager-activities off` measures what it buys.
 */
export const DEFAULT_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  'system.enableActivityEagerExecution': true,
};

/** `--dynamic-config-value` flags for the dev server: DEFAULT_DYNAMIC_CONFIG with `overrides` over it. */
export function dynamicConfigFlags(overrides: Record<string, unknown> = {}): string[] {
  return Object.entries({ ...DEFAULT_DYNAMIC_CONFIG, ...overrides }).flatMap(([key, value]) => [
    '--dynamic-config-value',
    `${key}=${JSON.stringify(value)}`,
  ]);
}

export interface DevServer {
  address: string;
  uiUrl: string;
  /** The server's guardian (server-guard.cjs), the leader of the server's process group. */
  child: ChildProcess;
  /** Resolves once the server process has exited. */
  exited: Promise<number | null>;
  /** SIGKILLs the server and its guardian at once (a crash, for fault tests); resolves once they are gone. */
  kill(): Promise<void>;
  /** Stops the server gracefully (SIGTERM, then SIGKILL after 10 s). */
  stop(): Promise<void>;
}

/** The guardian that keeps the server from outliving this process (a plain script: no build, no tsx). */
const GUARD = fileURLToPath(new URL('./server-guard.cjs', import.meta.url));

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
    ...(options.uiCodecEndpoint ? ['--ui-codec-endpoint', options.uiCodecEndpoint] : []),
    ...dynamicConfigFlags(options.dynamicConfig),
  ];
  // Through its guardian (server-guard.cjs), in their own process group: Ctrl-C reaches only us, and
  // we stop the server after the worker has drained. The guardian's stdin is a pipe from us: when we
  // end in any way, even SIGKILL, it reads end-of-file and stops the server.
  const child = spawn(process.execPath, [GUARD, options.cliPath, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  // We never write to it; it only has to stay open while we live.
  child.stdin?.on('error', () => {});
  const tail: string[] = [];
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.trim()) tail.push(line);
    tail.splice(0, Math.max(0, tail.length - 20));
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let running = true;
  // Once we exit the guardian would stop the server anyway; killing the group now frees the port at once.
  const killGroup = () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  const killOnExit = killGroup;
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
      // Every call here has a deadline: a server still starting may accept the connection and not
      // answer yet, and gRPC-JS would wait for it forever (grpc/grpc-node#2785).
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.withDeadline(Date.now() + 2_000, () => connection.workflowService.getSystemInfo({}));
      } finally {
        await connection.close();
      }
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
    async kill() {
      if (!running) return;
      killGroup();
      await exited;
    },
    async stop() {
      if (!running) return;
      child.kill('SIGTERM');
      // The guardian gives the server 10 s; past that, take the whole group.
      const timer = setTimeout(killGroup, 12_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
