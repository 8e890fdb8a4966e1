/**
 * The event stream on the real dev server with a real worker: the durable events of an input in
 * order with stable, chained ids; a subscriber that reconnects with the last id it saw gets every
 * later event exactly once; a live push that is lost is filled from the durable log; and an idle
 * subscriber with a feed makes no queries.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../client/index.js';
import { InProcessEventFeed } from '../client/event-feeds.js';
import { compareEventIds, type EventHint, type EventFeed, type SessionEvent } from '../contract/events.js';
import { MODEL, scriptedModels, startWorker, uniqueId, type TestWorker } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';

let models: ScriptedModelServer;
let w: TestWorker;
let client: SessionClient;

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  models.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.85 } });
  models.on(MODEL.extraction, { json: { terms: ['comfyui', 'guide'] } });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  models.on(MODEL.compaction, { json: { summary: 'done' } });
  models.on(MODEL.agent, { content: 'Here is the plan.' });
  w = await startWorker({ models: scriptedModels(models) });
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue: w.taskQueue });
});

afterAll(async () => {
  await client?.close();
  await w?.stop();
  await models?.close();
});

/** Reads events from the iterator until `done` says stop (or the timeout passes). */
async function collect(
  events: AsyncGenerator<SessionEvent>,
  done: (seen: SessionEvent[]) => boolean,
  timeoutMs = 30_000,
): Promise<SessionEvent[]> {
  const seen: SessionEvent[] = [];
  const timer = setTimeout(() => void events.return(undefined), timeoutMs);
  try {
    for await (const event of events) {
      seen.push(event);
      if (done(seen)) break;
    }
  } finally {
    clearTimeout(timer);
  }
  return seen;
}

/** The durable events among those seen (agent deltas are best effort and never in the log). */
const durable = (events: SessionEvent[]) => events.filter((e) => e.kind !== 'agent.delta');

const turnsFinished = (n: number) => (seen: SessionEvent[]) =>
  seen.filter((e) => e.kind === 'turn.finished').length >= n;

