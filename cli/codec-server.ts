/**
 * `npm run codec-server` (`node dist/cli/codec-server.js` when built): the remote codec server for
 * the Temporal Web UI and `temporal --codec-endpoint`, decrypting with HARNESS_ENCRYPTION_KEYS.
 *
 * - HARNESS_CODEC_AUTH_TOKEN: requests must send exactly this `Authorization` header value. Required;
 *   `--insecure-no-token` serves without one (a single-user machine, loopback only).
 * - HARNESS_CODEC_PORT (default 8888), HARNESS_CODEC_HOST (default 127.0.0.1: put a TLS proxy in
 *   front before exposing it);
 * - HARNESS_CODEC_HOSTS: comma-separated `Host` header values accepted (default localhost,
 *   127.0.0.1 and [::1] with the port), against DNS rebinding;
 * - HARNESS_CODEC_ORIGINS: comma-separated browser origins allowed by CORS (default the dev Web UI,
 *   http://localhost:8233 and http://127.0.0.1:8233); `*` is refused;
 * - `--enable-encode`: serve `POST /encode` too (the Web UI only decodes; the CLI encodes only to
 *   start workflows or send signals through the codec).
 * Anyone who passes these checks can read every payload: keep the token private.
 */
import { parseArgs } from 'node:util';
import { CodecServerConfigError, startCodecServer } from '../client/codec-server.js';
import { EncryptionError, codecFromEnv } from '../client/encryption.js';
import { isEntryPoint } from '../worker/entry-point.js';

/** The Web UI origins allowed when HARNESS_CODEC_ORIGINS is unset: the dev server's UI on port 8233. */
export const DEFAULT_CODEC_ORIGINS = ['http://localhost:8233', 'http://127.0.0.1:8233'] as const;

/** The command-line switches; both are off unless given. */
export interface CodecServerFlags {
  insecureNoToken?: boolean;
  enableEncode?: boolean;
}

const list = (value: string | undefined): string[] | undefined =>
  value
    ?.split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** Starts the codec server from the environment and flags; resolves with its URL and a close function. */
export async function runCodecServer(
  env: NodeJS.ProcessEnv = process.env,
  flags: CodecServerFlags = {},
): Promise<{ url: string; close: () => Promise<void> }> {
  const codec = codecFromEnv(env);
  if (!codec) throw new EncryptionError('HARNESS_ENCRYPTION_KEYS is not set: there is nothing to decode with');
  const port = Number(env.HARNESS_CODEC_PORT?.trim() || 8888);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new EncryptionError(`HARNESS_CODEC_PORT must be a port number (got ${env.HARNESS_CODEC_PORT})`);
  }
  const token = env.HARNESS_CODEC_AUTH_TOKEN?.trim();
  const hosts = list(env.HARNESS_CODEC_HOSTS);
  return startCodecServer({
    codec,
    host: env.HARNESS_CODEC_HOST?.trim() || '127.0.0.1',
    port,
    allowedOrigins: list(env.HARNESS_CODEC_ORIGINS) ?? DEFAULT_CODEC_ORIGINS,
    ...(hosts?.length ? { allowedHosts: hosts } : {}),
    ...(token ? { authToken: token } : {}),
    insecureNoToken: flags.insecureNoToken === true,
    allowEncode: flags.enableEncode === true,
  });
}

if (isEntryPoint(import.meta.url)) {
  try {
    const { values } = parseArgs({
      options: { 'insecure-no-token': { type: 'boolean' }, 'enable-encode': { type: 'boolean' } },
    });
    const flags = { insecureNoToken: values['insecure-no-token'], enableEncode: values['enable-encode'] };
    const server = await runCodecServer(process.env, flags);
    const paths = flags.enableEncode ? 'POST /encode, /decode' : 'POST /decode';
    const auth = flags.insecureNoToken && !process.env.HARNESS_CODEC_AUTH_TOKEN?.trim() ? ', NO TOKEN' : '';
    process.stdout.write(`codec server on ${server.url} (${paths}${auth})\n`);
    const stop = () => void server.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  } catch (err) {
    const known = err instanceof EncryptionError || err instanceof CodecServerConfigError;
    process.stderr.write(`${known ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
