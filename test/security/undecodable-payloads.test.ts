/**
 * Trust boundary: no payload wedges a Session. Before, a signal whose payload the worker could not
 * decode (ciphertext under a key it does not hold or that fails authentication, an encoding no
 * converter reads, JSON that does not parse) failed the workflow task on every retry, and with it
 * every later message, update and query of that Session. It took only permission to signal:
 * decoding happens before any signature check.
 *
 * Here a real encrypting worker (HARNESS_ENCRYPTION_KEYS, bundled at start as in production) runs a
 * Session; a Temporal client with other payload codecs sends it garbage by signal and update; then a
 * valid message must still be processed, every bad payload must be a recorded rejection naming its
 * size, and queries must answer.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AesGcmPayloadCodec } from '../../client/encryption.js';
import { SessionClient } from '../../client/session-client.js';
import { loadConfig } from '../../worker/config.js';
import { createSessionWorker, type BuiltWorker } from '../../worker/create-worker.js';
import { MODEL, catalog, scriptedModels, uniqueId, waitFor } from '../support/harness.js';
import { ScriptedModelServer } from '../support/model-server.js';

const SECRET = randomBytes(32);
const KEYS = `k1:${SECRET.toString('base64')}`;
const REPLY = 'Still here and answering.';

let models: ScriptedModelServer;
let built: BuiltWorker;
let running: Promise<void>;
let encrypted: SessionClient;
let connection: Connection;
const taskQueue = uniqueId('undecodable');

/** A codec that sends what `make` returns instead of each payload. */
const replacing = (make: (payload: Payload) => Payload): PayloadCodec => ({
  encode: (payloads) => Promise.resolve(payloads.map(make)),
  decode: (payloads) => Promise.resolve(payloads),
});

/** A Temporal client whose payloads go through `codec` (a client "with a different data converter"). */
const clientWith = (codec: PayloadCodec) =>
  new Client({ connection, namespace: inject('temporalNamespace'), dataConverter: { payloadCodecs: [codec] } });

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  models.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 } });
  models.on(MODEL.extraction, { json: { terms: ['report'] } });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  models.on(MODEL.compaction, { json: { summary: 'done' } });
  models.on(MODEL.agent, { content: REPLY });
  const env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    HARNESS_TASK_QUEUE: taskQueue,
    HARNESS_DATA_DIR: mkdtempSync(join(tmpdir(), 'harness-undecodable-')),
    HARNESS_ENCRYPTION_KEYS: KEYS,
  };
  built = await createSessionWorker(loadConfig(env), { models: scriptedModels(models), catalog: catalog() });
  running = built.worker.run();
  encrypted = await SessionClient.connect({ env, taskQueue });
  connection = await Connection.connect({ address: inject('temporalAddress') });
}, 300_000);

afterAll(async () => {
  await connection?.close();
  await encrypted?.close();
  built?.worker.shutdown();
  await running;
  await built?.close();
  await models?.close();
});

describe('undecodable payloads', () => {
  it('garbage by signal and update becomes recorded rejections; the Session goes on', async () => {
    const sessionId = uniqueId('wedge');
    const first = await encrypted.submit(
      sessionId,
      { text: 'Write the weekly report', messageId: 'm-1' },
      { wait: true },
    );
    expect(first.decision?.agent?.outcome).toBe('replied');

    const otherKey = new AesGcmPayloadCodec([{ id: 'k1', key: randomBytes(32) }]);
    const unknownKey = new AesGcmPayloadCodec([{ id: 'k9', key: randomBytes(32) }]);
    const garbage: Array<[string, PayloadCodec]> = [
      ['fails authentication under k1', otherKey],
      ['names a key the worker lacks', unknownKey],
      [
        'truncated ciphertext',
        replacing(() => ({
          metadata: { encoding: Buffer.from('binary/encrypted'), 'encryption-key-id': Buffer.from('k1') },
          data: randomBytes(5),
        })),
      ],
      [
        'an encoding no converter reads',
        replacing(() => ({ metadata: { encoding: Buffer.from('binary/garbage') }, data: randomBytes(40) })),
      ],
      [
        'JSON that does not parse',
        replacing(() => ({ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('{"text": ') })),
      ],
    ];
    const workflowId = `session:${sessionId}`;
    for (const [, codec] of garbage) {
      const handle = clientWith(codec).workflow.getHandle(workflowId);
      await handle.signal('message', { messageId: 'bad', text: 'never readable' });
      await handle.signal('approval', { approvalId: 'a-1', approved: true });
    }
    // An update with an undecodable argument is refused, naming why, and never reaches history.
    // (This client reads the worker's answer with the real key: the failure comes back encrypted.)
    const real = new AesGcmPayloadCodec([{ id: 'k1', key: SECRET }]);
    const garbageOut: PayloadCodec = { encode: (p) => otherKey.encode(p), decode: (p) => real.decode(p) };
    const refused = (await clientWith(garbageOut)
      .workflow.getHandle(workflowId)
      .executeUpdate('submit', { args: [{ messageId: 'u', text: 'x' }] })
      .catch((err: unknown) => err)) as { cause?: { message?: string } } | undefined;
    expect(refused?.cause?.message).toMatch(/^undecodable payload \(\d+ bytes\): .*failed authentication/);

    // A valid message after all of that is processed, and queries answer.
    const second = await encrypted.submit(
      sessionId,
      { text: 'Add the sales figures', messageId: 'm-2' },
      { wait: true },
    );
    expect(second.decision?.agent?.outcome).toBe('replied');
    const view = await waitFor(
      () => encrypted.snapshot(sessionId),
      (v) => v.recentRejections.filter((r) => r.reason.startsWith('undecodable payload')).length >= 10,
    );
    const undecodable = view.recentRejections.filter((r) => r.reason.startsWith('undecodable payload'));
    expect(undecodable.filter((r) => r.via === 'signal')).toHaveLength(5);
    expect(undecodable.filter((r) => r.via === 'approval')).toHaveLength(5);
    for (const r of undecodable) expect(r.reason).toMatch(/^undecodable payload \([1-9]\d* bytes\): \S/);
    expect(undecodable.map((r) => r.reason).join('\n')).toMatch(/failed authentication/);
    expect(undecodable.map((r) => r.reason).join('\n')).toMatch(/"k9"/);
    expect((await encrypted.history(sessionId)).map((b) => b.messageId)).toEqual(['m-1', 'm-2']);
    expect((await encrypted.describe(sessionId)).executionStatus).toBe('RUNNING');
  }, 240_000);
});
