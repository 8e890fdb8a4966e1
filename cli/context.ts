/**
 * What every command group gets from the program: where to write, and a Session client built from
 * the global connection options (`--address`, `--namespace`, TLS, ...), which are defined here.
 */
import { Option, type Command } from 'commander';
import { CONNECTION_DEFAULTS, SessionClient, type ConnectOptions } from '../client/index.js';
import { duration } from './options.js';
import type { Output, RunIO } from './run.js';

/** The process's streams, or a test's. */
export interface CliIO extends RunIO {
  stdout: Output & { isTTY?: boolean; columns?: number };
  stdin?: NodeJS.ReadableStream;
}

/** Handed to each command group when it adds its commands. */
export interface CommandContext {
  io: CliIO;
  /** Writes one line to stdout. */
  line: (text: string) => void;
  /** Runs `fn` with a client connected per the global options of `cmd`, and closes it afterwards. */
  withClient: <T>(cmd: Command, fn: (client: SessionClient) => Promise<T>) => Promise<T>;
}

/** The global options, as commander hands them over (after their parsers ran). */
export interface GlobalOptions {
  address?: string;
  namespace?: string;
  profile?: string;
  taskQueue: string;
  tls?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  tlsServerName?: string;
  apiKey?: string;
  connectTimeout: number;
}

/** Adds the connection options every Session command shares; each may also come from the environment. */
export function addConnectionOptions(program: Command): Command {
  // No commander defaults or env for the connection: client/connection.ts resolves the flags, then
  // TEMPORAL_* and the temporal.toml profile (as Temporal's CLI and SDKs do), then localhost:7233.
  return program
    .addOption(
      new Option(
        '--address <host:port>',
        'Temporal frontend address (default: TEMPORAL_ADDRESS, profile, localhost:7233)',
      ),
    )
    .addOption(new Option('--namespace <name>', 'Temporal namespace (default: TEMPORAL_NAMESPACE, profile, default)'))
    .addOption(new Option('--profile <name>', 'temporal.toml profile (default: TEMPORAL_PROFILE, default)'))
    .addOption(
      new Option('--task-queue <name>', 'task queue new Sessions start on')
        .env('HARNESS_TASK_QUEUE')
        .default(CONNECTION_DEFAULTS.taskQueue),
    )
    .addOption(new Option('--tls', 'connect with TLS (implied by --tls-cert, --tls-ca and --api-key; or TEMPORAL_TLS)'))
    .addOption(new Option('--tls-cert <file>', 'client certificate (PEM) for mTLS (or TEMPORAL_TLS_CLIENT_CERT_PATH)'))
    .addOption(new Option('--tls-key <file>', 'client private key (PEM) for mTLS (or TEMPORAL_TLS_CLIENT_KEY_PATH)'))
    .addOption(
      new Option('--tls-ca <file>', 'CA certificate (PEM) of the server (or TEMPORAL_TLS_SERVER_CA_CERT_PATH)'),
    )
    .addOption(new Option('--tls-server-name <name>', 'TLS server name override (or TEMPORAL_TLS_SERVER_NAME)'))
    .addOption(new Option('--api-key <key>', 'Temporal Cloud API key (or TEMPORAL_API_KEY)'))
    .addOption(
      new Option('--connect-timeout <duration>', 'how long to wait for the server (5s, 1m; a bare number is ms)')
        .env('HARNESS_CONNECT_TIMEOUT_MS')
        .argParser(duration('ms'))
        .default(CONNECTION_DEFAULTS.connectTimeoutMs, '5s'),
    );
}

/** The global options of `cmd` (they are defined on the program, so read them with their parents'). */
export function globalOptions(cmd: Command): GlobalOptions {
  return cmd.optsWithGlobals<GlobalOptions>();
}

/** The client's connection options from the global options. */
export function connectOptions(g: GlobalOptions): ConnectOptions {
  const files = {
    ...(g.tlsCert ? { certFile: g.tlsCert } : {}),
    ...(g.tlsKey ? { keyFile: g.tlsKey } : {}),
    ...(g.tlsCa ? { caFile: g.tlsCa } : {}),
    ...(g.tlsServerName ? { serverName: g.tlsServerName } : {}),
  };
  const tls = Object.keys(files).length > 0 ? files : g.tls ? true : undefined;
  return {
    ...(g.address ? { address: g.address } : {}),
    ...(g.namespace ? { namespace: g.namespace } : {}),
    ...(g.profile ? { profile: g.profile } : {}),
    taskQueue: g.taskQueue,
    connectTimeoutMs: g.connectTimeout,
    ...(tls !== undefined ? { tls } : {}),
    ...(g.apiKey ? { apiKey: g.apiKey } : {}),
  };
}

export function createContext(io: CliIO): CommandContext {
  return {
    io,
    line: (text) => io.stdout.write(`${text}\n`),
    withClient: async (cmd, fn) => {
      // Created lazily: inputs are validated before the network is touched (exit 2 even when the server is down).
      const client = await SessionClient.create(connectOptions(globalOptions(cmd)));
      try {
        return await fn(client);
      } finally {
        await client.close();
      }
    },
  };
}
