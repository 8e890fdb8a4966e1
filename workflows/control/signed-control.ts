/**
 * Signed control in the workflow: which signed items to refuse and why. The checks that need no key
 * (present, a known key id, not expired by workflow time) run here; the MAC is checked by the
 * worker's `verifyControl` local activity, whose verdict is a marker in history, so a replay never
 * needs the keys and a key rotated later never changes a past verdict.
 */
import { proxyLocalActivities } from '@temporalio/workflow';
import { ControlVerdict, VerifyControlResult, type PolicyActivities } from '../../contract/activity-contract.js';
import { ControlSignature, messageSigningPayload, type SignedKind } from '../../contract/control-signature.js';
import type { WorkerPolicy } from '../../contract/worker-policy.js';
import { recordRejection } from '../ledger/intake.js';
import type { Sender } from '../../contract/messages.js';
import type { BoundInput, PendingInput, SessionState, VerifiedClaims } from '../../contract/state.js';
import { rememberSigned, replayRefusal } from './replay-window.js';

const verifier = proxyLocalActivities<PolicyActivities>({
  startToCloseTimeout: '5s',
  retry: { maximumAttempts: 3, initialInterval: '200ms' },
  summary: 'Verifying a signature',
});

/** Why a signature is refused before its MAC is checked, or null when it may be checked. Pure. */
export function signatureRefusal(
  policy: WorkerPolicy,
  kind: SignedKind,
  signature: unknown,
  now: number,
): string | null {
  if (signature === undefined || signature === null) {
    return `unsigned ${kind}: this worker accepts only signed control (HARNESS_CONTROL_KEYS)`;
  }
  const parsed = ControlSignature.safeParse(signature);
  if (!parsed.success) return `${kind} signature is malformed`;
  if (!policy.keyIds.includes(parsed.data.keyId)) {
    return `${kind} signed with key "${parsed.data.keyId}", which is not one of this worker's control keys`;
  }
  if (parsed.data.expiresAt <= now) {
    return `${kind} signature expired at ${new Date(parsed.data.expiresAt).toISOString()}`;
  }
  return null;
}

