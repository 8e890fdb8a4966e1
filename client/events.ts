/**
 * Following a Session's events: first what the durable log holds after the caller's last id, then
 * the live feed. A push is a hint, never content: whoever can reach the transport (any role that can
 * log in to the events database can NOTIFY) can push anything, so a pushed durable event only tells
 * the follower that the log may have something newer; what it yields, and where it stands, come from
 * the log. It yields every durable event exactly once and in order. Without a feed it reads the log
 * every `pollMs`.
 *
 * The one thing shown from a push is an agent delta (best effort text, never in the log), right after
 * the durable event it follows: at once when that is the last one yielded, and when a log read reaches
 * it for one pushed while that read was on its way (a quick turn's whole log can come in one read, so
 * its deltas would otherwise arrive behind the position); a feed that has control keys drops deltas
 * without a valid MAC before they get here (PostgresEventFeed). Deltas of a speculative agent step
 * wait for their input's decision (SpeculativeDeltas; a follower that started after it reads it from
 * the log). A feed replays the agent step in progress to a new subscription (`catchUp`, StepDeltas):
 * each piece is shown once (ShownDeltas), so a replay never repeats text. A push that is malformed,
 * or a delta that claims a place the log does not reach, is dropped and counted in `stats`, never thrown.
 */
import { compareEventIds, SessionEvent, type EventFeed, type EventsPage } from '../contract/events.js';

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
  /** Counts what the follower dropped from its feed; pass one to read it (logs, metrics, tests). */
  stats?: FollowStats;
}

/** What a follower dropped from its live feed. */
export interface FollowStats {
  /** Pushes that were not an event or hint with a well-formed id (`a.b`, `1e9.0`, no id at all). */
  malformed: number;
  /** Deltas that claimed to follow a durable event the log did not hold when read up to it. */
  ahead: number;
  /** Pushes dropped because more were waiting than the follower keeps (the log read covers them). */
  overflow: number;
}

/** A fresh FollowStats, all zero. */
export const newFollowStats = (): FollowStats => ({ malformed: 0, ahead: 0, overflow: 0 });
/** Most pushes kept waiting; a flood beyond it is dropped (and the next log read covers it). */
const PUSHED_MAX = 1_000;
/** An id part kept as a number: longer ones lose precision in `Number` and stop ordering. */
const ID_PART = /^\d{1,15}$/;

/** `id` when it is a durable event's id (`12.3`), else null. */
function durableId(id: unknown): string | null {
  if (typeof id !== 'string') return null;
  const [seq, ordinal, ...rest] = id.split('.');
  return rest.length === 0 && ID_PART.test(seq ?? '') && ID_PART.test(ordinal ?? '') ? id : null;
}

