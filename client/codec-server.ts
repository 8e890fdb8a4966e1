/**
 * A remote codec server, as the Temporal Web UI and `temporal --codec-endpoint` expect one:
 * `POST /encode` and `POST /decode` with `{ "payloads": [ <Payload in proto JSON> ] }`, answered in
 * the same shape. It lets an authorised operator read encrypted payloads in the browser while the
 * Temporal server only ever stores ciphertext.
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
   * Browser origins allowed to call (the Web UI's, e.g. `http://localhost:8233`). `*` allows any;
   * none means no CORS headers, which only non-browser clients such as the CLI can use.
   */
  allowedOrigins?: readonly string[];
  /**
   * When set, every request must carry `Authorization: <token>` exactly (the Web UI sends its
   * user's access token; `temporal --codec-auth` sends what it is given).
   */
  authToken?: string;
  /** Largest request body accepted. Default 4 MiB (Temporal's default payload size limit is 2 MiB). */
  maxBodyBytes?: number;
}

export interface RunningCodecServer {
  server: Server;
  /** `http://127.0.0.1:<port>` or whatever host it was bound to. */
  url: string;
  close(): Promise<void>;
}

/** Builds the request handler (exported for embedding in an existing HTTP server). */
export function codecRequestHandler(options: CodecServerOptions) {
  const origins = new Set(options.allowedOrigins ?? []);
  const maxBody = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const expected = options.authToken ? Buffer.from(options.authToken) : undefined;

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const origin = req.headers.origin;
    if (origin && (origins.has('*') || origins.has(origin))) {
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
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || (path !== '/encode' && path !== '/decode')) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('POST /encode or /decode');
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
  const handler = codecRequestHandler(options);
  const server = createServer((req, res) => {
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
