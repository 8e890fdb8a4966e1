/**
 * kill -9 of the worker process while the agent step streams its reply. 3 Sessions each get one input
 * whose scripted reply is 800 characters, streamed in 8-character pieces 25 ms apart. A subscriber per
 * Session follows its events (`SessionClient.events`) from before the input, live through PostgreSQL
 * NOTIFY (`HARNESS_EVENTS_URL`): the worker is another process, and PostgreSQL is how deltas cross
 * processes in the shipped cluster. Once every Session's first `agent.delta` has arrived the worker is
 * SIGKILLed and another started; the agent step is retried (attempt 2) and streams again from the start.
 *
 * Besides the suite's counts: every decision record is `replied` with the whole reply; each subscriber
 * saw every durable event exactly once, linked by `prev`, the same ids the `events` query returns
 * afterwards; `turn.finished` carries the whole reply; and the deltas of the last attempt join to it,
 * while the killed attempt's partial deltas are told apart by their `attempt`.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresEventFeed } from '../../client/event-feeds.js';
import { SessionClient } from '../../client/session-client.js';
import type { SessionEvent } from '../../contract/events.js';
import type { PostgresServer } from '../../dev/postgres.js';
import { MODEL, uniqueId } from '../support/harness.js';
import type { RecordedRequest, Reply } from '../support/model-server.js';
import { postgresBin, startTestPostgres } from '../support/postgres.js';
import { until } from './audit.js';
import { scriptFaultRoles } from './roles.js';
import {
  auditSessions,
  expectAuditClean,
  sendInputs,
  settled,
  startSessions,
  useKillableWorker,
  writeAuditRow,
} from './sessions.js';

const SESSIONS = 3;
const REPLY_CHARS = 800;
const STREAM = { chunkChars: 8, delayMs: 25 };
/**
 * The killed step is retried once its 10 s start-to-close timeout passes (sooner than the 30 s
 * heartbeat timeout); a streamed reply takes about 2.5 s, so a slow machine still has room.
 */
const settings = { modelTimeoutMs: 5_000, agentTimeoutMs: 10_000, modelAttempts: 3 };

type Delta = Extract<SessionEvent, { kind: 'agent.delta' }>;

// Registered before the worker's hooks, so PostgreSQL stops only after the last worker is gone.
let postgres: PostgresServer | undefined;
let feed: PostgresEventFeed | undefined;
beforeAll(async () => {
  if (!postgresBin) return;
  postgres = await startTestPostgres();
  feed = new PostgresEventFeed(postgres.url());
  await feed.ready();
});
afterAll(async () => {
  await feed?.close();
  await postgres?.stop();
});
const stack = useKillableWorker();

const inputText = (s: number) => `s${s} write a long note on tide pools`;

/** A long reply made only of the request's input: numbered lines repeating it, cut to REPLY_CHARS. */
function longReply(input: string): string {
  const lines = Array.from({ length: Math.ceil(REPLY_CHARS / input.length) + 1 }, (_, i) => `${i + 1}. ${input}`);
  return lines.join('\n').slice(0, REPLY_CHARS);
}

function agent(req: RecordedRequest): Reply {
  const input = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  return { content: longReply(input) };
}

/**
 * What a consumer shows of a step's live text: a retried step streams from the start again, so only
 * the pieces of the step's highest `attempt` count; an earlier attempt's partial text is dropped.
 */
function liveText(deltas: Delta[], step: number): string {
  const ofStep = deltas.filter((d) => d.step === step);
  const latest = Math.max(...ofStep.map((d) => d.attempt ?? 1));
  return ofStep
    .filter((d) => (d.attempt ?? 1) === latest)
    .map((d) => d.text)
    .join('');
}

/** Follows one Session's events into `seen` until stopped. */
function follow(client: SessionClient, sessionId: string) {
  const controller = new AbortController();
  const seen: SessionEvent[] = [];
  const done = (async () => {
    for await (const event of client.events(sessionId, { feed, signal: controller.signal })) seen.push(event);
  })();
  return { seen, done, stop: () => controller.abort() };
}

/** The Session's whole durable log, page by page through the `events` query. */
async function readLog(client: SessionClient, sessionId: string): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  for (let after: string | undefined, more = true; more;) {
    const page = await client.eventsAfter(sessionId, after);
    events.push(...page.events);
    after = page.events.at(-1)?.id ?? after;
    more = page.more;
  }
  return events;
}

const durableOf = (seen: SessionEvent[]) => seen.filter((e) => e.kind !== 'agent.delta');
const deltasOf = (seen: SessionEvent[]) => seen.flatMap((e) => (e.kind === 'agent.delta' ? [e] : []));

