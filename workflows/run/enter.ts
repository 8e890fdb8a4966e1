/**
 * How a run enters its Session: the start argument parsed (a first run), or the state carried by
 * continue-as-new restored (a later run, and only from this Session's own lineage); and the start
 * argument a continued run is given.
 */
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import type { SessionInput } from '../../contract/api.js';
import { FAILURE } from '../../contract/failures.js';
import { workflowIdFor } from '../../contract/ids.js';
import { SessionStart } from '../../contract/messages.js';
import type { SessionState } from '../../contract/state.js';
import { describeIssues } from '../../contract/text.js';
import { initialState, restoreState } from './state.js';

/** Parses the workflow argument. Bad start input fails the workflow with a clear, non-retryable error. */
export function enter(input: SessionInput): SessionState {
  if (!input || typeof input !== 'object') {
    throw ApplicationFailure.nonRetryable('start argument must be an object', FAILURE.InvalidStartArgument);
  }
  const { carried, ...start } = input;
  if (carried !== undefined) {
    refuseForeignCarriedState(carried);
    const restored = restoreState(carried);
    if (!restored.ok) {
      // Deliberately not an ApplicationFailure: carried state this code cannot read means the
      // deployed worker is wrong, not the Session. A plain Error fails the workflow task, which
      // Temporal retries until a worker that can read the state is deployed; nothing is lost.
      throw new Error(`carried state is invalid: ${restored.reason}`);
    }
    restored.state.run++;
    return restored.state;
  }
  const parsed = SessionStart.safeParse(start);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(
      `invalid start argument: ${describeIssues(parsed.error)}`,
      FAILURE.InvalidStartArgument,
    );
  }
  const expectedId = workflowIdFor(parsed.data.sessionId);
  if (workflowInfo().workflowId !== expectedId) {
    throw ApplicationFailure.nonRetryable(
      `workflow id must be ${expectedId} for sessionId ${parsed.data.sessionId}`,
      FAILURE.InvalidStartArgument,
    );
  }
  return initialState(parsed.data);
}

/**
 * Carried state is trusted only from this Session's own continue-as-new: the run must continue an
 * earlier run of this workflow (the server sets that lineage; no client can), and the state must
 * belong to this workflow's Session. A start that brings state of its own would otherwise hand the
 * Session forged goals, capabilities, memories or an approved tool call.
 */
function refuseForeignCarriedState(carried: unknown): void {
  const info = workflowInfo();
  const sessionId = carried && typeof carried === 'object' && 'sessionId' in carried ? carried.sessionId : null;
  const ownState = typeof sessionId === 'string' && workflowIdFor(sessionId) === info.workflowId;
  if (info.continuedFromExecutionRunId === undefined || !ownState) {
    const why =
      info.continuedFromExecutionRunId === undefined
        ? 'this run was started, not continued'
        : 'the state belongs to another Session';
    throw ApplicationFailure.nonRetryable(
      `carried state is accepted only from the Session's own continue-as-new (${why}); start a Session with { sessionId, parentSessionId?, profile?, goals?, settings? }`,
      FAILURE.InvalidStartArgument,
    );
  }
}

/** The start argument a continued run is given (its state rides along in `carried`). */
export function startOf(state: SessionState): SessionStart {
  return {
    sessionId: state.sessionId,
    ...(state.parentSessionId ? { parentSessionId: state.parentSessionId } : {}),
    profile: state.profile,
  };
}
