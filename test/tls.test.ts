/**
 * mTLS for real: certificates made by openssl in the test, an mTLS front before the run's dev
 * server (test/support/tls-front.ts), and a worker and a SessionClient configured only through
 * Temporal's environment names. A connection without the client certificate, with one from another
 * CA, or in plaintext fails.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ServerUnreachableError } from '../client/errors.js';
import { SessionClient } from '../client/session-client.js';
import { loadConfig } from '../worker/config.js';
import { createSessionWorker, type BuiltWorker } from '../worker/create-worker.js';
import { MODEL, catalog, scriptedModels, uniqueId } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';
import { makeCertificates, startTlsFront, type TestCertificates, type TlsFront } from './support/tls-front.js';

let certs: TestCertificates;
let front: TlsFront;
let models: ScriptedModelServer;
let built: BuiltWorker;
let running: Promise<void>;
const taskQueue = uniqueId('tls');

/** The Temporal environment of an mTLS deployment. */
function tlsEnv(): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: front.address,
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.caCert,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
    HARNESS_TASK_QUEUE: taskQueue,
  };
}

beforeAll(async () => {
  certs = makeCertificates();
  front = await startTlsFront(inject('temporalAddress'), certs);
  models = await ScriptedModelServer.start();
  models.on(MODEL.extraction, { json: { terms: ['tls'] } });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  models.on(MODEL.agent, { content: 'Connected over mTLS.' });
  built = await createSessionWorker(loadConfig(tlsEnv()), {
    workflowBundle: { codePath: inject('workflowBundlePath') },
    models: scriptedModels(models),
    catalog: catalog(),
  });
  running = built.worker.run();
});

afterAll(async () => {
  built?.worker.shutdown();
  await running;
  await built?.close();
  await front?.close();
  await models?.close();
});

async function unreachable(env: Record<string, string>): Promise<ServerUnreachableError> {
  const error = await SessionClient.connect({ env, connectTimeoutMs: 3_000 }).then(
    async (client) => {
      await client.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ServerUnreachableError);
  return error as ServerUnreachableError;
}

describe('mTLS through the TEMPORAL_TLS_* settings', () => {
  it('runs a Session with a worker and a client that both connect with the client certificate', async () => {
    const client = await SessionClient.connect({ env: tlsEnv(), taskQueue });
    try {
      const result = await client.submit(
        uniqueId('tls'),
        { text: 'Set up mutual TLS for the cluster' },
        { wait: true },
      );
      expect(result.decision?.decision).toBe('initialize');
      expect(result.decision?.agent?.outcome).toBe('replied');
    } finally {
      await client.close();
    }
  });

  it('accepts the deprecated TEMPORAL_TLS_CERT/KEY/CA names, with a warning for each', async () => {
    const { TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH, ...rest } =
      tlsEnv();
    const warnings: string[] = [];
    const client = await SessionClient.connect({
      env: {
        ...rest,
        TEMPORAL_TLS_CERT: TEMPORAL_TLS_CLIENT_CERT_PATH!,
        TEMPORAL_TLS_KEY: TEMPORAL_TLS_CLIENT_KEY_PATH!,
        TEMPORAL_TLS_CA: TEMPORAL_TLS_SERVER_CA_CERT_PATH!,
      },
      warn: (w) => warnings.push(w),
    });
    await client.list({ limit: 1 });
    await client.close();
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toBe('TEMPORAL_TLS_CERT is deprecated; use TEMPORAL_TLS_CLIENT_CERT_PATH');
  });

  it('fails without the client certificate, with one from another CA, and in plaintext', async () => {
    const { TEMPORAL_TLS_CLIENT_CERT_PATH: _c, TEMPORAL_TLS_CLIENT_KEY_PATH: _k, ...noClientCert } = tlsEnv();
    const refusedBefore = front.refused;
    await unreachable(noClientCert);
    await unreachable({
      ...tlsEnv(),
      TEMPORAL_TLS_CLIENT_CERT_PATH: certs.strangerCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: certs.strangerKey,
    });
    expect(front.refused).toBeGreaterThan(refusedBefore);
    await unreachable({ TEMPORAL_ADDRESS: front.address });
    // And a client that does not trust the server's CA refuses the server.
    await unreachable({ ...tlsEnv(), TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.otherCaCert });
  });
});
