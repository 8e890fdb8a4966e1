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
import { recordRejection, type RejectionCause } from '../ledger/intake.js';
import { clipReason } from '../agent/tool-calls.js';
import { LIMITS, keepLast, type BoundInput, type SessionState } from '../../contract/state.js';
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
  let verdict: ControlVerdict;
  try {
    verdict = ControlVerdict.parse(
      await verifier.checkControl({ kind, sessionId: state.sessionId, payload, signature: signature ?? null, at: now }),
    );
  } catch (err) {
    // Refused, never applied unchecked: the sender may retry once a worker can check it.
    return `${kind} could not be checked: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (!verdict.accepted) return verdict.reason ?? `${kind} refused by the worker`;
  if (!verdict.required) return null;
  // Accepted under signed control, so the worker parsed the signature: this parse only narrows it.
  const parsed = ControlSignature.safeParse(signature);
  if (!parsed.success) return `${kind} signature is malformed`;
  const { mac, expiresAt } = parsed.data;
  const replayed = replayRefusal(state.replayWindow, kind, mac, expiresAt);
  if (replayed !== null) return replayed;
  rememberSigned(state.replayWindow, kind, mac, expiresAt, now);
  return null;
}

/**
 * `trustIdentity` for runs that began with `current-control-policy`: a claimed user identity is
 * checked against the worker's configuration when the input is bound, whatever the run's start said.
 */
export async function trustIdentityNow(state: SessionState, input: BoundInput, signature: unknown): Promise<void> {
  const claimed = input.from?.kind === 'user' ? input.from.id : undefined;
  if (claimed === undefined) return;
  const why = await refusalNow(state, 'message', messageSigningPayload(input), signature, Date.now());
  if (why === null) return;
  input.from = { kind: 'user' };
  const reason = `identity "${claimed}" dropped: ${why}`;
  recordRejection(state, { at: Date.now(), via: 'message', messageId: input.messageId, reason }, 'unauthenticated');
}

/** Records a refused control item: a rejection with its reason and a control event `refused: …`. */
export function refuseControl(
  state: SessionState,
  kind: 'approval' | 'toolResult' | 'notification' | 'command',
  id: string,
  reason: string,
  now: number,
  cause: RejectionCause = 'unauthenticated',
): void {
  recordRejection(state, { at: now, via: kind, messageId: id, reason }, cause);
  state.controlEvents.push({ at: now, kind, id, summary: clipReason(`refused: ${reason}`) });
  keepLast(state.controlEvents, LIMITS.controlEvents);
  state.counts.controlEvents++;
}

/**
 * Under signed control a user identity in `from` is trusted only with a valid signature over the
 * message; otherwise the input is still processed, but as from an anonymous user (user-scoped
 * memory off for it), and the dropped identity is a recorded rejection.
 */
export async function trustIdentity(
  policy: WorkerPolicy,
  state: SessionState,
  input: BoundInput,
  signature: unknown,
): Promise<void> {
  const claimed = input.from?.kind === 'user' ? input.from.id : undefined;
  if (claimed === undefined) return;
  const payload = messageSigningPayload(input);
  const why = await refusalOfSigned(policy, 'message', state.sessionId, payload, signature, Date.now());
  if (why === null) return;
  input.from = { kind: 'user' };
  const reason = `identity "${claimed}" dropped: ${why}`;
  recordRejection(state, { at: Date.now(), via: 'message', messageId: input.messageId, reason }, 'unauthenticated');
}
