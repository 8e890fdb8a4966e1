/**
 * Payload encryption end to end on the run's dev server: a worker and SessionClient with
 * HARNESS_ENCRYPTION_KEYS still run a Session, the history the plain `temporal` CLI reads holds no
 * message text, and the same CLI pointed at our codec server (the Web UI's protocol) shows it again.
 * A Session sent without the codec is the control: its text is visible, so the check can fail.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCodecServer, type RunningCodecServer } from '../client/codec-server.js';
import { codecFromEnv } from '../client/encryption.js';
import { SessionClient } from '../client/session-client.js';
import { loadConfig } from '../worker/config.js';
import { createSessionWorker, type BuiltWorker } from '../worker/create-worker.js';
import { MODEL, catalog, scriptedModels, uniqueId } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';

const run = promisify(execFile);
const SECRET = 'Draft the Falcon merger memo for ACME legal';
const REPLY = 'Falcon memo outline: parties, terms, risks.';
const KEYS = `k1:${randomBytes(32).toString('base64')}`;
const LEAK_MARKER = 'osprey-check';
const MODEL_SECRET = 'Osprey acquisition at 41 per share';

let models: ScriptedModelServer;
let built: BuiltWorker;
let running: Promise<void>;
let encrypted: SessionClient;
let plain: SessionClient;
let codecServer: RunningCodecServer;
const taskQueue = uniqueId('enc');

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  models.on(MODEL.extraction, { json: { terms: ['memo', 'merger'] } });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  // A message naming LEAK_MARKER gets a relevance answer that is not JSON, so the activity fails
  // with an error quoting the model's words.
  models.on(MODEL.relevance, (req) =>
    req.messages.some((m) => m.content.includes(LEAK_MARKER))
      ? { content: `${MODEL_SECRET} (not JSON)` }
      : { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 } },
  );
  models.on(MODEL.agent, { content: REPLY });
  const env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    HARNESS_TASK_QUEUE: taskQueue,
    HARNESS_DATA_DIR: mkdtempSync(join(tmpdir(), 'harness-enc-')),
    HARNESS_ENCRYPTION_KEYS: KEYS,
  };
  // Bundled at start: an encrypting worker's bundle carries its interceptor module and failure converter.
  built = await createSessionWorker(loadConfig(env), {
    models: scriptedModels(models),
    catalog: catalog(),
  });
  running = built.worker.run();
  encrypted = await SessionClient.connect({ env, taskQueue });
  plain = await SessionClient.connect({ env: { ...env, HARNESS_ENCRYPTION_KEYS: '' }, taskQueue });
  codecServer = await startCodecServer({ codec: codecFromEnv(env)!, authToken: 'Bearer ops-token' });
});

afterAll(async () => {
  await codecServer?.close();
  await encrypted?.close();
  await plain?.close();
  built?.worker.shutdown();
  await running;
  await built?.close();
  await models?.close();
});

/** `temporal workflow show` as an operator would run it, optionally through a codec server. */
async function show(sessionId: string, codec?: { endpoint: string; auth: string }): Promise<string> {
  const args = ['workflow', 'show', '--workflow-id', `session:${sessionId}`, '--output', 'json'];
  args.push('--address', inject('temporalAddress'), '--namespace', inject('temporalNamespace'));
  if (codec) args.push('--codec-endpoint', codec.endpoint, '--codec-auth', codec.auth);
  const { stdout } = await run(inject('temporalCliPath'), args, { maxBuffer: 32 * 1024 * 1024 });
  return stdout;
}

/**
 * Everything a reader of the history can see: the JSON with every `json/plain` payload's base64
 * data decoded to its text, as the Web UI and `temporal workflow show` (text output) display it.
 */
function readable(json: string, options: { searchAttributes?: boolean } = {}): string {
  const plainEncoding = Buffer.from('json/plain').toString('base64');
  return JSON.stringify(JSON.parse(json), (key, value: unknown) => {
    // Search attributes are visibility data that no codec reaches; the last test checks them apart.
    if (key === 'searchAttributes' && options.searchAttributes === false) return undefined;
    const payload = value as { metadata?: { encoding?: string }; data?: string } | null;
    if (payload && typeof payload.data === 'string' && payload.metadata?.encoding === plainEncoding) {
      return { ...payload, data: Buffer.from(payload.data, 'base64').toString('utf8') };
    }
    return value;
  });
}