/** Why a signed item is refused, or null when its signature holds for this Session and payload. */
export async function refusalOfSigned(
  policy: WorkerPolicy,
  kind: SignedKind,
  sessionId: string,
  payload: Record<string, unknown>,
  signature: unknown,
  now: number,
): Promise<string | null> {
  const early = signatureRefusal(policy, kind, signature, now);
  if (early !== null) return early;
  try {
    const verdict = VerifyControlResult.parse(
      await verifier.verifyControl({ kind, sessionId, payload, signature: ControlSignature.parse(signature) }),
    );
    return verdict.valid ? null : `bad ${kind} signature: ${verdict.reason ?? 'MAC mismatch'}`;
  } catch (err) {
    // Refused, never applied unverified: the sender may retry once a worker can verify.
    return `${kind} signature could not be verified: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/**
 * Why a control item is refused by the worker's configuration now, or null when it may be applied
 * (runs that began with `current-control-policy`). The `checkControl` local activity says whether
 * signing is required and whether the signature holds; its verdict is a marker, so a replay never
 * asks again. A signed item it accepts is then refused if its MAC was already used (the replay
 * window), and otherwise remembered until it expires.
 */
export async function refusalNow(
  state: SessionState,
  kind: SignedKind,
  payload: Record<string, unknown>,
  signature: unknown,
  now: number,
): Promise<string | null> {
  return (await checkNow(state, kind, payload, signature, now)).why;
}

/** `refusalNow`, with whether the worker requires signing now (what a tool result must then carry). */
export async function checkNow(
  state: SessionState,
  kind: SignedKind,
  payload: Record<string, unknown>,
  signature: unknown,
  now: number,
): Promise<{ why: string | null; required: boolean }> {
  let verdict: ControlVerdict;
  try {
    verdict = ControlVerdict.parse(
      await verifier.checkControl({ kind, sessionId: state.sessionId, payload, signature: signature ?? null, at: now }),
    );
  } catch (err) {
    // Refused, never applied unchecked: the sender may retry once a worker can check it.
    return { why: `${kind} could not be checked: ${err instanceof Error ? err.message : String(err)}`, required: true };
  }
  if (!verdict.accepted) return { why: verdict.reason ?? `${kind} refused by the worker`, required: verdict.required };
  if (!verdict.required) return { why: null, required: false };
  // Accepted under signed control, so the worker parsed the signature: this parse only narrows it.
  const parsed = ControlSignature.safeParse(signature);
  if (!parsed.success) return { why: `${kind} signature is malformed`, required: true };
  const { mac, expiresAt } = parsed.data;
  const replayed = replayRefusal(state.replayWindow, kind, mac, expiresAt);
  if (replayed !== null) return { why: replayed, required: true };
  rememberSigned(state.replayWindow, kind, mac, expiresAt, now);
  return { why: null, required: true };
}

/**
 * Under signed control a user identity in `from` is trusted only with a valid signature over the
 * message; otherwise the input is still processed, but as from an anonymous user (user-scoped
 * memory off for it), and the dropped identity is a recorded rejection. With `bound` (runs with
 * `bound-control`) the same holds for what a hand-over claims: a session `from`, `routed` (whom a
 * sub-session answers) and the delegating agent's `note`, all inside the MAC; the worker that hands
 * over signs them. Runs without it check the user identity only, over the fields they signed.
 */
export async function trustIdentity(
  policy: WorkerPolicy,
  state: SessionState,
  input: BoundInput,
  signature: unknown,
  bound = false,
): Promise<void> {
  const check = (payload: Record<string, unknown>) =>
    refusalOfSigned(policy, 'message', state.sessionId, payload, signature, Date.now());
  return trustClaims(state, input, bound, check);
}

/**
 * `trustIdentity` for runs that began with `current-control-policy`: what a message claims (a user
 * identity; with `bound`, a hand-over's fields) is checked against the worker's configuration
 * (`checkControl`), whatever the run's start said. Such runs check a message when it arrives
 * (`verifiedOnArrival`); this is for an input carried over from a run that checked at bind time.
 */
export async function trustIdentityNow(
  state: SessionState,
  input: BoundInput,
  signature: unknown,
  bound: boolean,
): Promise<void> {
  const check = (payload: Record<string, unknown>) => refusalNow(state, 'message', payload, signature, Date.now());
  return trustClaims(state, input, bound, check);
}

/** What a message may claim that only a signature vouches for (a queued or bound input, or a parsed message). */
export interface Claims {
  messageId: string;
  text: string;
  resources?: unknown[] | null;
  from?: Sender | null;
  routed?: PendingInput['routed'] | null;
  note?: string | null;
}

/**
 * Whether a message claims anything a signature must vouch for: a user identity; with `bound` (runs
 * with `bound-control`), also a session identity, a route or a note. Only such a message pays a check.
 */
export function carriesClaims(message: unknown, bound: boolean): boolean {
  // Also asked of a raw payload before intake parses it: a malformed one that seems to claim is
  // queued in order, then refused by intake without a check.
  if (typeof message !== 'object' || message === null) return false;
  const { from, routed, note } = message as {
    from?: { kind?: unknown; id?: unknown } | null;
    routed?: unknown;
    note?: unknown;
  };
  if (from?.kind === 'user' && from.id !== undefined) return true;
  return bound && (from?.kind === 'session' || routed != null || note != null);
}

/**
 * Checks what a message claims when it arrives (runs with `current-control-policy`), against the
 * worker's configuration then (`checkControl`), so a hand-over that waits in a busy Session's queue
 * for longer than its signature's lifetime keeps what was verified: the claims that hold, the others
 * dropped and the drop recorded, as `trustIdentityNow` does at bind time.
 */
export async function verifiedOnArrival(
  state: SessionState,
  message: Claims,
  signature: unknown,
  bound: boolean,
): Promise<VerifiedClaims> {
  const claims = { ...message, from: message.from ?? null, routed: message.routed ?? null, note: message.note ?? null };
  await trustClaims(state, claims, bound, (payload) => refusalNow(state, 'message', payload, signature, Date.now()));
  return { from: claims.from, routed: claims.routed, note: claims.note };
}

async function trustClaims(
  state: SessionState,
  input: Claims,
  bound: boolean,
  check: (payload: Record<string, unknown>) => Promise<string | null>,
): Promise<void> {
  const claimed = input.from?.kind === 'user' ? input.from.id : undefined;
  const session = bound && input.from?.kind === 'session';
  const routed = bound && input.routed != null;
  const note = bound && input.note != null;
  if (claimed === undefined && !session && !routed && !note) return;
  const payload = messageSigningPayload(bound ? input : { ...input, routed: null, note: null });
  const why = await check(payload);
  if (why === null) return;
  const dropped = [
    ...(claimed !== undefined || session ? ['from'] : []),
    ...(routed ? ['routed'] : []),
    ...(note ? ['note'] : []),
  ];
  const who =
    claimed !== undefined
      ? `identity "${claimed}"`
      : session
        ? `hand-over from session "${input.from?.id ?? '?'}"`
        : 'hand-over';
  if (claimed !== undefined || session) input.from = { kind: 'user' };
  if (routed) input.routed = null;
  if (note) input.note = null;
  // A user identity alone reads as it always did; a hand-over's fields are listed.
  const what = dropped.length > 1 || dropped[0] !== 'from' ? ` (${dropped.join(', ')})` : '';
  const reason = `${who} dropped${what}: ${why}`;
  recordRejection(state, { at: Date.now(), via: 'message', messageId: input.messageId, reason }, 'unauthenticated');
}
