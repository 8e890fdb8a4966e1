/**
 * What the Temporal Web UI shows of a Session besides its history: its stage in the current details,
 * and typed search attributes for filtering lists of Sessions. Each upsert is a history event, so
 * unchanged values are not sent.
 */
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import {
  SessionGoalKey,
  SessionParentKey,
  SessionStageKey,
  SessionStatusKey,
} from '../../contract/search-attributes.js';
import { STAGE, type SessionStage, type SessionState } from '../../contract/state.js';
import { clipBytes } from '../../contract/text.js';
import { renderDetails } from './view.js';

/** Temporal refuses Keyword/Text values over 2 KB (and terminates the run), so the goal is cut by bytes. */
export const SESSION_GOAL_BYTES = 1_500;

/** The stages the SessionStage attribute holds when it carries only the Session's coarse state. */
const COARSE_STAGES: ReadonlySet<SessionStage> = new Set([
  STAGE.idle,
  STAGE.waitingApproval,
  STAGE.waitingTool,
  STAGE.paused,
  STAGE.closed,
]);

/**
 * The value of SessionStage for a stage. With `coarse`, the stages of an input being processed map
 * to Idle (not waiting for anyone): the attribute then changes only when the Session starts or stops
 * waiting for a person or a tool, is paused, resumed or closed — never per input, since each change
 * is a history event and a billable action. The fine stage shows in current details at no cost.
 */
export function stageAttribute(stage: SessionStage, coarse: boolean): SessionStage {
  return !coarse || COARSE_STAGES.has(stage) ? stage : STAGE.idle;
}

/**
 * Returns a function that upserts the Session's search attributes when any of them changed. While
 * `held()`, nothing is upserted: the last stage asked for is kept and sent by the next call after.
 */
export function makeSearchAttributePublisher(
  state: SessionState,
  coarse: boolean,
  held: (inputs?: number) => boolean = () => false,
): (stage: SessionStage, inputs?: number) => void {
  let last = '';
  return (fine, inputs) => {
    if (held(inputs)) return;
    const stage = stageAttribute(fine, coarse);
    // Encrypted deployments keep user text out of visibility, where no payload codec reaches.
    const goal = state.settings.goalSearchAttribute
      ? clipBytes(state.goals.session?.text ?? '', SESSION_GOAL_BYTES)
      : '';
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

/**
 * The one place the Session's stage lives: what `snapshot().stage` and the Web UI's current details
 * show, and what the SessionStage search attribute is published from.
 */
export interface StagePublisher {
  /** The stage the Session is in now. */
  readonly current: SessionStage;
  /**
   * Enters `next` (or re-renders the current stage) in the current details. Entering a stage also
   * upserts the search attributes when the attribute is coarse: waiting for approval or a tool
   * result shows in the Web UI's filters as soon as it starts.
   */
  readonly show: (next?: SessionStage) => void;
  /** Enters the stage a Session rests in between inputs: Paused or Idle, as its status says. */
  readonly rest: () => void;
  /** After a command: a resting Session moves between Idle and Paused; a busy one keeps its stage. */
  readonly followStatus: () => void;
  /**
   * Upserts the search attributes for `stage` (default: the current one) if any of them changed.
   * `inputs` is the count of inputs the hold goes by, when not the Session's inputs now.
   */
  readonly publish: (stage?: SessionStage, inputs?: number) => void;
  /**
   * From now until `flush`, while the Session has no goal yet and an input (queued or bound) is
   * about to set it, search attributes are not upserted: a run's first task then upserts once, with
   * the goal, instead of once at the start and again when the first input has set the goal
   * (`fewer-actions`).
   */
  readonly holdForGoal: () => void;
  /** Ends the hold and upserts what was held back, if anything changed. */
  readonly flush: () => void;
}

/** The stage publisher of a Session entering a run; it starts at rest. */
export function makeStagePublisher(state: SessionState, coarse: boolean): StagePublisher {
  const resting = (): SessionStage => (state.status === 'paused' ? STAGE.paused : STAGE.idle);
  let holding = false;
  const held = (inputs = state.counts.bound + state.queue.length) =>
    holding && state.goals.session === null && inputs > 0 && state.status !== 'closed';
  const searchAttributes = makeSearchAttributePublisher(state, coarse, held);
  let current = resting();
  const show = (next?: SessionStage): void => {
    if (next) current = next;
    setCurrentDetails(renderDetails(state, current));
    if (coarse && next) searchAttributes(current);
  };
  return {
    get current() {
      return current;
    },
    show,
    rest: () => show(resting()),
    followStatus: () => {
      if (state.status === 'paused' && current === STAGE.idle) current = STAGE.paused;
      if (state.status === 'active' && current === STAGE.paused) current = STAGE.idle;
      show();
    },
    publish: (stage = current, inputs) => searchAttributes(stage, inputs),
    holdForGoal: () => {
      holding = true;
    },
    flush: () => {
      if (!holding) return;
      holding = false;
      searchAttributes(current);
    },
  };
}
