/**
 * Streams that never lose the start of a reply, on the real dev server with a real worker, the
 * scripted model streaming slowly and the gateway: `harness send --wait` (a real CLI subprocess) to
 * ten Sessions that do not exist yet prints each whole reply; a follower that joins in the middle of
 * a step (the client library's, a second gateway stream, the AG-UI stream) first gets the reply so
 * far, marked catch-up, and then the rest, with nothing repeated or dropped.
 */
import { EventType, type BaseEvent } from '@ag-ui/core';
import { createParser } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../client/index.js';
import type { SessionEvent } from '../contract/events.js';
import { startGateway, type Gateway } from '../gateway/server.js';
import { harnessCli } from './support/harness-cli.js';
import { catalog, scriptedModels, startWorker, uniqueId, waitFor, type TestWorker } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

const TOKEN = 'stream-start-token';

let server: ScriptedModelServer;
let script: RoleScript;
let worker: TestWorker;
let client: SessionClient;
let gateway: Gateway;

beforeAll(async () => {
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  worker = await startWorker({ models: scriptedModels(server), catalog: catalog() });
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue: worker.taskQueue });
  gateway = await startGateway({ client, feed: worker.events, token: TOKEN });
});

afterAll(async () => {
  await gateway?.close();
  await client?.close();
  await worker?.stop();
  await server?.close();
});

/** A reply long enough to stream in many pieces, different for each `tag`. */
const longReply = (tag: string) =>
  Array.from({ length: 24 }, (_, i) => `Sentence ${i + 1} of the answer for ${tag}, streamed piece by piece.`).join(
    ' ',
  );

/** Scripts a first input `text` (relevance, selection, the agent's reply). */
function scriptInput(text: string, reply: string): void {
  script.relevance.set(text, [0.9, 0.9]);
  script.selection.set(text, { skills: [], toolsets: [] });
  script.reply.set(text, reply);
}

const target = () => ({
  address: inject('temporalAddress'),
  taskQueue: worker.taskQueue,
  gatewayUrl: gateway.url,
  token: TOKEN,
});