it.skipIf(!postgresBin)(
  'keeps every durable event and the whole reply when the worker is SIGKILLed while the agent streams',
  async () => {
    const started = Date.now();
    scriptFaultRoles(stack.models);
    stack.models.on(MODEL.agent, agent);
    stack.models.streamWith(STREAM);
    const taskQueue = uniqueId('faults-stream');
    await stack.start(taskQueue, { HARNESS_EVENTS_URL: postgres!.url() });
    const client = new SessionClient(stack.client, { taskQueue });
    const sessions = await startSessions(stack.client, { count: SESSIONS, prefix: 'stream', taskQueue, settings });
    // Subscribed before the input goes in: the followers read the (empty) log, then listen.
    const followers = sessions.map((s) => follow(client, s.sessionId));
    await sendInputs(sessions, 1, inputText);

    // Kill once every Session shows streamed text, or as soon as one has finished its turn (it then ran
    // before the others; the kill still lands in theirs).
    const caughtAt = await until(
      () => Promise.resolve(followers.map((f) => ({ deltas: deltasOf(f.seen), seen: f.seen }))),
      (views) =>
        views.every((v) => v.deltas.length > 0) || views.some((v) => v.seen.some((e) => e.kind === 'turn.finished')),
      120_000,
    );
    await stack.killAndReplace();
    const textAtKill = caughtAt.map((v) => liveText(v.deltas, 1).length);
    const finishedAtKill = caughtAt.map((v) => v.seen.some((e) => e.kind === 'turn.finished'));

    await settled(sessions, 1);
    const audit = await auditSessions(stack.client, sessions);
    // The followers have caught up once their last durable id is the log's last.
    const logs = await Promise.all(sessions.map((s) => readLog(client, s.sessionId)));
    await until(
      () => Promise.resolve(followers.map((f) => durableOf(f.seen).at(-1)?.id)),
      (lasts) => lasts.every((id, i) => id === logs[i]!.at(-1)?.id),
      60_000,
    );
    for (const f of followers) f.stop();
    await Promise.all(followers.map((f) => f.done));

    const perSession = sessions.map((session, i) => {
      const expected = longReply(inputText(i));
      const seen = followers[i]!.seen;
      const durable = durableOf(seen);
      const deltas = deltasOf(seen);
      const attempts = [...new Set(deltas.map((d) => d.attempt ?? 1))].sort((a, b) => a - b);
      const killed = deltas.filter((d) => (d.attempt ?? 1) < Math.max(...attempts));
      return {
        sessionId: session.sessionId,
        expected,
        record: audit.records[i]![0]?.agent,
        seenIds: durable.map((e) => e.id),
        logIds: logs[i]!.map((e) => e.id),
        brokenLinks: durable.filter((e, k) => e.prev !== (k === 0 ? null : durable[k - 1]!.id)).map((e) => e.id),
        finished: durable.filter((e) => e.kind === 'turn.finished'),
        attempts,
        killedText: killed.map((d) => d.text).join(''),
        live: liveText(deltas, 1),
        deltaPrevs: [...new Set(deltas.map((d) => d.prev))],
      };
    });
    const caught = perSession.filter((p) => p.attempts.length > 1).length;

    writeAuditRow(audit, {
      scenario: '9 worker kill -9 mid agent stream',
      sessions: SESSIONS,
      inputs: SESSIONS,
      started,
      kills: [`stream (${finishedAtKill.filter((f) => !f).length} of ${SESSIONS} turns streaming)`],
      missed: [],
      notes:
        `reply ${REPLY_CHARS} chars in ${STREAM.chunkChars}-char pieces ${STREAM.delayMs} ms apart; text shown ` +
        `at the kill ${textAtKill.join('/')} chars; streams retried ${caught}, killed-attempt text seen ` +
        `${perSession.map((p) => p.killedText.length).join('/')} chars; durable events seen ` +
        `${perSession.map((p) => p.seenIds.length).join('/')} (log ${perSession.map((p) => p.logIds.length).join('/')})`,
    });

    expectAuditClean(audit);
    for (const p of perSession) {
      // The decision record is whole: replied, with the full text.
      expect(p.record).toMatchObject({ outcome: 'replied', reply: p.expected });
      // Every durable event exactly once, in order, linked by prev: the same ids as the log.
      expect(new Set(p.seenIds).size).toBe(p.seenIds.length);
      expect(p.seenIds).toEqual(p.logIds);
      expect(p.brokenLinks).toEqual([]);
      expect(p.finished).toHaveLength(1);
      expect(p.finished[0]).toMatchObject({ outcome: 'replied', reply: p.expected });
      // The last attempt's deltas join to the reply; a killed attempt's are a prefix of it, told apart by attempt.
      expect(p.live).toBe(p.expected);
      expect(p.expected.startsWith(p.killedText)).toBe(true);
      // Both attempts' deltas follow the same durable event (the one the step's request was sent after).
      expect(p.deltaPrevs).toHaveLength(1);
      expect(p.logIds).toContain(p.deltaPrevs[0]);
    }
    // The kill landed mid-stream: at least one step was retried and streamed again, and every Session
    // still streaming at the kill had shown part of its text, not all of it.
    expect(caught).toBeGreaterThan(0);
    for (const [i, p] of perSession.entries()) {
      if (finishedAtKill[i]) continue;
      expect(textAtKill[i]).toBeLessThan(REPLY_CHARS);
      if (textAtKill[i]! > 0) expect(p.attempts.length).toBeGreaterThan(1);
    }
  },
);
