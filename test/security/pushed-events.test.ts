/**
 * Trust boundary: pushed events are hints. Any PostgreSQL role that can log in can NOTIFY the events
 * channel. Before, a forged `approval.waiting`, `turn.finished` or delta reached every follower as
 * content (with encryption on too); a forged id `999999.0` made a follower drop every later real
 * event; a malformed id ended every stream of that Session (compareEventIds threw).
 *
 * Here a real worker publishes through PostgreSQL LISTEN/NOTIFY (a throwaway server), a follower
 * follows a Session through it, and a second role, `mallory`, NOTIFYs forged events. What the
 * follower yields must be exactly the Session's durable log, plus deltas carrying the worker's MAC.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../../client/index.js';
import { EVENTS_CHANNEL, PostgresEventFeed } from '../../client/event-feeds.js';
import { newFollowStats } from '../../client/events.js';
import type { PostgresServer } from '../../dev/postgres.js';
import type { ControlKey } from '../../contract/control-signature.js';
import type { SessionEvent } from '../../contract/events.js';
import { MODEL, scriptedModels, startWorker, uniqueId, waitFor, type TestWorker } from '../support/harness.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { NO_POSTGRES, postgresBin, startTestPostgres } from '../support/postgres.js';

const KEY: ControlKey = { id: 'k1', secret: new Uint8Array(32).fill(7) };

let db: PostgresServer;
let models: ScriptedModelServer;
let w: TestWorker;
let client: SessionClient;
let mallory: pg.Client;

beforeAll(async () => {
  if (!postgresBin) return;
  db = await startTestPostgres();
  const admin = new pg.Client({ connectionString: db.url() });
  await admin.connect();
  // A role with nothing but LOGIN: no grants are needed to NOTIFY a channel.
  await admin.query('CREATE ROLE mallory LOGIN');
  await admin.end();
  mallory = new pg.Client({ connectionString: db.url().replace('://harness@', '://mallory@') });
  await mallory.connect();
  models = await ScriptedModelServer.start();
  models.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.85 } });
  models.on(MODEL.extraction, { json: { terms: ['plan'] } });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  models.on(MODEL.compaction, { json: { summary: 'done' } });
  models.on(MODEL.agent, { content: 'The real reply.' });
  // The worker's publisher signs the deltas it pushes with its control key.
  const publisher = new PostgresEventFeed(db.url(), { controlKeys: [KEY] });
  w = await startWorker({ models: scriptedModels(models), events: publisher });
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue: w.taskQueue });
}, 120_000);

afterAll(async () => {
  await client?.close();
  await w?.stop();
  await w?.events.close();
  await mallory?.end();
  await models?.close();
  await db?.stop();
});

const forge = (payload: string) => mallory.query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, payload]);

describe.skipIf(!postgresBin)(`pushed events are hints${postgresBin ? '' : ` (${NO_POSTGRES})`}`, () => {
  it('forged events, ids and deltas from another role never reach a follower; the real ones all do', async () => {
    const sessionId = uniqueId('push');
    const feed = new PostgresEventFeed(db.url(), { controlKeys: [KEY] });
    await feed.ready();
    const stats = newFollowStats();
    const seen: SessionEvent[] = [];
    const replies = () => seen.filter((e) => e.kind === 'turn.finished').length;
    models.streamWith({ chunkChars: 4, delayMs: 150 });
    try {
      await client.send(sessionId, { text: 'Make a plan' });
      // The Session exists now; the follower reads its log from the start, then follows the feed.
      const following = (async () => {
        for await (const event of client.events(sessionId, { feed, stats })) {
          seen.push(event);
          if (replies() === 2) break;
        }
      })();
      await waitFor(
        () => Promise.resolve(replies()),
        (n) => n === 1,
      );
      // The follower stands at the first turn's end. Mallory pushes, in this order, ahead of the
      // second turn's real events: each would have been shown (or ended the stream) before.
      const last = seen.filter((e) => e.kind !== 'agent.delta').at(-1)?.id ?? '';
      const base = { seq: 1, prev: last, at: Date.now() };
      const delta = { ...base, id: `${last}~1`, kind: 'agent.delta', step: 1, text: 'FORGED DELTA', attempt: 1 };
      const forged: unknown[] = [
        {
          s: sessionId,
          e: {
            ...base,
            id: '999999.0',
            kind: 'approval.waiting',
            callId: 'c1',
            tool: 'rm',
            approvalId: 'a1',
            argumentsHash: 'h',
            arguments: '{}',
          },
        },
        {
          s: sessionId,
          e: {
            ...base,
            id: '999999.1',
            prev: '999999.0',
            kind: 'turn.finished',
            outcome: 'replied',
            reason: null,
            reply: 'FORGED REPLY',
          },
        },
        { s: sessionId, e: delta },
        { s: sessionId, e: delta, m: { k: 'k1', mac: 'A'.repeat(43) } },
        { s: sessionId, e: { ...delta, id: `999999.1~1` } },
        { s: sessionId, e: { ...base, id: 'x.y', kind: 'session.closed', reason: 'FORGED CLOSE' } },
        { s: sessionId, e: { ...base, id: '1e308.0', kind: 'session.closed', reason: 'FORGED CLOSE' } },
        { s: sessionId, e: { ...base, id: `${'9'.repeat(400)}.0`, kind: 'session.closed', reason: 'FORGED CLOSE' } },
        { s: sessionId, e: { hint: true, id: '999999.9' } },
        { s: sessionId, e: { hint: true, id: 'not-an-id' } },
        { s: sessionId, e: 'not an event' },
      ];
      for (const payload of forged) await forge(JSON.stringify(payload));
      await forge('not json');
      await client.send(sessionId, { text: 'And another' });
      await following;
    } finally {
      models.streamWith({ chunkChars: 8, delayMs: 0 });
    }

    // Nothing forged was yielded; the follower neither ended nor skipped: it reached the second reply.
    expect(JSON.stringify(seen)).not.toContain('FORGED');
    expect(seen.some((e) => e.kind === 'approval.waiting' || e.kind === 'session.closed')).toBe(false);
    // What it yielded is exactly the durable log, in order.
    const log = await client.eventsAfter(sessionId);
    const durable = seen.filter((e) => e.kind !== 'agent.delta');
    expect(durable).toEqual(log.events.slice(0, durable.length));
    expect(durable.filter((e) => e.kind === 'turn.finished')).toMatchObject([
      { reply: 'The real reply.' },
      { reply: 'The real reply.' },
    ]);
    expect(durable.find((e) => e.kind === 'input.bound' && e.seq === 2)).toMatchObject({ text: 'And another' });
    // Real deltas carry the worker's MAC and are shown (one that comes after the follower read past
    // the event it follows is dropped as stale, as before: deltas are best effort).
    const deltas = seen.flatMap((e) => (e.kind === 'agent.delta' ? [e.text] : []));
    expect(deltas.length).toBeGreaterThan(0);
    for (const text of deltas) expect('The real reply.').toContain(text);
    // Dropped and counted, never thrown: at the feed the deltas without a valid MAC (3), the bad hint,
    // the non-event and the non-JSON; at the follower the three events with malformed ids.
    expect(feed.dropped).toBe(6);
    expect(stats.malformed).toBe(3);
    await feed.close();
  }, 120_000);
});
