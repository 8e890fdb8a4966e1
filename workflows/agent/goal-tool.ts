/**
 * The agent's `propose_goal_change`, run by the Session once the call is approved (the approval
 * policy has had its say before a call gets here, as for any tool; by default the call waits for a
 * person). It is offered only where responsibility may really have changed: in a `conflict` or
 * `uncertain` turn, where the agent asks the user, and in the turn after, where the user answers. The
 * proposal must quote the user's confirming words from this turn's input; the session goal then
 * becomes the proposed statement, recorded as a goal change with the call's id.
 */
import { GOAL_TOOL, ProposeGoalChangeArgs } from '../../contract/builtin-tools.js';
import { finishCall } from '../../contract/pending-calls.js';
import type { ActiveTurn, Decision, PendingCall, SessionState } from '../../contract/state.js';
import { describeIssues, parseJson } from '../../contract/text.js';
import { commitProposedGoal } from '../environment/goals.js';
import type { SessionContext } from '../stages/session-context.js';

/** Decisions after which the agent may propose a new session goal (in that turn and the next). */
const UNSETTLED: readonly Decision[] = ['conflict', 'uncertain'];

/** Whether a turn for an input with `decision` offers `propose_goal_change`. */
export function offersGoalChange(state: SessionState, decision: Decision): boolean {
  return UNSETTLED.includes(decision) || UNSETTLED.includes(state.decisions.at(-1)?.decision ?? 'continue');
}

/** Runs one approved `propose_goal_change` and finishes it with the result the model sees. */
export function runGoalTool(ctx: SessionContext, turn: ActiveTurn, call: PendingCall): void {
  const { state } = ctx;
  const args = ProposeGoalChangeArgs.safeParse(parseJson(call.arguments));
  if (!args.success) {
    return finishCall(call, 'error', `invalid arguments for ${GOAL_TOOL}: ${describeIssues(args.error)}`);
  }
  const { goal, confirmation } = args.data;
  if (!offersGoalChange(state, turn.record.decision)) {
    return finishCall(call, 'error', `refused: ${GOAL_TOOL} is only for a conflict or uncertainty the user resolved`);
  }
  const said = state.transcript.find((t) => t.kind === 'user' && t.seq === turn.seq);
  const text = said?.kind === 'user' ? said.text : '';
  if (!normalize(text).includes(normalize(confirmation))) {
    return finishCall(
      call,
      'error',
      `refused: the confirmation must quote the user's own words from their message; ask the user to confirm the change first`,
    );
  }
  if (state.goals.session?.text === goal) return finishCall(call, 'ok', `the session goal is already "${goal}"`);
  commitProposedGoal(state, turn.record, turn.seq, goal, text, call.callId);
  finishCall(call, 'ok', `session goal changed to "${goal}"`);
}

function normalize(text: string): string {
  return text.replace(/\s+/g, ' ').trim().toLowerCase();
}
