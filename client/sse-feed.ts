/**
 * A live event feed read from the HTTP gateway's Server-Sent Events (`GET /sessions/:id/events`), for
 * processes that are neither the worker nor on the cluster's PostgreSQL: `harness watch`, a backend
 * service. Each subscription streams from the subscriber's last id (or the newest event) and, when
 * the stream drops, reconnects with `Last-Event-ID`; SessionClient.events reads anything missed from the log.
 */
import { createParser } from 'eventsource-parser';
import type { EventFeed, EventHint, SessionEvent } from '../contract/events.js';

export class GatewayEventFeed implements EventFeed {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string | null,
    private readonly retryMs = 1_000,
  ) {}

  subscribe(sessionId: string, listener: (event: SessionEvent | EventHint) => void, after?: string): () => void {
    const stop = new AbortController();
    // From the subscriber's last id (the gateway replays from its log), else from the newest event.
    let last: string | null = after ?? null;
    const run = async () => {
      while (!stop.signal.aborted) {
        try {
          const after = last === null ? '?after=now' : '';
          const response = await fetch(`${this.baseUrl}/sessions/${encodeURIComponent(sessionId)}/events${after}`, {
            headers: {
              accept: 'text/event-stream',
              ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
              ...(last !== null ? { 'last-event-id': last } : {}),
            },
            signal: stop.signal,
          });
          if (!response.ok || !response.body) throw new Error(`gateway answered ${response.status}`);
          const parser = createParser({
            onEvent(message) {
              // Where a stream opened at "now" starts: the follower reads the log up to it if it is behind.
              if (message.event === 'head') {
                const { id } = JSON.parse(message.data) as { id: string };
                listener({ hint: true, id });
                return;
              }
              if (message.event) return; // `gap` and `error`: the follower's own log reads cover them
              const event = JSON.parse(message.data) as SessionEvent;
              if (message.id) last = message.id;
              listener(event);
            },
          });
          const decoder = new TextDecoder();
          for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
            parser.feed(decoder.decode(chunk, { stream: true }));
          }
        } catch {
          // Dropped, refused or unreachable: try again shortly; nothing is lost (the log has it).
        }
        if (!stop.signal.aborted) await new Promise((resolve) => setTimeout(resolve, this.retryMs));
      }
    };
    void run();
    return () => stop.abort();
  }
}
