/**
 * `harness send --wait` on the event stream: follows one input's events live (through the gateway)
 * until its turn ends or waits for someone, handing each piece of the agent's streamed text on as it
 * arrives. Nothing is polled while it waits: the durable log is read once to catch up, then the feed
 * pushes. The only extra read is one snapshot after a tool call is proposed or approved, because a
 * call that waits for an external result has no event of its own.
 */
import type { SessionClient } from '../client/index.js';
import { SessionTimeoutError } from '../client/index.js';
import type { EventFeed, EventHint, SessionEvent } from '../contract/events.js';
import { STAGE } from '../contract/state.js';

/** How the turn of input `seq` left off: ended (`turn.finished`), waiting for someone, or the Session closed. */
export type TurnEnd = 'finished' | 'waiting' | 'closed';

export interface FollowTurnOptions {
  feed: EventFeed;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Each piece of the agent's text, in order. */
  onText?: (piece: string) => void;
  /** A step started streaming again (a retried attempt): what it showed before is superseded. */
  onRestart?: (step: number) => void;
}

export async function followTurn(
  client: Pick<SessionClient, 'events' | 'snapshot'>,
  sessionId: string,
  seq: number,
  options: FollowTurnOptions,
): Promise<TurnEnd> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), options.timeoutMs);
  const abort = () => stop.abort();
  options.signal?.addEventListener('abort', abort);
  const attempts = new Map<number, number>();
  try {
    // From just before the input's first event (its seq's ordinals start at 0).
    const after = `${seq - 1}.${Number.MAX_SAFE_INTEGER}`;
    for await (const event of client.events(sessionId, { feed: options.feed, after, signal: stop.signal })) {
      if (event.kind === 'session.closed') return 'closed';
      if (event.seq !== seq) continue;
      switch (event.kind) {
        case 'agent.delta': {
          const attempt = event.attempt ?? 1;
          const before = attempts.get(event.step);
          if (before !== undefined && attempt > before) options.onRestart?.(event.step);
          if (before === undefined || attempt >= before) {
            attempts.set(event.step, attempt);
            options.onText?.(event.text);
          }
          break;
        }
        case 'turn.finished':
          return 'finished';
        case 'approval.waiting':
          return 'waiting';
        case 'tool.proposed':
        case 'tool.approved': {
          const view = await client.snapshot(sessionId);
          if (view.stage === STAGE.waitingTool && view.turn?.seq === seq) return 'waiting';
          break;
        }
        default:
          break;
      }
    }
    if (options.signal?.aborted)
      throw new SessionTimeoutError(`stopped waiting for input #${seq} of session ${sessionId}`);
    throw new SessionTimeoutError(
      `no decision for input #${seq} of session ${sessionId} within ${options.timeoutMs / 1000} s`,
    );
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', abort);
  }
}

/**
 * A subscription made now whose events are kept until the follower subscribes: `send --wait` opens
 * the stream before it submits, so the first deltas of a quick turn are not missed while the
 * follower starts. Subscribing hands the kept events over, then the live ones; unsubscribing ends it.
 */
export function earlySubscription(feed: EventFeed, sessionId: string): EventFeed & { close(): void } {
  const kept: Array<SessionEvent | EventHint> = [];
  let listener: ((event: SessionEvent | EventHint) => void) | undefined;
  const unsubscribe = feed.subscribe(sessionId, (event) => (listener ? listener(event) : kept.push(event)));
  return {
    subscribe(_sessionId, follow) {
      listener = follow;
      for (const event of kept.splice(0)) follow(event);
      return unsubscribe;
    },
    close: unsubscribe,
  };
}

/** What `send --wait` prints of the reply after its stream ended, and whether the screen then holds it whole. */
export interface ReplyBackstop {
  /** The part of the reply the stream did not print (empty when it printed the reply's end). */
  rest: string;
  /** The whole reply is on the screen, in one piece, ending what was printed. */
  whole: boolean;
}

/**
 * The end of the reply that the stream did not print, from the recorded reply: the stream is best
 * effort, the decision record is not. What was printed may end part way into the reply (the stream
 * ended first), hold none of it, or hold its end without its start (then nothing is added).
 */
export function replyBackstop(printed: string, reply: string): ReplyBackstop {
  if (reply === '' || printed.endsWith(reply)) return { rest: '', whole: reply !== '' };
  const shown = overlap(printed.slice(-reply.length), reply);
  if (shown > 0) return { rest: reply.slice(shown), whole: true };
  // The stream printed the reply's end but lost its start: nothing to append.
  const tail = printed.trimEnd();
  if (tail !== '' && reply.trimEnd().endsWith(tail.slice(-Math.min(tail.length, 200))))
    return { rest: '', whole: false };
  return { rest: reply, whole: true };
}

/** The length of the longest start of `text` that ends `printed` (a KMP failure function). */
function overlap(printed: string, text: string): number {
  const fail = new Array<number>(text.length).fill(0);
  for (let i = 1, k = 0; i < text.length; i++) {
    while (k > 0 && text[i] !== text[k]) k = fail[k - 1]!;
    if (text[i] === text[k]) k++;
    fail[i] = k;
  }
  let k = 0;
  for (let i = 0; i < printed.length; i++) {
    while (k > 0 && (k === text.length || printed[i] !== text[k])) k = fail[k - 1]!;
    if (printed[i] === text[k]) k++;
  }
  return k;
}
