/**
 * The agent step's live text: the pieces the model streams are coalesced and published as best-effort
 * `agent.delta` events through the worker's event publisher (in-process, or PostgreSQL NOTIFY). They
 * never enter the workflow: the step's result carries the whole text, and the durable record has it.
 *
 * Coalescing keeps NOTIFY from being flooded by a model that streams a token at a time: the first
 * piece goes out at once (the time to the first delta is what a reader feels), later ones at most
 * every `intervalMs`, or sooner once `maxChars` wait.
 */
import type { SessionEvent } from '../contract/events.js';

/** Where deltas go, and how the step learns which durable event its text follows. */
export interface DeltaOutlet {
  publish(sessionId: string, event: SessionEvent): void;
  /** The id of the Session's newest durable event (its `events` query), null before its first. */
  lastEventId(sessionId: string): Promise<string | null>;
}

/** At most one publish per this many ms (unless `DELTA_MAX_CHARS` wait). */
export const DELTA_INTERVAL_MS = 50;
/**
 * Most characters one delta carries: even escaped as JSON (6 bytes a character at worst) it stays
 * within PostgreSQL's 8,000-byte NOTIFY payload.
 */
export const DELTA_MAX_CHARS = 1_000;
/** How long the end of a step waits for the id its deltas follow before it drops their text. */
const BASE_WAIT_MS = 1_000;

export interface DeltaStreamOptions {
  step: number;
  attempt: number;
  speculative: boolean;
  /**
   * The id of the durable event the step's text follows, as the workflow sent it with the request
   * (`afterEvent`; null before the Session's first event). Unset, the Session is asked (its `events`
   * query), which only requests from workflow code older than `afterEvent` need.
   */
  afterEvent?: string | null;
  intervalMs?: number;
  maxChars?: number;
  log?: (line: string) => void;
}

/** One agent step's deltas: `push` each streamed piece, then `end` once the model has answered. */
export class DeltaStream {
  private base: { id: string | null; seq: number } | undefined;
  private failed = false;
  private readonly resolving: Promise<void>;
  private buffer = '';
  private count = 0;
  private lastPublishAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly intervalMs: number;
  private readonly maxChars: number;

  constructor(
    private readonly outlet: DeltaOutlet,
    private readonly sessionId: string,
    private readonly options: DeltaStreamOptions,
  ) {
    this.intervalMs = options.intervalMs ?? DELTA_INTERVAL_MS;
    this.maxChars = options.maxChars ?? DELTA_MAX_CHARS;
    // Known from the request, or asked while the model is called, so it is there by the first piece.
    const known = options.afterEvent;
    this.resolving = (known === undefined ? outlet.lastEventId(sessionId) : Promise.resolve(known)).then(
      (id) => {
        this.base = { id, seq: id === null ? 0 : Number(id.split('.')[0]) };
        this.schedule();
      },
      (err: unknown) => {
        // Without the id a delta would claim a place it does not have; the step streams nothing.
        this.failed = true;
        this.buffer = '';
        options.log?.(
          `agent deltas of ${sessionId} not published: ${err instanceof Error ? err.message : String(err)}`,
        );
      },
    );
  }

  /** Adds a piece of the step's text. */
  push(piece: string): void {
    if (this.stopped || this.failed || piece === '') return;
    this.buffer += piece;
    this.schedule();
  }

  /** Publishes what is left; waits a moment for the base id if it is still unknown. */
  async end(): Promise<void> {
    if (this.stopped) return;
    if (!this.base && !this.failed) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.resolving, new Promise((resolve) => (timer = setTimeout(resolve, BASE_WAIT_MS)))]);
      clearTimeout(timer);
    }
    this.flush();
    this.stop();
  }

  /** Drops whatever waits (the model call failed: its partial text is not the step's). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.buffer = '';
  }

  private schedule(): void {
    if (!this.base || this.buffer === '' || this.timer || this.stopped) return;
    const wait = this.lastPublishAt + this.intervalMs - performance.now();
    if (wait <= 0 || this.buffer.length >= this.maxChars) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const base = this.base;
    if (!base || this.buffer === '' || this.stopped) return;
    const { step, attempt, speculative } = this.options;
    for (let at = 0; at < this.buffer.length; at += this.maxChars) {
      const text = this.buffer.slice(at, at + this.maxChars);
      this.outlet.publish(this.sessionId, {
        kind: 'agent.delta',
        id: `${base.id ?? '0.0'}~${this.count++}`,
        seq: base.seq,
        prev: base.id,
        at: Date.now(),
        step,
        text,
        attempt,
        ...(speculative ? { speculative: true } : {}),
      });
    }
    this.buffer = '';
    this.lastPublishAt = performance.now();
  }
}
