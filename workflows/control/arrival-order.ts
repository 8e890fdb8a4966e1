/**
 * Signals buffered before a run's first task, handed to their handlers in arrival order (runs with
 * `arrival-order-signals`, patches.ts). The SDK buffers a signal that arrives before its handler is
 * set, and `setHandler` hands that name's buffered signals over at once: with the handlers set one
 * kind after another, a `close` sent after a message ran first and refused it. A default signal
 * handler takes every buffered signal, in the order the server received them, so it is set first,
 * with every handler known by name; the handlers are then set as before (listed with their
 * descriptions in the Web UI), and the default handler is unset, so a name with no handler stays
 * buffered and unhandled, as without it.
 */
import { setDefaultSignalHandler } from '@temporalio/workflow';

/** A signal's handler, as `setHandler` takes it: its payload, a promise while it still works. */
export type SignalHandler = (raw: unknown) => void | Promise<void>;

/**
 * Hands every signal buffered so far to its handler by name, in arrival order. Call it before the
 * first signal handler is set; call what it returns after the last one is set.
 */
export function routeBufferedSignals(handlers: ReadonlyMap<string, SignalHandler>): () => void {
  // A name with no handler (never sent by our clients) is dropped here rather than kept buffered;
  // no handler is ever set for it, so nothing changes for it.
  const route = (name: string, raw?: unknown) => handlers.get(name)?.(raw);
  for (;;) {
    try {
      setDefaultSignalHandler(route);
      break;
    } catch (error) {
      // The SDK refuses to hand a signal named with its reserved prefix (`__temporal_`) to a default
      // handler, and throws once it has taken it from the buffer; the rest are handed over next round.
      if (!isReservedNameRefusal(error)) throw error;
    }
  }
  return () => setDefaultSignalHandler(undefined);
}

function isReservedNameRefusal(error: unknown): boolean {
  return error instanceof TypeError && error.message.includes('with reserved prefix');
}
