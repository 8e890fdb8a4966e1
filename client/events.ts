/**
 * Following a Session's events: first what the durable log holds after the caller's last id, then
 * the live feed. A live event whose `prev` is not the last one yielded (the feed dropped one, or a
 * worker restarted between pushing two) sends the follower back to the log, so it yields every
 * durable event exactly once and in order. Without a feed it reads the log every `pollMs`.
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
            // Best effort: shown when it follows what was yielded, never a resume point.
            if (last === null || compareEventIds(item.id, last) > 0) yield item;
            continue;
          }
          if (last !== null && compareEventIds(item.id, last) <= 0) continue;
          if (item.prev !== last) {
            inSync = false;
            continue;
          }
          yield item;
          last = item.id;
          if (item.kind === 'session.closed') return;
        }
      }
    }
  } finally {
    unsubscribe?.();
    stop?.removeEventListener('abort', notify);
  }
}
