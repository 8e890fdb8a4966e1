/**
 * Live event transports. In one process (`npm start`, tests) events go through an EventEmitter;
 * across processes (the cluster) through PostgreSQL LISTEN/NOTIFY on the database the cluster
 * already runs. Both are best effort: SessionClient.events fills any gap from the durable log.
 *
 * A push is a hint: any role that can log in to that database can NOTIFY the channel, so followers
 * (client/events.ts) read durable events from the log and take only ids from a push. Agent deltas,
 * the one content shown from a push, carry a MAC under the worker's control key when control keys
 * are configured, and a subscriber with keys drops a delta without a valid one.
 */
import { timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { canonicalJson, controlMac, parseControlKeys, type ControlKey } from '../contract/control-signature.js';
import { SessionEvent, type EventHint, type EventPublisher } from '../contract/events.js';
import { StepDeltas } from './step-deltas.js';

type Listener = (event: SessionEvent | EventHint) => void;
/** The emitter event every Session's events also go to (session ids never contain a space). */
const ALL = 'all sessions';

/**
 * Events published and subscribed in the same process. It keeps each Session's agent step in
 * progress (StepDeltas) and hands a new subscriber the reply so far first, marked `catchUp`.
 */
export class InProcessEventFeed implements EventPublisher {
  private readonly emitter = new EventEmitter();
  private readonly steps = new StepDeltas();

  constructor() {
    // One listener per subscriber: a gateway may follow many Sessions at once.
    this.emitter.setMaxListeners(0);
  }

  publish(sessionId: string, event: SessionEvent | EventHint): void {
    this.steps.record(sessionId, event);
    this.emitter.emit(`session:${sessionId}`, event);
    this.emitter.emit(ALL, sessionId, event);
  }

  subscribe(sessionId: string, listener: Listener): () => void {
    this.emitter.on(`session:${sessionId}`, listener);
    // In the same turn of the event loop as the subscription: nothing published falls in between.
    for (const delta of this.steps.current(sessionId)) listener(delta);
    return () => this.emitter.off(`session:${sessionId}`, listener);
  }

  subscribeAll(listener: (sessionId: string, event: SessionEvent | EventHint) => void): () => void {
    this.emitter.on(ALL, listener);
    return () => this.emitter.off(ALL, listener);
  }

  close(): Promise<void> {
    this.emitter.removeAllListeners();
    return Promise.resolve();
  }
}

/** The NOTIFY channel events travel on. */
export const EVENTS_CHANNEL = 'harness_events';

/** The text a pushed delta's MAC covers (HMAC-SHA256 under a control key, base64url). */
export function deltaSigningInput(sessionId: string, event: unknown): string {
  return `session-harness/delta/v1\n${sessionId}\n${canonicalJson(event)}`;
}

/** The keys that sign and check pushed deltas: HARNESS_CONTROL_KEYS, else HARNESS_CONTROL_KEY, else none. */
export function deltaKeysFromEnv(env: NodeJS.ProcessEnv = process.env): ControlKey[] {
  const set = env.HARNESS_CONTROL_KEYS?.trim();
  if (set) return parseControlKeys(set, 'HARNESS_CONTROL_KEYS');
  const single = env.HARNESS_CONTROL_KEY?.trim();
  return single ? parseControlKeys(single, 'HARNESS_CONTROL_KEY') : [];
}

/** Longest session id a notification may name (SessionId allows 128 characters). */
const SESSION_ID_MAX = 256;
/** PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more. */
const NOTIFY_MAX_BYTES = 7_900;

/**
 * Events through PostgreSQL LISTEN/NOTIFY: `publish` notifies through a small pool, subscribers share
 * one listening connection that reconnects when it drops (events pushed meanwhile are read back from
 * the durable log by the subscriber).
 */
export class PostgresEventFeed implements EventPublisher {
  private readonly pool: pg.Pool;
  private listener: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private readonly local = new InProcessEventFeed();
  private closed = false;
  /** The NOTIFY of the last agent delta published: the next one waits for it. */
  private deltas: Promise<void> = Promise.resolve();

  private readonly log: (line: string) => void;
  private readonly contentFree: boolean;
  private readonly keys: readonly ControlKey[];
  /** Notifications dropped on arrival: not JSON, not an event or hint, or a delta without a valid MAC. */
  dropped = 0;

  /**
   * `contentFree`: push only ids (hints), never event content (set when payloads are encrypted);
   * agent deltas, which are content only, are then not pushed at all. `controlKeys` (default: from
   * HARNESS_CONTROL_KEYS or HARNESS_CONTROL_KEY): the first signs the deltas this feed publishes, and
   * with any key given, a delta received without a valid MAC under one of them is dropped.
   */
  constructor(
    private readonly url: string,
    options: { log?: (line: string) => void; contentFree?: boolean; controlKeys?: readonly ControlKey[] } = {},
  ) {
    this.log = options.log ?? (() => {});
    this.contentFree = options.contentFree ?? false;
    this.keys = options.controlKeys ?? deltaKeysFromEnv();
    this.pool = new pg.Pool({ connectionString: url, max: 2 });
    this.pool.on('error', (err) => this.log(`events: notify connection failed: ${err.message}`));
  }

  publish(sessionId: string, event: SessionEvent): void {
    let payload = JSON.stringify({ s: sessionId, e: event });
    const tooLarge = Buffer.byteLength(payload) > NOTIFY_MAX_BYTES;
    if (event.kind === 'agent.delta') {
      // A delta is text and nothing else, and no log holds it to send a hint for: with payloads
      // encrypted it is not published at all (the reply reaches subscribers through the codec, in
      // `turn.finished`). The agent step keeps deltas well under the limit; one over it is dropped.
      if (this.contentFree || tooLarge) return;
      const key = this.keys[0];
      if (key) {
        const mac = controlMac(key.secret, deltaSigningInput(sessionId, event));
        payload = JSON.stringify({ s: sessionId, e: event, m: { k: key.id, mac } });
      }
      // One step's deltas are joined in the order sent; the pool's two connections could swap them.
      this.deltas = this.deltas.then(() => this.notify(payload));
      return;
    }
    if (this.contentFree || tooLarge) {
      payload = JSON.stringify({ s: sessionId, e: { hint: true, id: event.id } satisfies EventHint });
    }
    void this.notify(payload);
  }

  private notify(payload: string): Promise<void> {
    return this.pool.query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, payload]).then(
      () => undefined,
      (err: Error) => this.log(`events: notify failed (subscribers read it from the log): ${err.message}`),
    );
  }

  subscribeAll(listener: (sessionId: string, event: SessionEvent | EventHint) => void): () => void {
    void this.listen().catch((err: Error) => this.log(`events: listen failed: ${err.message}`));
    return this.local.subscribeAll(listener);
  }

  subscribe(sessionId: string, listener: Listener): () => void {
    void this.listen().catch((err: Error) => this.log(`events: listen failed: ${err.message}`));
    return this.local.subscribe(sessionId, listener);
  }

  /** Resolves once the listening connection is up (subscribe starts it; tests and the gateway await it). */
  ready(): Promise<void> {
    return this.listen().then(() => undefined);
  }

  private listen(): Promise<pg.Client> {
    if (this.listener) return Promise.resolve(this.listener);
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.url });
      client.on('notification', (message) => {
        if (message.channel !== EVENTS_CHANNEL || !message.payload) return;
        const received = this.accept(message.payload);
        if (typeof received === 'string') {
          this.dropped++;
          this.log(`events: dropped a notification: ${received}`);
        } else this.local.publish(received.sessionId, received.event);
      });
      client.on('error', (err) => {
        this.log(`events: listening connection lost (${err.message}); reconnecting on next subscribe`);
        this.listener = undefined;
        this.connecting = undefined;
        if (!this.closed) void this.listen().catch(() => undefined);
      });
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
      this.listener = client;
      return client;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /** A notification as subscribers get it, or why it is dropped. Never throws. */
  private accept(text: string): { sessionId: string; event: SessionEvent | EventHint } | string {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return 'not JSON';
    }
    if (typeof raw !== 'object' || raw === null) return 'not an object';
    const { s, e, m } = raw as { s?: unknown; e?: unknown; m?: unknown };
    if (typeof s !== 'string' || s.length === 0 || s.length > SESSION_ID_MAX) return 'no session id';
    if (typeof e === 'object' && e !== null && (e as { hint?: unknown }).hint === true) {
      const id = (e as { id?: unknown }).id;
      return typeof id === 'string' && /^\d{1,15}\.\d{1,15}$/.test(id)
        ? { sessionId: s, event: { hint: true, id } }
        : 'bad hint id';
    }
    const parsed = SessionEvent.safeParse(e);
    if (!parsed.success) return 'not an event';
    const event = parsed.data;
    // The MAC covers the delta as sent (canonical JSON), not as parsed here.
    if (event.kind === 'agent.delta' && this.keys.length > 0 && !this.validMac(s, e, m)) {
      return `delta for ${s} without a valid MAC`;
    }
    return { sessionId: s, event };
  }

  private validMac(sessionId: string, event: unknown, m: unknown): boolean {
    if (typeof m !== 'object' || m === null) return false;
    const { k, mac } = m as { k?: unknown; mac?: unknown };
    const key = this.keys.find((candidate) => candidate.id === k);
    if (!key || typeof mac !== 'string') return false;
    const expected = Buffer.from(controlMac(key.secret, deltaSigningInput(sessionId, event)));
    const given = Buffer.from(mac);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.deltas;
    await this.local.close();
    await this.listener?.end().catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }
}
