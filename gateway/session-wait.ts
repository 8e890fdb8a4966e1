/**
 * A stream opened for a Session that does not exist yet waits for it instead of answering 404: a
 * caller that opens the stream before it sends the first input (`harness send --wait`, a front end)
 * then sees the Session's events from the very first one. The wait is bounded (`?wait=` ms, default
 * 30 s, at most 5 minutes; 0 answers 404 at once) and ends early when the caller goes away.
 */
import { InvalidInputError, SessionNotFoundError } from '../client/index.js';
import type { EventFeed } from '../contract/events.js';

/** How long a stream waits for its Session to appear when `?wait=` does not say. */
export const SESSION_WAIT_DEFAULT_MS = 30_000;
/** The longest wait a caller may ask for. */
export const SESSION_WAIT_MAX_MS = 5 * 60_000;
/** How often the Session is looked for while nothing is pushed for it. */
const LOOK_EVERY_MS = 200;

/** The wait a `?wait=` value asks for (ms); a bad value is the caller's error (400). */
export function sessionWaitMs(raw: unknown): number {
  if (raw === undefined || raw === '') return SESSION_WAIT_DEFAULT_MS;
  const ms = typeof raw === 'string' && /^\d{1,9}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms > SESSION_WAIT_MAX_MS) {
    const message = `wait: milliseconds from 0 to ${SESSION_WAIT_MAX_MS} (default ${SESSION_WAIT_DEFAULT_MS})`;
    throw new InvalidInputError(message, [{ field: 'wait', message }]);
  }
  return ms;
}

export interface SessionWaitOptions {
  waitMs: number;
  /** Aborted when the caller goes away: the wait ends with SessionNotFoundError. */
  signal?: AbortSignal;
  /** Wakes the wait as soon as the Session's first event is pushed (else it looks every 200 ms). */
  feed?: EventFeed;
}

/**
 * Runs `read` (a call that throws SessionNotFoundError while the Session does not exist) until it
 * succeeds or the wait is over; `waited` says whether the Session appeared during the wait.
 */
export async function whenSessionExists<T>(
  sessionId: string,
  read: () => Promise<T>,
  options: SessionWaitOptions,
): Promise<{ value: T; waited: boolean }> {
  const deadline = performance.now() + options.waitMs;
  let wake: (() => void) | undefined;
  const unsubscribe = options.feed?.subscribe(sessionId, () => wake?.());
  const stop = () => wake?.();
  options.signal?.addEventListener('abort', stop);
  try {
    for (let waited = false; ; waited = true) {
      try {
        return { value: await read(), waited };
      } catch (err) {
        const left = deadline - performance.now();
        if (!(err instanceof SessionNotFoundError) || left <= 0 || options.signal?.aborted) throw err;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(LOOK_EVERY_MS, left));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    }
  } finally {
    unsubscribe?.();
    options.signal?.removeEventListener('abort', stop);
  }
}
