/**
 * What a worker's payload codec puts in place of a payload it cannot decode: a signal or update
 * argument encrypted with a key the worker does not hold, tampered with, in an encoding no converter
 * reads, or JSON that does not parse. Before, such a payload failed the workflow task on every retry,
 * and with it every later message, update and query of the Session. The marker is plain data that
 * every handler's schema refuses, so it becomes a recorded rejection (`undecodable payload (<bytes>
 * bytes): <why>`) and the Session goes on. A start input or carried state that is undecodable fails
 * the run instead: there is no Session to go on without it.
 *
 * Pure module: safe to import from workflow code.
 */

/** The one key of a marker object. */
export const UNDECODABLE_KEY = '$undecodable';

/** The value a handler receives in place of an argument the worker could not decode. */
export interface UndecodableMarker {
  $undecodable: { bytes: number; reason: string };
}

/** Longest reason a marker carries (the rejection record clips it again). */
const REASON_CHARS = 300;

/** A marker for a payload of `bytes` bytes that could not be decoded, for `reason`. */
export function undecodableMarker(bytes: number, reason: string): UndecodableMarker {
  return { $undecodable: { bytes, reason: reason.slice(0, REASON_CHARS) } };
}

/** The rejection reason for a marker (`undecodable payload (40 bytes): …`), or null when `raw` is not one. */
export function undecodableReason(raw: unknown): string | null {
  if (typeof raw !== 'object' || raw === null || !Object.hasOwn(raw, UNDECODABLE_KEY)) return null;
  const inner = (raw as Record<string, unknown>)[UNDECODABLE_KEY] as { bytes?: unknown; reason?: unknown } | null;
  const bytes = typeof inner?.bytes === 'number' ? inner.bytes : 0;
  const reason = typeof inner?.reason === 'string' ? inner.reason : 'unknown';
  return `undecodable payload (${bytes} bytes): ${reason}`;
}