describe('events', () => {
  it('an input yields its durable events in order, ids chained by prev, live from the feed', async () => {
    const sessionId = uniqueId('ev');
    await client.send(sessionId, { text: 'Research ComfyUI and deliver a Markdown guide' });
    const seen = durable(await collect(client.events(sessionId, { feed: w.events }), turnsFinished(1)));
    const kinds = seen.map((e) => e.kind);
    // Understanding the input is the stage that makes the decision.
    expect(kinds.slice(0, 4)).toEqual(['input.bound', 'stage.started', 'stage.finished', 'decision']);
    expect(seen[1]).toMatchObject({ stage: 'Understanding the task meaning' });
    expect(seen[3]).toMatchObject({ decision: 'initialize' });
    expect(kinds.at(-1)).toBe('turn.finished');
    const finished = seen.at(-1) as Extract<SessionEvent, { kind: 'turn.finished' }>;
    expect(finished.outcome).toBe('replied');
    expect(finished.reply).toBe('Here is the plan.');
    expect(seen[0]?.id).toBe('1.0');
    for (let i = 1; i < seen.length; i++) {
      expect(seen[i]?.prev).toBe(seen[i - 1]?.id);
      expect(compareEventIds(seen[i]!.id, seen[i - 1]!.id)).toBeGreaterThan(0);
    }
    // Every started stage finished, in order.
    const started = seen.flatMap((e) => (e.kind === 'stage.started' ? [e.stage] : []));
    const ended = seen.flatMap((e) => (e.kind === 'stage.finished' ? [e.stage] : []));
    expect(ended).toEqual(started);
  });

  it('a subscriber that reconnects with the last id it saw gets every later durable event exactly once', async () => {
    const sessionId = uniqueId('ev-resume');
    await client.send(sessionId, { text: 'Research ComfyUI and deliver a Markdown guide' });
    const first = await collect(client.events(sessionId, { feed: w.events }), (seen) => seen.length >= 4);
    const lastSeen = first.at(-1)!.id;
    // The second input happens while nobody is subscribed.
    await client.send(sessionId, { text: 'Add a section on custom nodes' });
    const rest = await collect(client.events(sessionId, { feed: w.events, after: lastSeen }), turnsFinished(2));
    const all = durable([...first, ...rest]);
    const ids = all.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const log = await client.eventsAfter(sessionId);
    const upToNow = log.events.filter((e) => compareEventIds(e.id, rest.at(-1)!.id) <= 0).map((e) => e.id);
    expect(ids).toEqual(upToNow);
    expect(rest.filter((e) => e.kind === 'input.bound').map((e) => e.seq)).toEqual([2]);
  });

  it('a live push that is lost is read from the durable log, so nothing is skipped', async () => {
    const sessionId = uniqueId('ev-lossy');
    // A feed that drops every third event it is given, as a broken connection would.
    let pushed = 0;
    const lossy: EventFeed = {
      subscribe: (id, listener) =>
        w.events.subscribe(id, (event: SessionEvent | EventHint) => {
          if (++pushed % 3 !== 0) listener(event);
        }),
    };
    await client.send(sessionId, { text: 'Research ComfyUI and deliver a Markdown guide' });
    const following = collect(client.events(sessionId, { feed: lossy }), turnsFinished(3));
    await client.send(sessionId, { text: 'Add a section on custom nodes' });
    await client.send(sessionId, { text: 'And a troubleshooting section' });
    const seen = durable(await following);
    const log = await client.eventsAfter(sessionId);
    expect(pushed).toBeGreaterThan(3);
    expect(seen.map((e) => e.id)).toEqual(
      log.events.filter((e) => compareEventIds(e.id, seen.at(-1)!.id) <= 0).map((e) => e.id),
    );
  });

  it('with a feed, an idle subscriber makes no queries; without one it reads the log every pollMs', async () => {
    const sessionId = uniqueId('ev-idle');
    await client.send(sessionId, { text: 'Research ComfyUI and deliver a Markdown guide' });
    await collect(client.events(sessionId, { feed: w.events }), turnsFinished(1));
    let reads = 0;
    const countingRead = async (after: string | undefined) => {
      reads++;
      return client.eventsAfter(sessionId, after);
    };
    const { followEvents } = await import('../client/events.js');
    const controller = new AbortController();
    const withFeed = collect(
      followEvents(sessionId, countingRead, { feed: new InProcessEventFeed(), signal: controller.signal }),
      () => false,
    );
    await new Promise((r) => setTimeout(r, 1_500));
    controller.abort();
    await withFeed;
    expect(reads).toBe(1); // the catch-up read, then nothing while idle
    reads = 0;
    const polling = new AbortController();
    const withoutFeed = collect(
      followEvents(sessionId, countingRead, { pollMs: 200, signal: polling.signal }),
      () => false,
    );
    await new Promise((r) => setTimeout(r, 1_500));
    polling.abort();
    await withoutFeed;
    expect(reads).toBeGreaterThan(3);
  });

  it("reads the agent's first text delta before the turn finishes, and the deltas join to the reply", async () => {
    const sessionId = uniqueId('ev-delta');
    const reply = 'Streaming, piece by piece, before the turn is over.';
    models.enqueue(MODEL.agent, { content: reply });
    models.streamWith({ chunkChars: 6, delayMs: 80 });
    try {
      await client.send(sessionId, { text: 'Research ComfyUI and deliver a Markdown guide' });
      const seen = await collect(client.events(sessionId, { feed: w.events }), turnsFinished(1));
      const deltas = seen.flatMap((e) => (e.kind === 'agent.delta' ? [e] : []));
      const finishedAt = seen.findIndex((e) => e.kind === 'turn.finished');
      expect(deltas.length).toBeGreaterThan(1);
      // The first delta came while the turn was running: before its turn.finished, and earlier in time.
      const first = seen.findIndex((e) => e.kind === 'agent.delta');
      expect(first).toBeGreaterThan(-1);
      expect(first).toBeLessThan(finishedAt);
      expect(deltas[0]!.at).toBeLessThan(seen[finishedAt]!.at);
      expect(deltas.map((d) => d.text).join('')).toBe(reply);
      expect(seen[finishedAt]).toMatchObject({ reply });
      // Each delta follows the durable event the step began after, and never stands in the log.
      for (const d of deltas) {
        expect(d).toMatchObject({ seq: 1, step: 1, attempt: 1, prev: expect.stringMatching(/^1\.\d+$/) });
        expect(d.id.startsWith(`${d.prev}~`)).toBe(true);
        expect(d.speculative).toBeUndefined();
      }
      const log = await client.eventsAfter(sessionId);
      expect(log.events.some((e) => e.kind === 'agent.delta')).toBe(false);
    } finally {
      models.streamWith({ chunkChars: 8, delayMs: 0 });
    }
  });

  it('the events query refuses a malformed id with a clear error', async () => {
    const sessionId = uniqueId('ev-bad');
    await client.send(sessionId, { text: 'Research ComfyUI and deliver a Markdown guide' });
    await expect(client.eventsAfter(sessionId, 'yesterday')).rejects.toThrow(/event id like 12\.3/);
  });
});
