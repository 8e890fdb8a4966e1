/**
 * `npm run codec-server` (`node dist/cli/codec-server.js` when built): the remote codec server for
 * the Temporal Web UI and `temporal --codec-endpoint`, decrypting with HARNESS_ENCRYPTION_KEYS.
 *
 * - HARNESS_CODEC_PORT (default 8888), HARNESS_CODEC_HOST (default 127.0.0.1: put a TLS proxy in
 *   front before exposing it);
 * - HARNESS_CODEC_ORIGINS: comma-separated browser origins allowed by CORS (default the dev Web UI,
 *   http://localhost:8233);
 * - HARNESS_CODEC_AUTH_TOKEN: when set, requests must send exactly this `Authorization` header value.
 *   Anyone who can reach this server and pass this check can read every payload: keep it private.
 */
import { startCodecServer } from '../client/codec-server.js';
import { EncryptionError, codecFromEnv } from '../client/encryption.js';
import { isEntryPoint } from '../worker/entry-point.js';

/** Starts the codec server from the environment; resolves with its URL and a close function. */
export async function runCodecServer(
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ url: string; close: () => Promise<void> }> {
  const codec = codecFromEnv(env);
  if (!codec) throw new EncryptionError('HARNESS_ENCRYPTION_KEYS is not set: there is nothing to decode with');
  const port = Number(env.HARNESS_CODEC_PORT?.trim() || 8888);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new EncryptionError(`HARNESS_CODEC_PORT must be a port number (got ${env.HARNESS_CODEC_PORT})`);
  }
  const origins = (env.HARNESS_CODEC_ORIGINS ?? 'http://localhost:8233')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  const token = env.HARNESS_CODEC_AUTH_TOKEN?.trim();
  return startCodecServer({
    codec,
    host: env.HARNESS_CODEC_HOST?.trim() || '127.0.0.1',
    port,
    allowedOrigins: origins,
    ...(token ? { authToken: token } : {}),
  });
}

if (isEntryPoint(import.meta.url)) {
  try {
    const server = await runCodecServer();
    process.stdout.write(`codec server on ${server.url} (POST /encode, /decode)\n`);
    const stop = () => void server.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  } catch (err) {
    process.stderr.write(`${err instanceof EncryptionError ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
