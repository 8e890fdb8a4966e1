/**
 * The codec server's boundary: every answer it gives is plaintext, so it must refuse callers that are
 * not the operator's Web UI or CLI. Each test is an attack that succeeded before the server checked
 * the token by default, the Host header, the Origin and the /encode switch.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { startCodecServer, type RunningCodecServer } from '../../client/codec-server.js';
import { codecFromEnv } from '../../client/encryption.js';
import { runCodecServer } from '../../cli/codec-server.js';

const run = promisify(execFile);
const env = { HARNESS_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`, HARNESS_CODEC_PORT: '0' };
const codec = codecFromEnv(env)!;
const SECRET = 'the Falcon merger memo';

let servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

async function start(options: Partial<Parameters<typeof startCodecServer>[0]>): Promise<RunningCodecServer> {
  const server = await startCodecServer({ codec, ...options });
  servers.push(server);
  return server;
}

/** One encrypted payload, as the Web UI would post it to /decode. */
async function ciphertextBody(): Promise<string> {
  const [sealed] = await codec.encode([
    { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(`"${SECRET}"`) },
  ]);
  const json = {
    metadata: Object.fromEntries(
      Object.entries(sealed!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(sealed!.data!).toString('base64'),
  };
  return JSON.stringify({ payloads: [json] });
}

/** A raw HTTP POST, so the test sets Host and Origin as a browser on a rebinding page would. */
function post(
  url: string,
  path: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

const port = (server: RunningCodecServer) => new URL(server.url).port;

describe('codec server', () => {
  it('refuses to start without a token unless told --insecure-no-token', async () => {
    await expect(runCodecServer(env)).rejects.toThrow(/needs an auth token/);
    const open = await runCodecServer(env, { insecureNoToken: true });
    servers.push(open);
    const tokened = await runCodecServer({ ...env, HARNESS_CODEC_AUTH_TOKEN: 'Bearer t' });
    servers.push(tokened);
    const body = await ciphertextBody();
    expect((await post(tokened.url, '/decode', body)).status).toBe(401);
    const decoded = await post(tokened.url, '/decode', body, { Authorization: 'Bearer t' });
    expect(decoded.status).toBe(200);
    expect(
      Buffer.from(
        (JSON.parse(decoded.text) as { payloads: Array<{ data: string }> }).payloads[0]!.data,
        'base64',
      ).toString(),
    ).toContain(SECRET);
  });

  it('the command refuses to start without a token, and says how to opt out', async () => {
    const failed = await run('npx', ['tsx', 'cli/codec-server.ts'], {
      env: { ...process.env, ...env },
      timeout: 20_000,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('--insecure-no-token');
  });

  it('refuses a foreign Host (DNS rebinding), even without a token configured', async () => {
    const server = await start({ insecureNoToken: true });
    const body = await ciphertextBody();
    const rebound = await post(server.url, '/decode', body, { Host: `rebind.attacker.example:${port(server)}` });
    expect(rebound.status).toBe(421);
    expect(rebound.text).not.toContain(SECRET);
    // The same request under the server's own loopback names is answered.
    for (const host of [`127.0.0.1:${port(server)}`, `localhost:${port(server)}`]) {
      expect((await post(server.url, '/decode', body, { Host: host })).status).toBe(200);
    }
  });

  it('answers configured Host names only', async () => {
    const server = await start({ authToken: 't', allowedHosts: ['codec.internal.example'] });
    const body = await ciphertextBody();
    expect((await post(server.url, '/decode', body, { Authorization: 't' })).status).toBe(421);
    const named = await post(server.url, '/decode', body, { Authorization: 't', Host: 'codec.internal.example' });
    expect(named.status).toBe(200);
  });

  it('never allows origin "*" and refuses origins not listed', async () => {
    await expect(start({ authToken: 't', allowedOrigins: ['*'] })).rejects.toThrow(/never allows origin "\*"/);
    const server = await start({ insecureNoToken: true, allowedOrigins: ['http://localhost:8233'] });
    const body = await ciphertextBody();
    const foreign = await post(server.url, '/decode', body, { Origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
    const ui = await post(server.url, '/decode', body, { Origin: 'http://localhost:8233' });
    expect(ui.status).toBe(200);
    expect(ui.headers['access-control-allow-origin']).toBe('http://localhost:8233');
  });

  it('serves /encode only when enabled, so it is not an encryption oracle by default', async () => {
    const plain = JSON.stringify({ payloads: [{ metadata: {}, data: Buffer.from('"forged"').toString('base64') }] });
    const server = await start({ authToken: 't' });
    expect((await post(server.url, '/encode', plain, { Authorization: 't' })).status).toBe(404);
    const encoding = await start({ authToken: 't', allowEncode: true });
    const encoded = await post(encoding.url, '/encode', plain, { Authorization: 't' });
    expect(encoded.status).toBe(200);
    expect(encoded.text).not.toContain(Buffer.from('"forged"').toString('base64'));
  });
});
