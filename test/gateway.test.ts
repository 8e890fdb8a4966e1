/**
 * The HTTP gateway on the real dev server with a real worker and the MCP fixture tools: bearer
 * auth, sending and answering through JSON endpoints, Server-Sent Events that resume after
 * Last-Event-ID with every durable event exactly once, and the OpenAPI document. The approval inbox
 * page is tested in a real browser in test/inbox.test.ts.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createParser } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import { SessionClient } from '../client/index.js';
import type { SessionEvent } from '../contract/events.js';
import { startGateway, type Gateway } from '../gateway/server.js';
import { MODEL, scriptedModels, startWorker, uniqueId, waitFor, type TestWorker } from './support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from './support/mcp-fixture.js';
import { ScriptedModelServer } from './support/model-server.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

const TOKEN = 'gateway-test-token';
const GOAL = 'Exercise the fixture tools: echo and add numbers';

let dir: string;
let journal: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let worker: TestWorker;
let client: SessionClient;
let gateway: Gateway;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gateway-'));
  journal = join(dir, 'journal.log');
  const connected = await connectedCatalog({
    fixture: fixtureMcpEntry(dir, ['echo', 'add'], { MCP_FIXTURE_JOURNAL: journal }),
  });
  const catalog = connected.catalog;
  mcp = connected.mcp;
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  script.selection.set(GOAL, { skills: [], toolsets: ['mcp-fixture'] });
  worker = await startWorker({ models: scriptedModels(server), catalog, mcp });
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue: worker.taskQueue });
  gateway = await startGateway({ client, feed: worker.events, token: TOKEN });
});

afterAll(async () => {
  await gateway?.close();
  await client?.close();
  await worker?.stop();
  await mcp?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const auth = { authorization: `Bearer ${TOKEN}` };

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** A Session (made through the gateway) whose input 2 waits for approval of `add(a, b)`; `reply` follows the call. */
async function waitingAdd(prefix: string, a: number, b: number, reply?: string): Promise<string> {
  const sessionId = uniqueId(prefix);
  await post(`/sessions/${sessionId}/messages`, { text: GOAL });
  await client.waitForDecision(sessionId, 1);
  const call = { toolCalls: [{ id: 'call_1', name: 'add', arguments: { a, b } }] };
  if (reply === undefined) server.enqueue(MODEL.agent, call);
  else server.enqueue(MODEL.agent, call, { content: reply });
  const text = `add ${a} and ${b} (${sessionId})`;
  script.relevance.set(text, [0.9, 0.9]);
  await post(`/sessions/${sessionId}/messages`, { text });
  expect((await client.waitForDecision(sessionId, 2))?.agent?.outcome).toBe('waiting-approval');
  return sessionId;
}

/** Reads SSE messages until `done` (or the stream ends); aborts the connection afterwards. */
async function readStream(
  path: string,
  headers: Record<string, string>,
  done: (events: SessionEvent[]) => boolean,
): Promise<{ events: SessionEvent[]; ids: string[] }> {
  const stop = new AbortController();
  const response = await fetch(`${gateway.url}${path}`, { headers: { ...auth, ...headers }, signal: stop.signal });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const events: SessionEvent[] = [];
  const ids: string[] = [];
  let finished = false;
  const parser = createParser({
    onEvent(message) {
      if (finished || message.event) return;
      events.push(JSON.parse(message.data) as SessionEvent);
      if (message.id) ids.push(message.id);
      if (done(events)) finished = true;
    },
  });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const timeout = setTimeout(() => stop.abort(), 30_000);
  try {
    while (!finished) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } catch (err) {
    if (!stop.signal.aborted) throw err;
  } finally {
    clearTimeout(timeout);
    stop.abort();
  }
  return { events, ids };
}

const turnFinished = (events: SessionEvent[]) => events.some((e) => e.kind === 'turn.finished');

/**
 * The `harness` CLI as a subprocess against this file's server, worker and gateway (and nothing of the
 * caller's TEMPORAL_* / HARNESS_* environment); `onStdout` sees each chunk and what was printed so far.
 */
