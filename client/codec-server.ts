/**
 * A remote codec server, as the Temporal Web UI and `temporal --codec-endpoint` expect one:
 * `POST /decode` (and, when enabled, `POST /encode`) with `{ "payloads": [ <Payload in proto JSON> ] }`,
 * answered in the same shape. It lets an authorised operator read encrypted payloads in the browser
 * while the Temporal server only ever stores ciphertext. Every answer is plaintext, so it refuses
 * unknown Host names (DNS rebinding), origins not listed (no `*`), and, unless explicitly started
 * without one, requests without the token.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';

/** A payload as proto JSON: metadata values and data are base64. */
interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

export interface CodecServerOptions {
  codec: PayloadCodec;
  /**
   * Browser origins allowed to call, exactly (the Web UI's, e.g. `http://localhost:8233`). `*` is
   * refused: the answers are decrypted payloads and carry `Access-Control-Allow-Credentials`. A
   * request whose `Origin` is not listed is refused; none listed means only non-browser clients
   * such as the `temporal` CLI can call.
   */
  allowedOrigins?: readonly string[];
  /**
   * Every request must carry `Authorization: <token>` exactly (the Web UI sends its user's access
   * token; `temporal --codec-auth` sends what it is given). Required unless `insecureNoToken`.
   */
  authToken?: string;
  /**
   * Serve without a token: then whoever reaches the port and passes the Host and Origin checks can
   * read every payload. Only for a single-user machine with the server on a loopback address.
   */
  insecureNoToken?: boolean;
  /**
   * `Host` header values accepted, e.g. `codec.example.com` or `localhost:8888`; anything else is
   * refused, so a DNS-rebinding page cannot reach the server under its own name. Default: localhost,
   * 127.0.0.1 and [::1] with the server's port.
   */
  allowedHosts?: readonly string[];
  /**
   * Serve `POST /encode` too. Off by default: the Web UI only decodes, and an encode endpoint lets a
   * caller produce ciphertext the workers accept as genuine (an encryption oracle). The `temporal`
   * CLI needs it only to start workflows or send signals with `--codec-endpoint`.
   */
  allowEncode?: boolean;
  /** Largest request body accepted. Default 4 MiB (Temporal's default payload size limit is 2 MiB). */
  maxBodyBytes?: number;
}

/** Options a codec server refuses to start with: a wildcard origin, or no token without the explicit opt-out. */
export class CodecServerConfigError extends Error {
  override name = 'CodecServerConfigError';
}

export interface RunningCodecServer {
  server: Server;
  /** `http://127.0.0.1:<port>` or whatever host it was bound to. */
  url: string;
  close(): Promise<void>;
}

/** The Host values a server on loopback at `port` answers to when none are configured. */
export function loopbackHosts(port: number): string[] {
  return ['localhost', '127.0.0.1', '[::1]'].map((host) => `${host}:${port}`);
}

/**
 * Builds the request handler (exported for embedding in an existing HTTP server, which must then
 * pass `allowedHosts`: the handler cannot know its port).
 */
export function codecRequestHandler(options: CodecServerOptions & { allowedHosts: readonly string[] }) {
  const origins = new Set(options.allowedOrigins ?? []);
  if (origins.has('*')) {
    throw new CodecServerConfigError(
      'a codec server never allows origin "*": list the Web UI origins that may call it',
    );
  }
  const token = options.authToken?.trim();
  if (!token && !options.insecureNoToken) {
    throw new CodecServerConfigError(
      'a codec server needs an auth token (HARNESS_CODEC_AUTH_TOKEN); --insecure-no-token serves without one',
    );
  }
  const hosts = new Set(options.allowedHosts.map((h) => h.trim().toLowerCase()).filter(Boolean));
  const maxBody = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const expected = token ? Buffer.from(token) : undefined;
  const paths = new Set(options.allowEncode ? ['/encode', '/decode'] : ['/decode']);

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // Checked before anything else: a rebinding page reaches us under its own name, never ours.
    if (!hosts.has((req.headers.host ?? '').toLowerCase())) {
      res.writeHead(421, { 'Content-Type': 'text/plain' }).end('unknown Host');
      return;
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin)) {
      res.writeHead(403, { 'Content-Type': 'text/plain' }).end('origin not allowed');
      return;
    }
    if (origin !== undefined) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      // The UI may send cookies or its own Authorization header when "include credentials" is on.
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Vary', 'Origin');
    }
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', 'Content-Type, Authorization, X-Namespace');
      res.setHeader('Access-Control-Max-Age', '600');
      res.writeHead(204).end();
      return;
    }
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (req.method !== 'POST' || !paths.has(path)) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end(`POST ${[...paths].join(' or ')}`);
      return;
    }
    if (expected && !sameToken(req.headers.authorization, expected)) {
      res.writeHead(401, { 'Content-Type': 'text/plain' }).end('unauthorized');
      return;
    }
    let body: { payloads?: JsonPayload[] };
    try {
      body = JSON.parse(await readBody(req, maxBody)) as { payloads?: JsonPayload[] };
      if (!Array.isArray(body.payloads)) throw new Error('body must be { "payloads": [...] }');
    } catch (err) {
      res.writeHead(400, { 'Content-Type': 'text/plain' }).end((err as Error).message);
      return;
    }
    try {
      const payloads = body.payloads.map(fromJson);
      const result = path === '/encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ payloads: result.map(toJson) }));
    } catch (err) {
      // A payload this server cannot open (unknown key id, tampered data) is the caller's problem to see.
      res.writeHead(400, { 'Content-Type': 'text/plain' }).end((err as Error).message);
    }
  };
}

/** Starts a codec server on `host:port` (port 0 picks a free one). */
export async function startCodecServer(
  options: CodecServerOptions & { host?: string; port?: number },
): Promise<RunningCodecServer> {
  // Checked before listening, so a refused configuration never opens the port.
  codecRequestHandler({ ...options, allowedHosts: options.allowedHosts ?? [] });
  const server = createServer((req, res) => {
    // Requests arrive only after listen() resolved, so `handler` below is set by then.
    handler(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  // The default Host list needs the port, known only now when port 0 picked one.
  const handler = codecRequestHandler({ ...options, allowedHosts: options.allowedHosts ?? loopbackHosts(port) });
  return {
    server,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sameToken(header: string | undefined, expected: Buffer): boolean {
  if (!header) return false;
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        reject(new Error(`body larger than ${max} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function fromJson(p: JsonPayload): Payload {
  const metadata: Record<string, Uint8Array> = {};
  for (const [key, value] of Object.entries(p.metadata ?? {})) metadata[key] = Buffer.from(value, 'base64');
  return { metadata, data: Buffer.from(p.data ?? '', 'base64') };
}

function toJson(p: Payload): JsonPayload {
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(p.metadata ?? {})) {
    if (value) metadata[key] = Buffer.from(value).toString('base64');
  }
  return { metadata, data: Buffer.from(p.data ?? new Uint8Array()).toString('base64') };
}
