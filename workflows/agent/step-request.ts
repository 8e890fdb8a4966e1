/**
 * The request of one agent model step, built from facts: the goals, the input's decision, the
 * earlier phases' summaries, the artifacts, the transcript window and the loaded capabilities. One
 * module for every step of a turn (agent-loop.ts) and for the first step sent ahead of the decision
 * (speculation.ts): the early step stands in for the real one only because both requests are built
 * here, the same way.
 */
import type { AgentStepRequest } from '../../contract/activity-contract.js';
import type { ActiveTurn, BoundInput, DecisionRecord, SessionState } from '../../contract/state.js';
import type { TranscriptItem } from '../../contract/transcript.js';
import { offersGoalChange } from './goal-tool.js';

/**
 * One empty list for every transcript item without resources: the input's own empty array would
 * stay in the transcript after the input has left the history, 32 bytes per item of a cached
 * Session's heap. Frozen, so that nothing can add to it for all of them.
 */
const NO_RESOURCES = Object.freeze([]) as unknown as BoundInput['resources'];

/** The transcript item a turn begins with: the input as the user (or the routing Session) sent it. */
export function userItem(input: BoundInput): TranscriptItem {
  return {
    kind: 'user',
    seq: input.seq,
    text: input.text,
    resources: input.resources.length > 0 ? input.resources : NO_RESOURCES,
    ...(input.note && input.routed ? { note: { fromSessionId: input.routed.fromSessionId, text: input.note } } : {}),
  };
}

/** What of a turn a step's request names. */
export type StepOf = Pick<ActiveTurn, 'from' | 'steps'> & { record: Pick<DecisionRecord, 'decision'> };

/**
 * The request for step `turn.steps` over the transcript `window`. One function for every step and
 * for the first step started ahead (speculation.ts): that one stands in for the real first step only
 * because the two requests are the same.
 */
export function requestOf(
  state: SessionState,
  turn: StepOf,
  window: TranscriptItem[],
  /** Goal statements (the `goal-statements` patch): `propose_goal_change` is offered where it fits. */
  goalStatements = false,
): AgentStepRequest {
  return {
    sessionId: state.sessionId,
    ...(turn.from?.kind === 'user' && turn.from.id ? { userId: turn.from.id } : {}),
    sessionKind: state.parentSessionId ? 'sub-session' : 'top-level',
    goals: { session: state.goals.session?.text ?? '', phase: state.goals.phase?.text ?? '' },
    decision: turn.record.decision,
    summaries: state.phases
      .slice(0, -1)
      .filter((p) => p.summary !== null)
      .map((p) => ({ phaseIndex: p.index, goal: p.goal.text, summary: p.summary ?? '' })),
    artifacts: state.artifacts,
    transcript: window,
    skills: state.capabilities.skills.map((c) => c.id),
    toolsets: state.capabilities.toolsets.map((c) => c.id),
    memories: state.capabilities.memories.map((c) => c.id),
    step: turn.steps,
    ...(goalStatements && offersGoalChange(state, turn.record.decision) ? { offerGoalChange: true } : {}),
  };
}
