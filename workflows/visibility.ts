/**
 * What the Temporal Web UI shows of a Session besides its history: typed search attributes for
 * filtering lists of Sessions. Each upsert is a history event, so unchanged values are not sent.
 */
import { upsertSearchAttributes } from '@temporalio/workflow';
import { SessionGoalKey, SessionParentKey, SessionStageKey, SessionStatusKey } from './search-attributes.js';
import type { SessionStage, SessionState } from './state.js';
import { clipBytes } from './text.js';

/** Temporal refuses Keyword/Text values over 2 KB (and terminates the run), so the goal is cut by bytes. */
export const SESSION_GOAL_BYTES = 1_500;

/** Returns a function that upserts the Session's search attributes when any of them changed. */
export function makeSearchAttributePublisher(state: SessionState): (stage: SessionStage) => void {
  let last = '';
  return (stage) => {
    const goal = clipBytes(state.goals.session?.text ?? '', SESSION_GOAL_BYTES);
    const key = JSON.stringify([stage, state.status, goal, state.parentSessionId]);
    if (key === last) return;
    last = key;
    // Absent values are left out rather than upserted as null, which the Web UI would show as "null".
    upsertSearchAttributes([
      { key: SessionStageKey, value: stage },
      { key: SessionStatusKey, value: state.status },
      ...(goal ? [{ key: SessionGoalKey, value: goal }] : []),
      ...(state.parentSessionId ? [{ key: SessionParentKey, value: state.parentSessionId }] : []),
    ]);
  };
}
