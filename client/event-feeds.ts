/**
 * Live event transports. In one process (`npm start`, tests) events go through an EventEmitter;
 * across processes (the cluster) through PostgreSQL LISTEN/NOTIFY on the database the cluster
 * already runs. Both are best effort: SessionClient.events fills any gap from the durable log.
 */
import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { EventHint, EventPublisher, SessionEvent } from '../contract/events.js';

type Listener = (event: SessionEvent | EventHint) => void;
/** The emitter event every Session's events also go to (session ids never contain a space). */
const ALL = 'all sessions';

/** Events published and subscribed in the same process. */
export class InProcessEventFeed implements EventPublisher {
  private readonly emitter = new EventEmitter();

  constructor() {
    // One listener per subscriber: a gateway may follow many Sessions at once.
    this.emitter.setMaxListeners(0);
  }

  publish(sessionId: string, event: SessionEvent | EventHint): void {
    this.emitter.emit(`session:${sessionId}`, event);
    this.emitter.emit(ALL, sessionId, event);
  }

  subscribe(sessionId: string, listener: Listener): () => void {
    this.emitter.on(`session:${sessionId}`, listener);
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

  /**
   * `contentFree`: push only ids (hints), never event content (set when payloads are encrypted);
   * agent deltas, which are content only, are then not pushed at all.
   */
  constructor(
    private readonly url: string,
    options: { log?: (line: string) => void; contentFree?: boolean } = {},
  ) {
    this.log = options.log ?? (() => {});
    this.contentFree = options.contentFree ?? false;
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
        try {
          const { s, e } = JSON.parse(message.payload) as { s: string; e: SessionEvent };
          this.local.publish(s, e);
        } catch {
          this.log('events: ignored a notification that is not JSON');
        }
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

  async close(): Promise<void> {
    this.closed = true;
    await this.deltas;
    await this.local.close();
    await this.listener?.end().catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }
}
