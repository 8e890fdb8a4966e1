/**
 * Streamed agent text without Temporal: how the agent step coalesces the pieces a model streams into
 * `agent.delta` events, and how a follower (followEvents, which the gateway's SSE and `harness watch`
 * use) shows deltas: in place after the durable events, and a speculative step's only once its input's
 * decision is `continue`. The feed is the real in-process feed; the durable log is a list read by page.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { DeltaStream, type DeltaOutlet } from '../../activities/agent-deltas.js';
import { InProcessEventFeed } from '../../client/event-feeds.js';
import { followEvents } from '../../client/events.js';
import { compareEventIds, type EventsPage, type SessionEvent } from '../../contract/events.js';

type Delta = Extract<SessionEvent, { kind: 'agent.delta' }>;

/** An outlet that keeps what is published and answers the last durable id after `delayMs`. */
function recordingOutlet(lastId: string | null, delayMs = 0) {
  const published: Delta[] = [];
  const outlet: DeltaOutlet = {
    publish: (_sessionId, event) => published.push(event as Delta),
    lastEventId: async () => {
      await sleep(delayMs);
      return lastId;
    },
  };
  return { outlet, published };
}

describe('DeltaStream', () => {
  it('follows the event the request names without asking the Session', async () => {
    const published: Delta[] = [];
    let asked = 0;
    const outlet: DeltaOutlet = {
      publish: (_sessionId, event) => published.push(event as Delta),
      lastEventId: () => {
        asked++;
        return Promise.resolve('9.9');
      },
    };
    const stream = new DeltaStream(outlet, 's', { step: 1, attempt: 1, speculative: false, afterEvent: '4.2' });
    await sleep(1);
    stream.push('Hi');
    await stream.end();
    expect(asked).toBe(0);
    expect(published.map((d) => [d.id, d.seq, d.prev])).toEqual([['4.2~0', 4, '4.2']]);
  });

  it('publishes the first piece at once, then at most one delta per interval, and the rest at the end', async () => {
    const { outlet, published } = recordingOutlet('3.4');
    const stream = new DeltaStream(outlet, 's', { step: 2, attempt: 1, speculative: false, intervalMs: 200 });
    await sleep(5); // the base id is known
    stream.push('Hel');
    expect(published.map((d) => d.text)).toEqual(['Hel']);
    for (const piece of ['lo', ', ', 'wor']) stream.push(piece);
    expect(published).toHaveLength(1); // within the interval: held and joined
    await sleep(260);
    expect(published.map((d) => d.text)).toEqual(['Hel', 'lo, wor']);
    stream.push('ld');
    await stream.end();
    expect(published.map((d) => d.text).join('')).toBe('Hello, world');
    expect(published.map((d) => d.id)).toEqual(['3.4~0', '3.4~1', '3.4~2']);
    expect(published[0]).toMatchObject({ kind: 'agent.delta', seq: 3, prev: '3.4', step: 2, attempt: 1 });
    expect(published[0]?.speculative).toBeUndefined();
    // Deltas order after the durable event they follow, and never before the next one.
    expect(compareEventIds(published[0]!.id, '3.4')).toBeGreaterThan(0);
    expect(compareEventIds(published[2]!.id, '3.5')).toBeLessThan(0);
  });

  it('holds pieces until the base id is known, cuts at maxChars, and marks a speculative step', async () => {
    const { outlet, published } = recordingOutlet('7.1', 50);
    const stream = new DeltaStream(outlet, 's', { step: 1, attempt: 2, speculative: true, maxChars: 4 });
    stream.push('abcdefghij');
    expect(published).toHaveLength(0);
    await sleep(80);
    expect(published.map((d) => d.text)).toEqual(['abcd', 'efgh', 'ij']);
    expect(published.every((d) => d.speculative === true && d.attempt === 2 && d.seq === 7)).toBe(true);
    await stream.end();
  });

  it('drops the text when the model call failed, and publishes nothing when the base id cannot be read', async () => {
    const { outlet, published } = recordingOutlet('1.0');
    const failed = new DeltaStream(outlet, 's', { step: 1, attempt: 1, speculative: false, intervalMs: 1_000 });
    await sleep(5);
    failed.push('first ');
    failed.push('partial');
    failed.stop();
    await sleep(20);
    expect(published.map((d) => d.text)).toEqual(['first ']);

    const unreadable: DeltaOutlet = {
      publish: (_s, event) => published.push(event as Delta),
      lastEventId: () => Promise.reject(new Error('no such workflow')),
    };
    const lines: string[] = [];
    const blind = new DeltaStream(unreadable, 's', {
      step: 1,
      attempt: 1,
      speculative: false,
      log: (line) => lines.push(line),
    });
    blind.push('text');
    await blind.end();
    expect(published).toHaveLength(1);
    expect(lines[0]).toMatch(/not published: no such workflow/);
  });
});

/** A durable log read by page, as the `events` query answers. */
class Log {
  readonly events: SessionEvent[] = [];
  private last: string | null = null;

  append(seq: number, ordinal: number, body: Record<string, unknown>): SessionEvent {
    const id = `${seq}.${ordinal}`;
    const event = { ...body, id, seq, prev: this.last, at: Date.now() } as SessionEvent;
    this.events.push(event);
    this.last = id;
    return event;
  }

  read = (after: string | undefined): Promise<EventsPage> =>
    Promise.resolve({
      events: this.events.filter((e) => after === undefined || compareEventIds(e.id, after) > 0),
      gap: false,
      lastId: this.last,
      more: false,
    });
}

