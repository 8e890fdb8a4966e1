/**
 * `npm run gateway`: the HTTP gateway as its own process, for the cluster. Live events come from
 * PostgreSQL LISTEN/NOTIFY when HARNESS_EVENTS_URL is set (the workers publish there); without it
 * the event streams read each Session's log every second. `npm start` runs a gateway in-process.
 */
import { Command, InvalidArgumentError } from 'commander';
import { SessionClient } from '../client/index.js';
import { PostgresEventFeed } from '../client/event-feeds.js';
import { AuthConfigError } from './auth.js';
import { gatewayOptionsFromEnv } from './env.js';
import { startGateway } from './server.js';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('must be a port number');
  return n;
}

async function main(argv: string[] = process.argv): Promise<void> {
  const program = new Command('gateway')
    .description('Server-Sent Events and JSON endpoints for Sessions, the approval inbox, and /openapi.json')
    .option('--host <host>', 'interface to listen on', process.env.HARNESS_GATEWAY_HOST ?? '127.0.0.1')
    .option('--port <port>', 'port to listen on', port, Number(process.env.HARNESS_GATEWAY_PORT ?? 7244))
    .option(
      '--insecure-no-token',
      'serve without authentication (anyone who reaches the port and passes the Host and Origin checks can approve)',
    )
    .parse(argv);
  const opts = program.opts<{ host: string; port: number; insecureNoToken?: boolean }>();
  let settings: ReturnType<typeof gatewayOptionsFromEnv>;
  try {
    settings = gatewayOptionsFromEnv(process.env);
  } catch (err) {
    if (!(err instanceof AuthConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
  if (!settings.token && !settings.tokens && !settings.jwt && !opts.insecureNoToken) {
    process.stderr.write(
      'none of HARNESS_GATEWAY_TOKEN, HARNESS_GATEWAY_TOKENS_FILE, HARNESS_GATEWAY_JWKS is set (or start with --insecure-no-token)\n',
    );
    process.exit(2);
  }
  const client = await SessionClient.connect();
  const eventsUrl = process.env.HARNESS_EVENTS_URL?.trim();
  const feed = eventsUrl ? new PostgresEventFeed(eventsUrl, { log: (l) => process.stderr.write(`${l}\n`) }) : undefined;
  await feed?.ready();
  const gateway = await startGateway({
    client,
    ...(feed ? { feed } : {}),
    ...settings,
    insecureNoToken: opts.insecureNoToken === true,
    host: opts.host,
    port: opts.port,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(
    `[gateway] listening on ${gateway.url} (events ${feed ? 'live from PostgreSQL' : 'read from the log every second'}); inbox ${gateway.url}/inbox\n`,
  );
  const stop = async () => {
    await gateway.close();
    await feed?.close();
    await client.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

// Only ever run as a program (nothing imports it).
await main();