function harnessCli(args: string[], onStdout?: (chunk: string, soFar: string) => void) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('HARNESS_')),
  );
  const child = spawn(
    process.execPath,
    ['bin/harness.js', '--address', inject('temporalAddress'), '--task-queue', worker.taskQueue, ...args],
    {
      env: { ...env, HARNESS_GATEWAY_URL: gateway.url, HARNESS_GATEWAY_TOKEN: TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const run = {
    child,
    out: '',
    err: '',
    exited: new Promise<number | null>((resolve) => child.once('close', resolve)),
  };
  child.stdout.on('data', (chunk: Buffer) => {
    run.out += chunk.toString();
    onStdout?.(chunk.toString(), run.out);
  });
  child.stderr.on('data', (chunk: Buffer) => (run.err += chunk.toString()));
  return run;
}

describe('gateway', () => {
  it('refuses requests without the bearer token and serves the OpenAPI document without one', async () => {
    expect((await fetch(`${gateway.url}/approvals`)).status).toBe(401);
    expect((await fetch(`${gateway.url}/approvals`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const openapi = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining([
        '/sessions/{id}/events',
        '/sessions/{id}/messages',
        '/sessions/{id}/approvals/{approvalId}/approve',
        '/sessions/{id}/approvals/{approvalId}/reject',
        '/sessions/{id}/tool-results/{callId}',
        '/approvals',
      ]),
    );
    // The approve body documents the optional argument edit.
    const approve = JSON.stringify(openapi.paths['/sessions/{id}/approvals/{approvalId}/approve']);
    expect(approve).toContain('"arguments"');
    expect(approve).toContain("instead of the model's");
  });

  it('sends a message, names a bad field, and 404s an unknown Session', async () => {
    const sessionId = uniqueId('gw-send');
    const sent = await post(`/sessions/${sessionId}/messages`, { text: GOAL });
    expect(sent.status).toBe(200);
    expect(await sent.json()).toMatchObject({ seq: 1, duplicate: false });
    const bad = await post(`/sessions/${sessionId}/messages`, { text: 42 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/text/);
    // A malformed event id is the caller's fault (400), on the page and on the stream alike.
    const badId = await fetch(`${gateway.url}/sessions/${sessionId}/events.json?after=bogus`, { headers: auth });
    expect(badId.status).toBe(400);
    expect(((await badId.json()) as { error: string }).error).toMatch(/after must be an event id/);
    expect((await fetch(`${gateway.url}/sessions/${sessionId}/events?after=1.x`, { headers: auth })).status).toBe(400);
    expect((await fetch(`${gateway.url}/sessions/${uniqueId('nobody')}`, { headers: auth })).status).toBe(404);
  });

  it('a stream cut mid-turn and resumed with Last-Event-ID sees every durable event exactly once', async () => {
    const sessionId = uniqueId('gw-sse');
    await post(`/sessions/${sessionId}/messages`, { text: GOAL });
    await client.waitForDecision(sessionId, 1);
    // Turn 2 calls `echo`, then replies: cut the stream after its first three events.
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_1', name: 'echo', arguments: { text: 'hello' } }] },
      { content: 'Echoed.' },
    );
    script.relevance.set('echo hello', [0.9, 0.9]);
    const head = await client.eventsAfter(sessionId);
    const start = head.lastId!;
    await post(`/sessions/${sessionId}/messages`, { text: 'echo hello' });
    const first = await readStream(`/sessions/${sessionId}/events?after=${start}`, {}, (e) => e.length >= 3);
    expect(first.ids).toHaveLength(3);
    const rest = await readStream(
      `/sessions/${sessionId}/events`,
      { 'last-event-id': first.ids.at(-1)! },
      turnFinished,
    );
    const seen = [...first.ids, ...rest.ids];
    expect(new Set(seen).size).toBe(seen.length);
    const log = await client.eventsAfter(sessionId, start);
    expect(seen).toEqual(log.events.map((e) => e.id));
    const kinds = [...first.events, ...rest.events].map((e) => e.kind);
    expect(kinds).toEqual(expect.arrayContaining(['tool.proposed', 'tool.started', 'tool.finished', 'turn.finished']));
  });

  it("streams the agent's text deltas over SSE before the turn finishes, without ids", async () => {
    const sessionId = uniqueId('gw-delta');
    await post(`/sessions/${sessionId}/messages`, { text: GOAL });
    await client.waitForDecision(sessionId, 1);
    const reply = 'Deltas travel over Server-Sent Events as the model writes.';
    script.relevance.set('stream to me', [0.9, 0.9]);
    server.enqueue(MODEL.agent, { content: reply });
    server.streamWith({ chunkChars: 6, delayMs: 80 });
    try {
      const start = (await client.eventsAfter(sessionId)).lastId!;
      const reading = readStream(`/sessions/${sessionId}/events?after=${start}`, {}, turnFinished);
      await post(`/sessions/${sessionId}/messages`, { text: 'stream to me' });
      const { events, ids } = await reading;
      const first = events.findIndex((e) => e.kind === 'agent.delta');
      const finished = events.findIndex((e) => e.kind === 'turn.finished');
      expect(first).toBeGreaterThan(-1);
      expect(first).toBeLessThan(finished);
      const deltas = events.flatMap((e) => (e.kind === 'agent.delta' ? [e] : []));
      expect(deltas.map((d) => d.text).join('')).toBe(reply);
      // Only durable events carry an SSE id, so Last-Event-ID never names a delta.
      expect(ids).toEqual(events.filter((e) => e.kind !== 'agent.delta').map((e) => e.id));
    } finally {
      server.streamWith({ chunkChars: 8, delayMs: 0 });
    }
  });

  it('harness send --wait prints the agent text live from the gateway, then the decision', async () => {
    const sessionId = uniqueId('gw-send');
    await post(`/sessions/${sessionId}/messages`, { text: GOAL });
    await client.waitForDecision(sessionId, 1);
    const reply = 'Printed live while the model was still writing.';
    script.relevance.set('tell me live', [0.9, 0.9]);
    server.enqueue(MODEL.agent, { content: reply });
    server.streamWith({ chunkChars: 4, delayMs: 150 });
    // What was printed when the first piece of the text appeared.
    let atFirstPiece: string | undefined;
    const run = harnessCli(['send', sessionId, 'tell me live', '--wait'], (text, soFar) => {
      if (atFirstPiece === undefined && text.trim() !== '' && reply.includes(text)) atFirstPiece = soFar;
    });
    const timer = setTimeout(() => run.child.kill(), 60_000);
    try {
      expect(await run.exited).toBe(0);
    } finally {
      clearTimeout(timer);
      server.streamWith({ chunkChars: 8, delayMs: 0 });
    }
    const { out, err } = run;
    // The text came piece by piece: when its first piece was out, the rest and the decision were not.
    expect(atFirstPiece, `send printed: ${out} ${err}`).toBeDefined();
    expect(atFirstPiece).not.toContain(reply);
    expect(atFirstPiece).not.toMatch(/decision #2/);
    expect(err).toBe('');
    // The streamed text on its own line, then the decision as without a gateway.
    expect(out).toContain(`${reply}\n`);
    expect(out).toMatch(/decision #2/);
    expect(out.indexOf(reply)).toBeLessThan(out.search(/decision #2/));
  });

  it('harness send --wait on a Session that does not exist yet ends with its first decision', async () => {
    // The stream is opened before the Session exists: the gateway answers 404 until the submit
    // starts it, and the reconnected stream begins at "now", after events the follower never read.
    const sessionId = uniqueId('gw-send-new');
    const run = harnessCli(['send', sessionId, GOAL, '--wait', '--timeout', '45s']);
    const code = await run.exited;
    expect(code, `send printed: ${run.out} ${run.err}`).toBe(0);
    expect(run.out).toMatch(/decision #1: initialize/);
  });

  it('harness watch prints the events live from the gateway until the Session closes', async () => {
    const sessionId = uniqueId('gw-watch');
    await post(`/sessions/${sessionId}/messages`, { text: GOAL });
    await client.waitForDecision(sessionId, 1);
    const run = harnessCli(['watch', sessionId]);
    const { child, exited } = run;
    // Watch starts at the newest event: once it says so, make something happen.
    await waitFor(
      () => Promise.resolve(run.out),
      (text) => text.includes(`watching ${sessionId} after event 1.`),
    );
    script.relevance.set('say hello', [0.9, 0.9]);
    server.enqueue(MODEL.agent, { content: 'Hello there.' });
    await post(`/sessions/${sessionId}/messages`, { text: 'say hello' });
    await waitFor(
      () => Promise.resolve(run.out),
      (text) => text.includes('turn.finished'),
    ).catch((e: unknown) => {
      child.kill();
      throw new Error(`${String(e)}; watch printed: ${run.out} ${run.err}`);
    });
    await client.command(sessionId, { name: 'close' });
    expect(await exited).toBe(0);
    expect(run.err).toBe('');
    expect(run.out).toMatch(/^2\.0 +input\.bound: say hello$/m);
    expect(run.out).toMatch(/turn\.finished: replied: Hello there\.$/m);
    expect(run.out).toMatch(/session\.closed: close/);
    expect(run.out).not.toMatch(/^1\.\d+ /m); // only what happened after it started
  });

  it('the approve endpoint refuses an invalid edit with 400 and its reason, and a rejection that carries arguments', async () => {
    const sessionId = await waitingAdd('gw-edit-400', 1, 2);
    const [waiting] = (await client.snapshot(sessionId)).pendingApprovals;
    const path = `/sessions/${sessionId}/approvals/${encodeURIComponent(waiting!.approvalId)}`;
    const bad = await post(`${path}/approve`, { arguments: { a: 1 } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/must have required property 'b'/);
    const notJson = await post(`${path}/approve`, { arguments: '{"a": 1,' });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { error: string }).error).toMatch(/arguments are not valid JSON/);
    const reject = await post(`${path}/reject`, { arguments: { a: 1, b: 3 } });
    expect(reject.status).toBe(400);
    expect((await client.snapshot(sessionId)).pendingApprovals).toHaveLength(1);
    await client.reject(sessionId, waiting!.approvalId, 'done testing');
  });
});
