/**
 * A sub-session's reply as its parent receives it: the `subSessionReply` handler, and under signed
 * control the check that the answering worker signed it, before children/sub-sessions.ts records it
 * and children/collaboration.ts acts on it. Lives in control/ because it shares the signature check
 * with the other control items.
 */
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import { DESCRIPTIONS, subSessionReplyUpdate } from '../../contract/api.js';
import { BUDGET } from '../../contract/budget.js';
import { FAILURE } from '../../contract/failures.js';
import { SubSessionReply, type SubSessionReplyResult } from '../../contract/messages.js';
import type { SessionState } from '../../contract/state.js';
import { clipBytes } from '../../contract/text.js';
import type { WorkerPolicy } from '../../contract/worker-policy.js';
import { takeDelegatedReply } from '../children/collaboration.js';
import { applySubSessionReply, replyId, replyRefusal } from '../children/sub-sessions.js';
import { recordRejection } from '../ledger/intake.js';
import type { ControlPlane } from './control-plane.js';
import { refusalNow, refusalOfSigned } from './signed-control.js';

/**
 * Sets the `subSessionReply` handler. An accepted reply is recorded (children/sub-sessions.ts) and,
 * when it answers a collaborating delegation, acted on (children/collaboration.ts); `taken` is told
 * of every accepted one. `early` holds the run-start patches that decide how a reply is checked.
 */
export function registerSubSessionReplies(
  state: SessionState,
  control: ControlPlane,
  early: { 'bound-control': boolean; 'current-control-policy': boolean },
  taken: () => void,
): void {
  const took = (raw: unknown) => (result: SubSessionReplyResult) => {
    if (result.accepted) {
      takeDelegatedReply(state, raw, Date.now());
      taken();
    }
    return result;
  };
  setHandler(
    subSessionReplyUpdate,
    (raw) => {
      // Runs recorded before `bound-control` take a reply at once, unverified, as they did.
      if (!early['bound-control']) return took(raw)(applySubSessionReply(state, raw, Date.now()));
      return verifiedSubSessionReply(state, control.policyReady(), raw, early['current-control-policy']).then(
        took(raw),
      );
    },
    {
      description: DESCRIPTIONS.subSessionReply,
      validator: (raw) => {
        const reason = replyRefusal(raw);
        if (reason !== null) throw ApplicationFailure.nonRetryable(reason, FAILURE.InvalidRequest);
      },
    },
  );
}

/**
 * The `subSessionReply` update in runs with `bound-control`: the reply waits for the worker's policy
 * and, under signed control, is applied only with a valid signature for this Session, which the
 * answering sub-session's worker makes (`answerParent`). Anything else is refused: a recorded
 * rejection, and the update fails with the reason, so a party that can send updates but holds no
 * key can no longer put a reply in the transcript. A re-delivered reply is verified again, then
 * found a duplicate.
 */
export async function verifiedSubSessionReply(
  state: SessionState,
  policy: Promise<WorkerPolicy>,
  raw: unknown,
  /** Runs with `current-control-policy`: the worker's configuration at check time decides (`checkControl`). */
  current = false,
): Promise<SubSessionReplyResult> {
  const known = await policy;
  const parsed = SubSessionReply.safeParse(raw);
  if ((current || known.signedControl) && parsed.success) {
    const { signature, ...body } = parsed.data;
    const why = current
      ? await refusalNow(state, 'subSessionReply', body, signature, Date.now())
      : await refusalOfSigned(known, 'subSessionReply', state.sessionId, body, signature, Date.now());
    if (why !== null) {
      const reason = clipBytes(why, BUDGET.reason);
      const rejection = { at: Date.now(), via: 'subSessionReply' as const, messageId: replyId(body), reason };
      recordRejection(state, rejection, 'unauthenticated');
      throw ApplicationFailure.nonRetryable(reason, FAILURE.InvalidRequest);
    }
  }
  return applySubSessionReply(state, raw, Date.now());
}