/** The durable id a delta follows (`12.3` of `12.3~4`), or null when `id` is not a delta's id. */
function deltaBase(id: unknown): string | null {
  if (typeof id !== 'string') return null;
  const [base, n, ...rest] = id.split('~');
  return rest.length === 0 && ID_PART.test(n ?? '') ? durableId(base) : null;
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
  const stats = options.stats ?? newFollowStats();
  const held = new SpeculativeDeltas();
  const shown = new ShownDeltas();
  /** Inputs whose decision was looked up in the log for their speculative deltas. */
  const looked = new Set<number>();
  /** Input `seq`'s decision event, read from the log up to the follower's position (null: not kept). */
  async function decisionOf(seq: number): Promise<SessionEvent | null> {
    let position = `${seq - 1}.${Number.MAX_SAFE_INTEGER}`;
    for (let more = true; more;) {
      const page = await readPage(position);
      for (const event of page.events) {
        if (event.seq > seq || (last !== null && compareEventIds(event.id, last) > 0)) return null;
        if (event.kind === 'decision') return event;
        position = event.id;
      }
      more = page.more;
    }
    return null;
  }
  const pushed: unknown[] = [];
  // More was pushed than the follower keeps: the next log read covers what was dropped.
  let overflowed = false;
  let closed = false;
  // An id the last read up to it did not find (forged, or not yet appended): deltas that claim to
  // follow it or a later one are dropped without reading the log again, until the position moves.
  let missing: string | null = null;
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
      if (pushed.length < PUSHED_MAX) pushed.push(event);
      else {
        stats.overflow++;
        overflowed = true;
      }
      notify();
    },
    options.after,
  );
  /**
   * Yields what the log holds after the follower's position, up to `upTo` (everything when null): a
   * push names the event it announces, so later ones wait for their own push and deltas pushed in
   * between still show in the order the worker sent them.
   */
  async function* catchUp(upTo: string | null): AsyncGenerator<SessionEvent> {
    const from = last;
    reading: for (let more = true; more;) {
      const page = await readPage(last ?? undefined);
      if (page.gap) options.onGap?.(last);
      more = page.more;
      for (const event of page.events) {
        if (upTo !== null && compareEventIds(event.id, upTo) > 0) break reading;
        yield event;
        last = event.id;
        yield* held.settle(event);
        // Deltas pushed while this read was on its way follow the event they belong to: shown now,
        // not dropped later as behind the position (a quick turn's whole log can come in one read).
        yield* pushedAfter(event.id);
        if (event.kind === 'session.closed') {
          closed = true;
          return;
        }
      }
    }
    if (last !== from) missing = null;
    if (upTo !== null && last !== upTo) missing = upTo;
  }
  /** Takes the waiting pushed deltas that follow durable event `id` (the follower's position) and shows them. */
  async function* pushedAfter(id: string): AsyncGenerator<SessionEvent> {
    if (!pushed.some((item) => deltaBase((item as { id?: unknown } | null)?.id) === id)) return;
    const taken: unknown[] = [];
    pushed.splice(
      0,
      pushed.length,
      ...pushed.filter((item) => {
        const at = deltaBase((item as { id?: unknown } | null)?.id) === id;
        if (at) taken.push(item);
        return !at;
      }),
    );
    for (const item of taken) {
      const parsed = SessionEvent.safeParse(item);
      if (!parsed.success || parsed.data.kind !== 'agent.delta') stats.malformed++;
      else yield* show(parsed.data);
    }
  }
  /** A delta that follows the follower's position (or a speculative one): shown once, if at all. */
  async function* show(delta: Delta): AsyncGenerator<SessionEvent> {
    // A catch-up replay (a feed's reply so far, a reconnected stream's) of a piece already shown.
    if (shown.has(delta)) return;
    shown.add(delta);
    if (!delta.speculative) {
      yield delta;
      return;
    }
    // A follower that started after the input's decision (mid-step) reads that decision once.
    if (!held.knows(delta.seq) && last !== null && compareEventIds(last, `${delta.seq}.0`) >= 0) {
      const decision = looked.has(delta.seq) ? null : await decisionOf(delta.seq);
      looked.add(delta.seq);
      if (decision) yield* held.settle(decision);
    }
    yield* held.offer(delta);
  }
  try {
    // Catch up from the durable log: the only source of durable events and of the position.
    yield* catchUp(null);
    while (!closed) {
      if (stop?.aborted) return;
      if (overflowed) {
        overflowed = false;
        yield* catchUp(null);
        continue;
      }
      if (pushed.length === 0) {
        const timedOut = await new Promise<boolean>((resolve) => {
          wake = () => resolve(false);
          if (!options.feed) setTimeout(() => resolve(true), options.pollMs ?? 1_000);
        });
        if (stop?.aborted) return;
        if (timedOut) yield* catchUp(null);
        continue;
      }
      const item = pushed.shift();
      if (typeof item !== 'object' || item === null || !('id' in item)) {
        stats.malformed++;
        continue;
      }
      if (!('kind' in item) || item.kind !== 'agent.delta') {
        // A hint, or a durable event pushed whole: either way only its id is read.
        const id = durableId(item.id);
        if (id === null) stats.malformed++;
        else if (last === null || compareEventIds(id, last) > 0) yield* catchUp(id);
        continue;
      }
      const parsed = SessionEvent.safeParse(item);
      const base = deltaBase(item.id);
      if (!parsed.success || parsed.data.kind !== 'agent.delta' || base === null) {
        stats.malformed++;
        continue;
      }
      const delta = parsed.data;
      if (delta.speculative || shown.has(delta)) {
        yield* show(delta);
        continue;
      }
      // Best effort: shown right after the durable event it follows, never a resume point. One that
      // follows an event the follower has not read yet waits in the queue for the log to show that
      // event (the read shows it there); one that follows an older event came too late.
      if (last === null || compareEventIds(base, last) > 0) {
        pushed.unshift(item);
        if (missing === null || compareEventIds(base, missing) < 0) yield* catchUp(base);
        if (pushed[0] !== item) continue;
        pushed.shift();
        stats.ahead++;
        continue;
      }
      if (base === last) yield* show(delta);
    }
  } finally {
    unsubscribe?.();
    stop?.removeEventListener('abort', notify);
  }
}

type Delta = Extract<SessionEvent, { kind: 'agent.delta' }>;

/** Delta pieces remembered as shown; far more than one step publishes between durable events. */
const SHOWN_MAX = 4_096;

/**
 * The delta pieces a follower already took, so one that comes again is dropped: a feed replays the
 * step in progress to each subscription (`catchUp`), and a reconnected gateway stream does the same.
 * A piece is its id (`<base>~<n>`), step and attempt: a retried attempt's pieces are new text.
 */
export class ShownDeltas {
  private readonly keys = new Set<string>();

  has(delta: Delta): boolean {
    return this.keys.has(ShownDeltas.key(delta));
  }

  add(delta: Delta): void {
    this.keys.add(ShownDeltas.key(delta));
    if (this.keys.size > SHOWN_MAX) this.keys.delete(this.keys.values().next().value as string);
  }

  private static key(delta: Delta): string {
    return `${delta.id}#${delta.step}#${delta.attempt ?? 1}`;
  }
}

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

  /** Whether the decision of input `seq` is known here. */
  knows(seq: number): boolean {
    return this.decided.has(seq);
  }

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