describe('streams that never lose the start', () => {
  it('send --wait to 10 new Sessions prints each whole reply', async () => {
    server.streamWith({ chunkChars: 12, delayMs: 5 });
    try {
      const sessions = Array.from({ length: 10 }, (_, i) => {
        const sessionId = uniqueId(`send-new-${i}`);
        const text = `Answer question ${i} at length (${sessionId})`;
        scriptInput(text, longReply(sessionId));
        return { sessionId, text };
      });
      const printed: Array<{ sessionId: string; out: string; err: string; code: number | null }> = [];
      // Five at a time: ten CLI processes at once would only measure this machine's load.
      for (let i = 0; i < sessions.length; i += 5) {
        printed.push(
          ...(await Promise.all(
            sessions.slice(i, i + 5).map(async ({ sessionId, text }) => {
              const run = harnessCli(target(), ['send', sessionId, text, '--wait', '--timeout', '90s']);
              const code = await run.exited;
              return { sessionId, out: run.out, err: run.err, code };
            }),
          )),
        );
      }
      for (const { sessionId, out, err, code } of printed) {
        expect(code, `${sessionId} printed: ${out} ${err}`).toBe(0);
        const recorded = (await client.history(sessionId)).find((h) => h.seq === 1)?.reply;
        expect(recorded).toBe(longReply(sessionId));
        // The streamed text, whole and once, on its own lines before the decision.
        const streamed = out.slice(0, out.search(/decision #1/));
        expect(streamed.endsWith(`\n${recorded}\n`), `${sessionId} printed: ${out}`).toBe(true);
        expect(out.split(recorded!).length - 1).toBe(1);
        expect(out).toContain('reply: printed above');
      }
      // How often the record had to finish what the live stream printed (stderr says so each time).
      const backstopped = printed.filter((p) => p.err.includes('the rest is from the decision record'));
      console.log(
        `send --wait: ${printed.length - backstopped.length}/${printed.length} replies whole from the stream`,
      );
      for (const p of backstopped) console.log(`${p.sessionId}: ${p.err.trim()}`);
    } finally {
      server.streamWith({ chunkChars: 8, delayMs: 0 });
    }
  }, 300_000);

  it('a follower that joins mid-step gets the reply so far, marked catch-up, then the rest', async () => {
    const sessionId = uniqueId('catch-up');
    const first = `Set up the catch-up test (${sessionId})`;
    scriptInput(first, 'Ready.');
    await client.submit(sessionId, { text: first });
    await client.waitForDecision(sessionId, 1);

    // An SSE stream open from before the step, so the gateway's shared reader runs when B joins.
    const early = readSse(`/sessions/${sessionId}/events?after=now`);
    const text = `Now write the long answer (${sessionId})`;
    const reply = longReply(`${sessionId} mid-step`);
    script.relevance.set(text, [0.9, 0.9]);
    script.reply.set(text, reply);
    server.streamWith({ chunkChars: 10, delayMs: 40 });
    try {
      // Wait until part of the step's text was published, then join three ways.
      let published = '';
      const unsubscribe = worker.events.subscribe(sessionId, (event) => {
        if ('kind' in event && event.kind === 'agent.delta' && !event.catchUp) published += event.text;
      });
      await client.submit(sessionId, { text });
      await waitFor(
        () => Promise.resolve(published),
        (soFar) => soFar.length >= 100,
      );
      unsubscribe();
      const after = `${1}.${Number.MAX_SAFE_INTEGER}`;
      const [library, sse, agUi] = await Promise.all([
        followLibrary(sessionId, after),
        readSse(`/sessions/${sessionId}/events?after=${after}`),
        readAgUi(`/sessions/${sessionId}/ag-ui`),
      ]);
      await early;

      for (const deltas of [library, sse]) {
        expect(deltas[0]?.catchUp).toBe(true);
        expect(deltas.filter((d) => d.catchUp).length).toBeGreaterThan(0);
        expect(deltas.some((d) => !d.catchUp)).toBe(true);
        expect(deltas.map((d) => d.text).join('')).toBe(reply);
      }
      const content = agUi.filter((e) => e.type === EventType.TEXT_MESSAGE_CONTENT) as unknown as Array<{
        delta: string;
        metadata?: { catchUp?: boolean };
      }>;
      expect(content[0]?.metadata?.catchUp).toBe(true);
      expect(content.map((c) => c.delta).join('')).toBe(reply);
    } finally {
      server.streamWith({ chunkChars: 8, delayMs: 0 });
    }
  });

  it('a stream of a Session that never appears answers 404 after its wait', async () => {
    const sessionId = uniqueId('never');
    const started = performance.now();
    const response = await fetch(`${gateway.url}/sessions/${sessionId}/events?wait=500`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(404);
    expect(performance.now() - started).toBeGreaterThanOrEqual(450);
    const bad = await fetch(`${gateway.url}/sessions/${sessionId}/events?wait=soon`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(bad.status).toBe(400);
  });
});

type Delta = Extract<SessionEvent, { kind: 'agent.delta' }>;

/** The client library's follower from `after` until the input's turn ends: its deltas. */
async function followLibrary(sessionId: string, after: string): Promise<Delta[]> {
  const deltas: Delta[] = [];
  const stop = AbortSignal.timeout(60_000);
  for await (const event of client.events(sessionId, { after, feed: worker.events, signal: stop })) {
    if (event.kind === 'agent.delta') deltas.push(event);
    if (event.kind === 'turn.finished' && event.seq === 2) break;
  }
  return deltas;
}

/** Reads a stream's SSE messages until `done` says so (or 60 s pass). */
async function readMessages(path: string, done: (data: string) => boolean): Promise<string[]> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 60_000);
  const messages: string[] = [];
  try {
    const response = await fetch(`${gateway.url}${path}`, {
      headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' },
      signal: stop.signal,
    });
    expect(response.status).toBe(200);
    let finished = false;
    const parser = createParser({
      onEvent(message) {
        if (finished || message.event) return;
        messages.push(message.data);
        if (done(message.data)) finished = true;
      },
    });
    const decoder = new TextDecoder();
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    while (!finished) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
  return messages;
}

/** The gateway's SSE of a Session until input 2's turn finished: its deltas. */
async function readSse(path: string): Promise<Delta[]> {
  const messages = await readMessages(path, (data) => {
    const event = JSON.parse(data) as SessionEvent;
    return event.kind === 'turn.finished' && event.seq === 2;
  });
  return messages.map((m) => JSON.parse(m) as SessionEvent).flatMap((e) => (e.kind === 'agent.delta' ? [e] : []));
}

/** The gateway's AG-UI stream of a Session until a run finishes. */
async function readAgUi(path: string): Promise<BaseEvent[]> {
  const messages = await readMessages(path, (data) => (JSON.parse(data) as BaseEvent).type === EventType.RUN_FINISHED);
  return messages.map((m) => JSON.parse(m) as BaseEvent);
}
