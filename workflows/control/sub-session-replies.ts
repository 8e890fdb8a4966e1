/**
 * A sub-session's reply as its parent receives it under signed control: the check that the answering
 * worker signed it, before children/sub-sessions.ts records it. Lives in control/ because it shares
 * the signature check with the other control items.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { BUDGET } from '../../contract/budget.js';
import { FAILURE } from '../../contract/failures.js';
import { SubSessionReply, type SubSessionReplyResult } from '../../contract/messages.js';
import type { SessionState } from '../../contract/state.js';
import { clipBytes } from '../../contract/text.js';
import type { WorkerPolicy } from '../../contract/worker-policy.js';
import { applySubSessionReply, replyId } from '../children/sub-sessions.js';
import { recordRejection } from '../ledger/intake.js';
import { refusalNow, refusalOfSigned } from './signed-control.js';

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
