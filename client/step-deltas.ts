/**
 * The agent step in progress, per Session, as its deltas went through a feed: kept (bounded) so a
 * follower that subscribes mid-step first gets the reply so far instead of the text from its join on.
 * The feed replays them to each new subscriber marked `catchUp: true`; the follower shows them once
 * (client/events.ts drops a delta it already showed) and only when they follow the last durable event
 * it read, so a step that ended meanwhile is not shown twice (its text is in the durable record).
 *
 * A step's deltas all follow one durable event (their id is `<that id>~<n>`): a tool call or the end of
 * the turn ends the step (a speculative step goes on past its input's decision events), and a delta
 * that follows a different event starts the next. A retried
 * attempt of a step streams its text again from the start, so it replaces the earlier attempt's.
 */
import { compareEventIds, type EventHint, type EventKind, type SessionEvent } from '../contract/events.js';

type Delta = Extract<SessionEvent, { kind: 'agent.delta' }>;

/** Durable events after which the step in progress has ended (a tool call, its turn's end). */
const STEP_ENDS: ReadonlySet<EventKind> = new Set<EventKind>([
  'tool.proposed',
  'approval.waiting',
  'turn.finished',
  'session.closed',
]);

/** Characters of one step's text kept; a longer step is not replayed at all (a hole would mislead). */
export const STEP_TEXT_KEPT_CHARS = 256_000;
/** Sessions whose current step is kept; the least recently streaming one is dropped beyond it. */
export const STEP_SESSIONS_KEPT = 1_000;

interface Step {
  /** The durable event id the step's deltas follow. */
  base: string;
  deltas: Delta[];
  chars: number;
  /** More text than is kept went by: nothing is replayed for this step. */
  overflowed: boolean;
}

/** The base id of a delta (`12.3` of `12.3~4`), or null when malformed. */
function baseOf(delta: Delta): string | null {
  const base = delta.id.split('~')[0];
  return base && /^\d+\.\d+$/.test(base) ? base : null;
}

export class StepDeltas {
  private readonly steps = new Map<string, Step>();

  constructor(
    private readonly maxChars = STEP_TEXT_KEPT_CHARS,
    private readonly maxSessions = STEP_SESSIONS_KEPT,
  ) {}

  /** Notes what a feed published: a delta is kept, a durable event (or hint) after the step ends it. */
  record(sessionId: string, event: SessionEvent | EventHint): void {
    const step = this.steps.get(sessionId);
    if ('hint' in event) return;
    if (event.kind !== 'agent.delta') {
      // Only these end a step: a speculative step goes on streaming after its input's decision events.
      if (step && STEP_ENDS.has(event.kind) && compareEventIds(event.id, step.base) > 0) this.steps.delete(sessionId);
      return;
    }
    const base = baseOf(event);
    if (base === null) return;
    let current = step;
    if (!current || current.base !== base) {
      // A delta older than the kept step's (pushed late) is not the step in progress.
      if (current && compareEventIds(base, current.base) < 0) return;
      current = { base, deltas: [], chars: 0, overflowed: false };
    }
    const attempt = event.attempt ?? 1;
    const earlier = current.deltas.filter((d) => d.step === event.step && (d.attempt ?? 1) < attempt);
    if (earlier.length > 0) {
      current.deltas = current.deltas.filter((d) => !earlier.includes(d));
      current.chars = current.deltas.reduce((n, d) => n + d.text.length, 0);
      current.overflowed = false;
    }
    if (!current.overflowed) {
      current.chars += event.text.length;
      if (current.chars > this.maxChars) {
        current.overflowed = true;
        current.deltas = [];
      } else current.deltas.push(event);
    }
    // Most recently streaming last, so the oldest is the first dropped.
    this.steps.delete(sessionId);
    this.steps.set(sessionId, current);
    if (this.steps.size > this.maxSessions) this.steps.delete(this.steps.keys().next().value as string);
  }

  /** The step in progress so far, each delta marked `catchUp`; empty when none is kept. */
  current(sessionId: string): Delta[] {
    return (this.steps.get(sessionId)?.deltas ?? []).map((d) => ({ ...d, catchUp: true }));
  }

  /** Sessions with a step kept now. */
  get size(): number {
    return this.steps.size;
  }
}
