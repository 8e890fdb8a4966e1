/**
 * The HTTP gateway inside `npm start`, on the worker's in-process event feed, so event streams and the
 * approval inbox are live with nothing else to run. Its bearer token is `HARNESS_GATEWAY_TOKEN`, else
 * one generated once and kept in `<data dir>/gateway-token` (readable by the owner only), where
 * `harness watch` finds it too.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadCatalogDir } from '../capabilities/catalog-files.js';
import { SessionClient } from '../client/index.js';
import type { EventFeed } from '../contract/events.js';
import { gatewayOptionsFromEnv } from '../gateway/env.js';
import { startGateway } from '../gateway/server.js';
import type { HarnessConfig } from '../worker/config.js';

/** Where `npm start` keeps the gateway's generated token. */
export function devTokenFile(dataDir: string): string {
  return join(dataDir, 'gateway-token');
}

function devToken(dataDir: string): string {
  const file = devTokenFile(dataDir);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const token = randomBytes(24).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

/**
 * Starts the gateway next to the dev worker; returns how to stop it. A gateway that cannot start (its
 * port is taken) is reported and left out: the worker runs without it.
 */
export async function startDevGateway(
  config: HarnessConfig,
  feed: EventFeed,
  log: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<() => Promise<void>> {
  const port = Number(env.HARNESS_GATEWAY_PORT ?? 7244);
  const client = await SessionClient.connect({
    address: config.temporal.address,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    env,
  });
  try {
    // The A2A agent cards list the worker's catalog skills.
    const skills = loadCatalogDir(config.catalogDir).entries.flatMap((e) =>
      e.kind === 'skill' ? [{ id: e.id, name: e.name, description: e.description, tags: e.tags }] : [],
    );
    const settings = gatewayOptionsFromEnv(env, skills);
    // The generated token stands in for HARNESS_GATEWAY_TOKEN; a token file or JWKS adds principals beside it.
    const token = settings.token ?? devToken(config.dataDir);
    const gateway = await startGateway({ client, feed, ...settings, token, port, log });
    log(
      `gateway: ${gateway.url} (bearer token in ${env.HARNESS_GATEWAY_TOKEN ? 'HARNESS_GATEWAY_TOKEN' : devTokenFile(config.dataDir)}); approval inbox ${gateway.url}/inbox?access_token=<token>`,
    );
    return async () => {
      await gateway.close();
      await client.close();
    };
  } catch (err) {
    log(`gateway not started (${err instanceof Error ? err.message : String(err)}); set HARNESS_GATEWAY_PORT`);
    await client.close();
    return async () => {};
  }
}
