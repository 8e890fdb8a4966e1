/**
 * TLS for tests: a throwaway CA with server and client certificates made by `openssl`, and an mTLS
 * front that terminates TLS and forwards gRPC (HTTP/2) to the plaintext dev server. `temporal
 * server start-dev` has no TLS options, so this stands where a TLS load balancer or Temporal Cloud's
 * endpoint stands: the client side (our connection settings, the SDK's TLS stacks) is the real one.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, constants, createSecureServer, type IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A second CA and a client certificate it signed, which the front must refuse. */
  otherCaCert: string;
  strangerCert: string;
  strangerKey: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

function makeLeaf(dir: string, ca: string, name: string, extensions: string): void {
  openssl(dir, [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  ]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
  ]);
}

/** Generates the certificates into a new temp folder (never into the repository). */
export function makeCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'harness-tls-'));
  makeCa(dir, 'ca');
  makeCa(dir, 'other-ca');
  makeLeaf(
    dir,
    'ca',
    'server',
    [
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ].join('\n'),
  );
  const clientExt = ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=clientAuth'];
  makeLeaf(dir, 'ca', 'client', clientExt.join('\n'));
  makeLeaf(dir, 'other-ca', 'stranger', clientExt.join('\n'));
  const at = (file: string) => join(dir, file);
  return {
    dir,
    caCert: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
    otherCaCert: at('other-ca.pem'),
    strangerCert: at('stranger.pem'),
    strangerKey: at('stranger.key'),
  };
}

export interface TlsFront {
  /** `127.0.0.1:<port>`. */
  address: string;
  /** TLS handshakes the front refused (no or untrusted client certificate). */
  refused: number;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([':authority', ':scheme', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade']);

/** An mTLS front on 127.0.0.1 for the plaintext gRPC server at `target` (`host:port`). */
export async function startTlsFront(target: string, certs: TestCertificates): Promise<TlsFront> {
  const upstream = connect(`http://${target}`);
  upstream.on('error', () => {});
  const front = { refused: 0 } as TlsFront;
  const server = createSecureServer({
    key: readFileSync(certs.serverKey),
    cert: readFileSync(certs.serverCert),
    ca: readFileSync(certs.caCert),
    requestCert: true,
    rejectUnauthorized: true,
  });
  server.on('tlsClientError', () => front.refused++);
  server.on('stream', (stream, headers) => {
    const forwarded: IncomingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name)) forwarded[name] = value;
    const request = upstream.request({ ...forwarded, ':authority': target, ':scheme': 'http' });
    let trailers: IncomingHttpHeaders = {};
    request.on('response', (response) => {
      const head = { ...response };
      // A trailers-only answer (a gRPC error) carries grpc-status in its headers and has no body.
      const trailersOnly = 'grpc-status' in head;
      stream.respond(head, trailersOnly ? { endStream: true } : { waitForTrailers: true });
    });
    request.on('trailers', (t: IncomingHttpHeaders) => {
      trailers = t;
    });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    request.on('data', (chunk: Buffer) => stream.write(chunk));
    request.on('end', () => {
      if (!stream.destroyed && !stream.writableEnded) stream.end();
    });
    request.on('error', () => stream.close(constants.NGHTTP2_INTERNAL_ERROR));
    stream.on('data', (chunk: Buffer) => request.write(chunk));
    stream.on('end', () => request.end());
    stream.on('error', () => request.close(constants.NGHTTP2_CANCEL));
    stream.on('close', () => {
      if (!request.closed) request.close(constants.NGHTTP2_CANCEL);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  front.address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  front.close = () =>
    new Promise<void>((resolve) => {
      upstream.close();
      server.close(() => resolve());
      // Open client sessions would keep close() waiting; the test is done with them.
      for (const socket of sockets) socket.destroy();
    });
  const sockets = new Set<TLSSocket>();
  server.on('secureConnection', (socket: TLSSocket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return front;
}
