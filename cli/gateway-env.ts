/**
 * Where the CLI finds the HTTP gateway: `HARNESS_GATEWAY_URL` (with `HARNESS_GATEWAY_TOKEN`), else the
 * one `npm start` runs, when its token file exists in the data folder.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { devTokenFile } from '../dev/dev-gateway.js';

export function gatewayFromEnv(env: NodeJS.ProcessEnv): { url: string; token: string | null } | null {
  const url = env.HARNESS_GATEWAY_URL?.trim();
  const token = env.HARNESS_GATEWAY_TOKEN?.trim() || null;
  if (url) return { url: url.replace(/\/+$/, ''), token };
  const file = devTokenFile(resolve(env.HARNESS_DATA_DIR?.trim() || '.data'));
  if (!existsSync(file)) return null;
  return {
    url: `http://127.0.0.1:${env.HARNESS_GATEWAY_PORT ?? 7244}`,
    token: token ?? readFileSync(file, 'utf8').trim(),
  };
}

/** How long the health check may take: a gateway on a loaded machine answers late, not never. */
const HEALTH_WAIT_MS = 10_000;

/** The gateway from the environment when it answers its health check (within 10 s); null otherwise. */
export async function reachableGateway(env: NodeJS.ProcessEnv): Promise<{ url: string; token: string | null } | null> {
  const gateway = gatewayFromEnv(env);
  if (!gateway) return null;
  const ok = await fetch(`${gateway.url}/healthz`, { signal: AbortSignal.timeout(HEALTH_WAIT_MS) }).then(
    (r) => r.ok,
    () => false,
  );
  return ok ? gateway : null;
}
