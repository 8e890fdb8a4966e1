/**
 * Following a Session's events: first what the durable log holds after the caller's last id, then
 * the live feed. A live event whose `prev` is not the last one yielded (the feed dropped one, or a
 * worker restarted between pushing two) sends the follower back to the log, so it yields every
 * durable event exactly once and in order. Without a feed it reads the log every `pollMs`. Deltas of
 * a speculative agent step wait for their input's decision (SpeculativeDeltas).
 */
import {
  compareEventIds,
  type EventFeed,
  type EventHint,
  type EventsPage,
  type SessionEvent,
} from '../contract/events.js';

export interface FollowOptions {
  /** The last event id already seen; the follower yields only newer ones. Absent: all the log keeps. */
  after?: string;
  /** Live events; without one the follower reads the log every `pollMs`. */
  feed?: EventFeed;
  /** How often to read the log when there is no feed (default 1,000 ms). */
  pollMs?: number;
  /** Stops following (the iterator then returns). */
  signal?: AbortSignal;
  /** Called when the bounded log dropped events after `after` before they were read. */
  onGap?: (after: string | null) => void;
}

/** Reads one page of the log after an id. */
export type ReadPage = (after: string | undefined) => Promise<EventsPage>;

/** Yields the Session's durable events (and live agent deltas) in order; returns once it closes. */
export async function* followEvents(
  sessionId: string,
  readPage: ReadPage,
  options: FollowOptions = {},
): AsyncGenerator<SessionEvent> {
  let last: string | null = options.after ?? null;
  const held = new SpeculativeDeltas();
  const pushed: Array<SessionEvent | EventHint> = [];
  let wake: (() => void) | undefined;
  const stop = options.signal;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  stop?.addEventListener('abort', notify);
  const unsubscribe = options.feed?.subscribe(
    sessionId,
    (event) => {
      pushed.push(event);
      notify();
    },
    options.after,
  );
  try {
    for (;;) {
      // Catch up from the durable log.
      for (let more = true; more;) {
        const page = await readPage(last ?? undefined);
        if (page.gap) options.onGap?.(last);
        for (const event of page.events) {
          yield event;
          last = event.id;
          yield* held.settle(event);
          if (event.kind === 'session.closed') return;
        }
        more = page.more;
      }
      // Then live, until the feed shows that something was missed.
      for (let inSync = true; inSync;) {
        if (stop?.aborted) return;
        if (pushed.length === 0) {
          const timedOut = await new Promise<boolean>((resolve) => {
            wake = () => resolve(false);
            if (!options.feed) setTimeout(() => resolve(true), options.pollMs ?? 1_000);
          });
          if (stop?.aborted) return;
          if (timedOut) break;
        }
        while (pushed.length > 0 && inSync) {
          const item = pushed.shift() as SessionEvent | EventHint;
          if ('hint' in item) {
            if (last === null || compareEventIds(item.id, last) > 0) inSync = false;
            continue;
          }
          if (item.kind === 'agent.delta') {
            if (item.speculative) yield* held.offer(item);
            // Best effort: shown when it follows what was yielded, never a resume point.
            else if (last === null || compareEventIds(item.id, last) > 0) yield item;
            continue;
          }
          if (last !== null && compareEventIds(item.id, last) <= 0) continue;
          if (item.prev !== last) {
            inSync = false;
            continue;
          }
          yield item;
          last = item.id;
          yield* held.settle(item);
          if (item.kind === 'session.closed') return;
        }
      }
    }
  } finally {
    unsubscribe?.();
    stop?.removeEventListener('abort', notify);
  }
}

type Delta = Extract<SessionEvent, { kind: 'agent.delta' }>;

/** Most speculative deltas held at once; older ones are dropped beyond it. */
const HELD_MAX = 2_000;
/** How many inputs' decisions are remembered for deltas that arrive after them. */
const DECISIONS_KEPT = 16;

/**
 * The hold on speculative deltas: text a step streamed before its input's decision is shown only
 * once that decision is `continue`, and dropped for any other decision. A delta that arrives after
 * the decision goes through (or not) at once. Deltas of an input whose decision the follower never
 * saw (it started after it) are dropped when the input's turn finishes or a later input is bound.
 */
export class SpeculativeDeltas {
  private readonly waiting: Delta[] = [];
  private readonly decided = new Map<number, string>();

  /** A speculative delta arrived: what may be shown now (itself, or nothing). */
  offer(delta: Delta): Delta[] {
    const decision = this.decided.get(delta.seq);
    if (decision !== undefined) return decision === 'continue' ? [delta] : [];
    this.waiting.push(delta);
    if (this.waiting.length > HELD_MAX) this.waiting.shift();
    return [];
  }

  /** A durable event was yielded: the held deltas it releases, in the order they arrived. */
  settle(event: SessionEvent): Delta[] {
    if (event.kind === 'decision') {
      this.decided.set(event.seq, event.decision);
      if (this.decided.size > DECISIONS_KEPT) this.decided.delete(this.decided.keys().next().value as number);
      return this.take((d) => d.seq === event.seq).filter(() => event.decision === 'continue');
    }
    if (event.kind === 'turn.finished' || event.kind === 'input.bound' || event.kind === 'session.closed') {
      // Whatever still waits belongs to an input whose decision is behind the follower.
      const done = event.kind === 'input.bound' ? (d: Delta) => d.seq < event.seq : (d: Delta) => d.seq <= event.seq;
      this.take(done);
    }
    return [];
  }

  private take(match: (delta: Delta) => boolean): Delta[] {
    const taken = this.waiting.filter(match);
    if (taken.length > 0) this.waiting.splice(0, this.waiting.length, ...this.waiting.filter((d) => !match(d)));
    return taken;
  }
}
