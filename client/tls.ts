/** TLS for the client's connection: system roots, a private CA, and/or a client certificate (mTLS). */
import { readFile } from 'node:fs/promises';
import type { TLSConfig } from '@temporalio/client';
import { InvalidInputError } from './errors.js';
import type { ConnectOptions } from './types.js';

/** The connection's TLS setting from the client's options; file problems are InvalidInputErrors. */
export async function tlsConfig(tls: ConnectOptions['tls']): Promise<TLSConfig | boolean | undefined> {
  if (tls === undefined || typeof tls === 'boolean') return tls;
  if (Boolean(tls.certFile) !== Boolean(tls.keyFile)) {
    throw new InvalidInputError('mTLS needs both a client certificate and its key (--tls-cert and --tls-key)', [
      { field: tls.certFile ? 'tls.keyFile' : 'tls.certFile', message: 'missing' },
    ]);
  }
  const read = async (file: string, field: string): Promise<Buffer> => {
    try {
      return await readFile(file);
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new InvalidInputError(`cannot read ${field} file ${file}: ${why}`, [{ field, message: why }]);
    }
  };
  const config: TLSConfig = {};
  if (tls.caFile) config.serverRootCACertificate = await read(tls.caFile, 'tls.caFile');
  if (tls.certFile && tls.keyFile) {
    config.clientCertPair = {
      crt: await read(tls.certFile, 'tls.certFile'),
      key: await read(tls.keyFile, 'tls.keyFile'),
    };
  }
  if (tls.serverName) config.serverNameOverride = tls.serverName;
  return config;
}