function delta(base: string, n: number, text: string, speculative: boolean): Delta {
  const seq = Number(base.split('.')[0]);
  return {
    kind: 'agent.delta',
    id: `${base}~${n}`,
    seq,
    prev: base,
    at: Date.now(),
    step: 1,
    text,
    attempt: 1,
    ...(speculative ? { speculative: true } : {}),
  };
}

/** Follows the session until `count` items were yielded; what each was (`kind` or `delta:<text>`). */
async function follow(log: Log, feed: InProcessEventFeed, count: number, drive: () => Promise<void>) {
  const seen: string[] = [];
  const stop = new AbortController();
  const reading = (async () => {
    for await (const event of followEvents('s', log.read, { feed, signal: stop.signal })) {
      seen.push(event.kind === 'agent.delta' ? `delta:${event.text}` : event.kind);
      if (seen.length >= count) break;
    }
  })();
  await sleep(10);
  await drive();
  await Promise.race([reading, sleep(2_000)]);
  stop.abort();
  return seen;
}

describe('followEvents and speculative deltas', () => {
  /** Publishes a durable event as the worker's sink does: appended to the log, then pushed. */
  const durable = (log: Log, feed: InProcessEventFeed, seq: number, ordinal: number, body: Record<string, unknown>) =>
    feed.publish('s', log.append(seq, ordinal, body));
  const bound = { kind: 'input.bound', messageId: 'm', text: 'go on', from: null, routedFrom: null };
  const decision = (d: string) => ({ kind: 'decision', decision: d, scores: null, degraded: null });
  const finished = { kind: 'turn.finished', outcome: 'replied', reason: null, reply: 'Hello' };

  it("holds a speculative step's deltas until the decision, then shows them when it is continue", async () => {
    const log = new Log();
    const feed = new InProcessEventFeed();
    const seen = await follow(log, feed, 6, async () => {
      durable(log, feed, 1, 0, bound);
      feed.publish('s', delta('1.0', 0, 'Hel', true));
      feed.publish('s', delta('1.0', 1, 'lo', true));
      await sleep(20);
      durable(log, feed, 1, 1, decision('continue'));
      // After the decision a speculative delta goes through at once.
      feed.publish('s', delta('1.0', 2, '!', true));
      durable(log, feed, 1, 2, finished);
    });
    expect(seen).toEqual(['input.bound', 'decision', 'delta:Hel', 'delta:lo', 'delta:!', 'turn.finished']);
  });

  it('drops them when the decision is anything else, and shows the non-speculative step that follows', async () => {
    const log = new Log();
    const feed = new InProcessEventFeed();
    const seen = await follow(log, feed, 4, async () => {
      durable(log, feed, 1, 0, bound);
      feed.publish('s', delta('1.0', 0, 'guessed', true));
      await sleep(20);
      durable(log, feed, 1, 1, decision('new-phase'));
      feed.publish('s', delta('1.0', 1, 'late guess', true));
      feed.publish('s', delta('1.1', 0, 'real', false));
      durable(log, feed, 1, 2, finished);
    });
    expect(seen).toEqual(['input.bound', 'decision', 'delta:real', 'turn.finished']);
  });

  it('shows the deltas pushed during its first log read when that read already holds the end of the turn', async () => {
    const log = new Log();
    const feed = new InProcessEventFeed();
    const seen: string[] = [];
    const stop = new AbortController();
    // The first read is slow (a new Session's log, a loaded server): the whole turn happens meanwhile.
    let reads = 0;
    const slowRead = async (after: string | undefined) => {
      if (reads++ === 0) await sleep(50);
      return log.read(after);
    };
    const reading = (async () => {
      for await (const event of followEvents('s', slowRead, { feed, signal: stop.signal })) {
        seen.push(event.kind === 'agent.delta' ? `delta:${event.text}` : event.kind);
        if (event.kind === 'turn.finished') break;
      }
    })();
    await sleep(10);
    durable(log, feed, 1, 0, bound);
    durable(log, feed, 1, 1, decision('initialize'));
    feed.publish('s', delta('1.1', 0, 'Hel', false));
    feed.publish('s', delta('1.1', 1, 'lo', false));
    durable(log, feed, 1, 2, finished);
    await Promise.race([reading, sleep(2_000)]);
    stop.abort();
    expect(reads).toBe(1);
    expect(seen).toEqual(['input.bound', 'decision', 'delta:Hel', 'delta:lo', 'turn.finished']);
  });

  it('reads the decision a follower started after from the log, so a speculative step it joined shows', async () => {
    const log = new Log();
    const feed = new InProcessEventFeed();
    log.append(1, 0, bound);
    log.append(1, 1, decision('continue'));
    const seen: string[] = [];
    const stop = new AbortController();
    // Started after the decision: it reads that decision from the log once (a follower joining mid-step).
    const reading = (async () => {
      for await (const event of followEvents('s', log.read, { feed, signal: stop.signal, after: '1.1' })) {
        seen.push(event.kind === 'agent.delta' ? `delta:${event.text}` : event.kind);
        if (event.kind === 'input.bound') break;
      }
    })();
    await sleep(10);
    feed.publish('s', delta('1.0', 0, 'unknown', true));
    durable(log, feed, 1, 2, finished);
    feed.publish('s', delta('1.0', 1, 'after the end', true));
    durable(log, feed, 2, 0, { ...bound, messageId: 'm2' });
    await Promise.race([reading, sleep(2_000)]);
    stop.abort();
    expect(seen.slice(0, 1)).toEqual(['delta:unknown']);
    expect(seen.filter((k) => !k.startsWith('delta:'))).toEqual(['turn.finished', 'input.bound']);
  });
});
