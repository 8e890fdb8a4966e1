import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConnectionConfigError, resolveConnection } from '../../client/connection.js';

function files(): { dir: string; cert: string; key: string; ca: string } {
  const dir = mkdtempSync(join(tmpdir(), 'conn-'));
  const [cert, key, ca] = ['client.pem', 'client.key', 'ca.pem'].map((name) => {
    writeFileSync(join(dir, name), `${name} contents`);
    return join(dir, name);
  }) as [string, string, string];
  return { dir, cert, key, ca };
}

describe('resolveConnection', () => {
  it('defaults to a local plaintext server', () => {
    expect(resolveConnection({}, {})).toEqual({ address: 'localhost:7233', namespace: 'default', warnings: [] });
  });

  it('reads the Temporal environment names, an API key turning TLS on', () => {
    const s = resolveConnection(
      {},
      { TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_NAMESPACE: 'ns.acct', TEMPORAL_API_KEY: 'k' },
    );
    expect(s).toMatchObject({ address: 'ns.acct.tmprl.cloud:7233', namespace: 'ns.acct', apiKey: 'k', tls: true });
  });

  it('reads mTLS files from TEMPORAL_TLS_*_PATH and refuses half a pair', () => {
    const f = files();
    const s = resolveConnection(
      {},
      {
        TEMPORAL_TLS_CLIENT_CERT_PATH: f.cert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: f.key,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: f.ca,
        TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      },
    );
    expect(s.tls).toEqual({
      serverRootCACertificate: Buffer.from('ca.pem contents'),
      clientCertPair: { crt: Buffer.from('client.pem contents'), key: Buffer.from('client.key contents') },
      serverNameOverride: 'temporal.internal',
    });
    expect(() => resolveConnection({}, { TEMPORAL_TLS_CLIENT_CERT_PATH: f.cert })).toThrow(ConnectionConfigError);
    expect(() => resolveConnection({}, { TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/nonexistent/ca.pem' })).toThrow(
      /cannot read the server CA certificate file \/nonexistent\/ca.pem: ENOENT/,
    );
  });

  it('honours the old TEMPORAL_TLS_CERT/KEY/CA names with a deprecation warning, the new name winning', () => {
    const f = files();
    const old = resolveConnection({}, { TEMPORAL_TLS_CERT: f.cert, TEMPORAL_TLS_KEY: f.key, TEMPORAL_TLS_CA: f.ca });
    expect(old.tls).toMatchObject({ clientCertPair: { crt: Buffer.from('client.pem contents') } });
    expect(old.warnings).toEqual([
      'TEMPORAL_TLS_CERT is deprecated; use TEMPORAL_TLS_CLIENT_CERT_PATH',
      'TEMPORAL_TLS_KEY is deprecated; use TEMPORAL_TLS_CLIENT_KEY_PATH',
      'TEMPORAL_TLS_CA is deprecated; use TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    ]);
    const both = resolveConnection({}, { TEMPORAL_TLS_CA: '/nonexistent', TEMPORAL_TLS_SERVER_CA_CERT_PATH: f.ca });
    expect(both.tls).toEqual({ serverRootCACertificate: Buffer.from('ca.pem contents') });
    expect(both.warnings).toEqual([
      'TEMPORAL_TLS_CA is deprecated and ignored because TEMPORAL_TLS_SERVER_CA_CERT_PATH is set',
    ]);
  });

  it('takes a temporal.toml profile chosen by TEMPORAL_PROFILE, env overriding it and explicit values overriding both', () => {
    const f = files();
    const toml = join(f.dir, 'temporal.toml');
    writeFileSync(
      toml,
      [
        '[profile.default]',
        'address = "localhost:7233"',
        '[profile.prod]',
        'address = "prod.example:7233"',
        'namespace = "sessions-prod"',
        'api_key = "from-file"',
        '[profile.prod.grpc_meta]',
        'x-tenant = "acme"',
      ].join('\n'),
    );
    const env = { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'prod' };
    expect(resolveConnection({}, env)).toMatchObject({
      address: 'prod.example:7233',
      namespace: 'sessions-prod',
      apiKey: 'from-file',
      tls: true,
      metadata: { 'x-tenant': 'acme' },
    });
    expect(resolveConnection({}, { ...env, TEMPORAL_NAMESPACE: 'other' }).namespace).toBe('other');
    expect(resolveConnection({ namespace: 'flag', tls: false }, env)).toMatchObject({ namespace: 'flag', tls: false });
    expect(() => resolveConnection({ profile: 'nope' }, env)).toThrow(/Profile 'nope' not found/);
  });
});
