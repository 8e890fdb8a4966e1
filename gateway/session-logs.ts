/**
 * One reader of each Session's event log, shared by all the gateway's streams of that Session: a
 * hundred browser tabs on one Session are one follower (one poll a second without a live feed, or
 * one feed subscription), not a hundred. A stream that joins reads the log from its own position
 * once (its catch-up), then takes the shared follower's events that are newer than what it wrote,
 * starting with the agent step in progress so far when it joins mid-step.
 */
import { ShownDeltas } from '../client/events.js';
import { STEP_TEXT_KEPT_CHARS, StepDeltas } from '../client/step-deltas.js';
import { compareEventIds, type SessionEvent } from '../contract/events.js';

type Delta = Extract<SessionEvent, { kind: 'agent.delta' }>;

/** What a stream receives from the shared reader. */
export interface StreamSink {
  event(event: SessionEvent): void;
  gap(): void;
  /** The shared follower ended: the Session closed (null) or reading failed. */
  end(error: unknown): void;
}

/** Follows one Session from `after` until the signal aborts (SessionClient.events with the gateway's feed). */
export type Follow = (
  sessionId: string,
  options: { after?: string; signal: AbortSignal; onGap: () => void },
) => AsyncIterable<SessionEvent>;

interface Reader {
  stop: AbortController;
  sinks: Set<StreamSink>;
  /** The agent step in progress as this reader delivered it: a stream that joins late starts with it. */
  step: StepDeltas;
}

/** The shared readers of a gateway, one per Session with open streams. */
export class SessionLogs {
  private readonly readers = new Map<string, Reader>();

  constructor(private readonly follow: Follow) {}

  /** Readers running now (one per Session with at least one open stream). */
  get size(): number {
    return this.readers.size;
  }

  /**
   * Joins `sink` to the Session's reader, starting one at `after` when there is none (`started`: the
   * sink then needs no catch-up of its own). `leave` takes it off; the reader stops when its last
   * stream leaves.
   */
  join(sessionId: string, after: string | undefined, sink: StreamSink): { started: boolean; leave: () => void } {
    let reader = this.readers.get(sessionId);
    const started = reader === undefined;
    if (!reader) {
      reader = { stop: new AbortController(), sinks: new Set(), step: new StepDeltas(STEP_TEXT_KEPT_CHARS, 1) };
      this.readers.set(sessionId, reader);
      void this.run(sessionId, after, reader);
    }
    reader.sinks.add(sink);
    const joined = reader;
    const leave = () => {
      joined.sinks.delete(sink);
      if (joined.sinks.size === 0) {
        joined.stop.abort();
        if (this.readers.get(sessionId) === joined) this.readers.delete(sessionId);
      }
    };
    return { started, leave };
  }

  /** The Session's agent step so far, as its reader delivered it (marked `catchUp`). */
  stepSoFar(sessionId: string): Delta[] {
    return this.readers.get(sessionId)?.step.current(sessionId) ?? [];
  }

  private async run(sessionId: string, after: string | undefined, reader: Reader): Promise<void> {
    let error: unknown = null;
    try {
      const events = this.follow(sessionId, {
        ...(after !== undefined ? { after } : {}),
        signal: reader.stop.signal,
        onGap: () => reader.sinks.forEach((s) => s.gap()),
      });
      for await (const event of events) {
        reader.step.record(sessionId, event);
        for (const sink of [...reader.sinks]) sink.event(event);
      }
    } catch (err) {
      error = err;
    } finally {
      if (this.readers.get(sessionId) === reader) this.readers.delete(sessionId);
      if (!reader.stop.signal.aborted) for (const sink of [...reader.sinks]) sink.end(error);
    }
  }
}

/**
 * A stream's view of the shared reader while it catches up from its own position: events the reader
 * delivers meanwhile are held, and once the catch-up is written, those newer than it are released.
 * Durable events are written once each and in order; deltas only once live and after what was written.
 */
export class JoiningStream implements StreamSink {
  private last: string | null;
  private held: Array<SessionEvent | 'gap'> | null = [];
  private ended: { error: unknown } | null = null;
  private readonly shown = new ShownDeltas();

  constructor(
    after: string | undefined,
    private readonly out: {
      write(event: SessionEvent): void;
      gap(): void;
      end(error: unknown): void;
    },
  ) {
    this.last = after ?? null;
  }

  /** Writes one event of the stream's own catch-up read; false once the Session closed. */
  caughtUp(event: SessionEvent): boolean {
    this.write(event);
    return event.kind !== 'session.closed';
  }

  /**
   * The catch-up is written: the step in progress so far (`stepSoFar`, when it follows what was
   * written), then what the shared reader delivered meanwhile; then live.
   */
  live(stepSoFar: readonly Delta[] = []): void {
    const held = this.held ?? [];
    this.held = null;
    // As the shared reader shows them: a speculative step's text (released by its decision) goes on
    // past the decision events; any other step's follows the last durable event.
    for (const delta of stepSoFar) if (delta.speculative || delta.id.split('~')[0] === this.last) this.write(delta);
    for (const item of held) {
      if (item === 'gap') this.out.gap();
      else this.write(item);
    }
    if (this.ended) this.out.end(this.ended.error);
  }

  event(event: SessionEvent): void {
    if (this.held) this.held.push(event);
    else this.write(event);
  }

  gap(): void {
    if (this.held) this.held.push('gap');
    else this.out.gap();
  }

  end(error: unknown): void {
    if (this.held) this.ended = { error };
    else this.out.end(error);
  }

  private write(event: SessionEvent): void {
    // Deltas come only from the shared reader, which already decided whether they show (a speculative
    // step's text waits there for its decision); best effort, never a resume point.
    if (event.kind === 'agent.delta') {
      if (this.shown.has(event)) return;
      this.shown.add(event);
      this.out.write(event);
      return;
    }
    if (this.last !== null && compareEventIds(event.id, this.last) <= 0) return;
    this.last = event.id;
    this.out.write(event);
  }
}
