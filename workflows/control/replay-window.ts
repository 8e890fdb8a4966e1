/**
 * The replay window of signed control: every accepted signed item's MAC is remembered, per kind,
 * until its signature expires, so the same signed item is applied at most once. Only items whose
 * signature a worker accepted enter it; unsigned items never do (they are refused when signing is
 * on, and de-duplicated by id in `recentControl` when it is off), so no amount of unsigned traffic
 * can push a MAC out. The worker's maximum signature lifetime bounds how long a MAC stays.
 *
 * Each kind holds at most `REPLAY_WINDOW_PER_KIND` MACs. When a burst of signed items fills it, the
 * one that expires soonest goes and the kind's `floor` rises to its `expiresAt`: from then on a
 * signature that expires no later is refused as a possible replay. Forgetting never lets a replay in;
 * at worst a short-lived signature made during such a burst must be made again.
 *
 * Pure module: safe to import from workflow code.
 */
import type { SignedKind } from '../../contract/control-signature.js';
import type { ReplayWindowOfKind, SessionState } from '../../contract/state.js';

/** Most MACs remembered per signed kind. */
export const REPLAY_WINDOW_PER_KIND = 128;

/** Why a signed item accepted by the worker is still refused here as a replay, or null. */
export function replayRefusal(
  window: SessionState['replayWindow'],
  kind: SignedKind,
  mac: string,
  expiresAt: number,
): string | null {
  const own = window[kind];
  if (own === undefined) return null;
  if (own.macs.some(([seen]) => seen === mac)) return `${kind} signature was already used: a signed item applies once`;
  if (expiresAt <= own.floor) {
    return `${kind} signature may be a replay: it expires before ${new Date(own.floor).toISOString()}, and this Session's window of ${REPLAY_WINDOW_PER_KIND} signed ${kind} items has forgotten older ones; sign it again`;
  }
  return null;
}

/** Remembers an accepted signed item's MAC until `expiresAt`, dropping those expired by `now`. */
export function rememberSigned(
  window: SessionState['replayWindow'],
  kind: SignedKind,
  mac: string,
  expiresAt: number,
  now: number,
): void {
  const own: ReplayWindowOfKind = window[kind] ?? { macs: [], floor: 0 };
  // An expired signature is refused by its expiry, so its MAC need not be kept.
  const live = own.macs.filter(([, until]) => until > now);
  live.push([mac, expiresAt]);
  // Stable sort: soonest to expire first, arrival order among equals.
  live.sort((a, b) => a[1] - b[1]);
  let floor = own.floor;
  while (live.length > REPLAY_WINDOW_PER_KIND) {
    const [, until] = live.shift()!;
    floor = Math.max(floor, until);
  }
  window[kind] = { macs: live, floor };
}