describe('payload encryption', () => {
  it('runs a Session with encrypted payloads: the client and the worker read each other', async () => {
    const sessionId = uniqueId('enc');
    const result = await encrypted.submit(sessionId, { text: SECRET, messageId: 'enc-1' }, { wait: true });
    expect(result.decision?.decision).toBe('initialize');
    expect(result.decision?.agent?.outcome).toBe('replied');
    expect((await encrypted.history(sessionId)).at(-1)?.reply).toBe(REPLY);
    expect((await encrypted.goals(sessionId)).session?.text).toBe(SECRET);
    // The worker decrypted the message before the model saw it.
    expect(models.requests().some((r) => r.messages.some((m) => m.content.includes(SECRET)))).toBe(true);

    const history = await show(sessionId);
    expect(history).toContain(Buffer.from('binary/encrypted').toString('base64'));
    expect(readable(history, { searchAttributes: false })).not.toContain('Falcon');

    const decoded = readable(await show(sessionId, { endpoint: codecServer.url, auth: 'Bearer ops-token' }));
    expect(decoded).toContain(SECRET);
    expect(decoded).toContain(REPLY);
  });

  it('control: without the codec the same text is in the history for anyone to read', async () => {
    const sessionId = uniqueId('plain');
    // Sent in the clear; read back through the encrypted client, which passes plain payloads through.
    await plain.send(sessionId, { text: SECRET, messageId: 'plain-1' });
    expect((await encrypted.waitForDecision(sessionId, 1))?.decision).toBe('initialize');
    expect(readable(await show(sessionId))).toContain(SECRET);
  });

  it('the codec server refuses a caller without the token', async () => {
    const response = await fetch(`${codecServer.url}/decode`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ payloads: [] }),
    });
    expect(response.status).toBe(401);
  });

  it('encrypts failure messages: an activity error quoting model output is not in the clear', async () => {
    const sessionId = uniqueId('enc-fail');
    await encrypted.submit(sessionId, { text: SECRET, messageId: 'enc-fail-1' }, { wait: true });
    const second = await encrypted.submit(
      sessionId,
      { text: `Also review the ${LEAK_MARKER} numbers`, messageId: 'enc-fail-2' },
      { wait: true },
    );
    expect(second.decision?.decision).toBe('degraded');
    const history = await show(sessionId);
    expect(history).toContain('Encoded failure');
    expect(readable(history)).not.toContain('Osprey');
    // The codec server opens the failure again, so the check above looked at the right event.
    const decoded = readable(await show(sessionId, { endpoint: codecServer.url, auth: 'Bearer ops-token' }));
    expect(decoded).toContain(MODEL_SECRET);
  });

  it('keeps the goal out of SessionGoal even when a client without encryption starts the Session', async () => {
    const sessionId = uniqueId('enc-plain-sa');
    // The plain client leaves goalSearchAttribute at its default (on); the worker turns it off.
    await plain.send(sessionId, { text: SECRET, messageId: 'enc-plain-sa-1' });
    expect((await encrypted.waitForDecision(sessionId, 1))?.decision).toBe('initialize');
    const described = await encrypted.client.workflow.getHandle(`session:${sessionId}`).describe();
    expect(described.searchAttributes.SessionGoal).toBeUndefined();
    expect(described.searchAttributes.SessionStatus).toEqual(['active']);
  });

  it('an encrypting worker refuses a workflow bundle without its interceptor module', async () => {
    const config = loadConfig({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      HARNESS_TASK_QUEUE: uniqueId('enc-refused'),
      HARNESS_DATA_DIR: mkdtempSync(join(tmpdir(), 'harness-enc-')),
      HARNESS_ENCRYPTION_KEYS: KEYS,
    });
    await expect(
      createSessionWorker(config, {
        workflowBundle: { codePath: inject('workflowBundlePath') },
        models: scriptedModels(models),
        catalog: catalog(),
      }),
    ).rejects.toThrow(/lacks .*encrypted-workflow-interceptors/);
  });

  it('keeps user text out of the search attributes when encryption is on', async () => {
    const sessionId = uniqueId('enc-sa');
    await encrypted.submit(sessionId, { text: SECRET, messageId: 'enc-sa-1' }, { wait: true });
    // The whole history, search-attribute upserts included, with plain payloads decoded.
    expect(readable(await show(sessionId))).not.toContain('Falcon');
    const described = await encrypted.client.workflow.getHandle(`session:${sessionId}`).describe();
    expect(described.searchAttributes.SessionGoal).toBeUndefined();
    expect(described.searchAttributes.SessionStatus).toEqual(['active']);
  });
});
