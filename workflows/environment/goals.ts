/**
 * Committing goals: the Session, never a model, writes them. A statement a model wrote is committed
 * when it is valid (contract/goals.ts), else the deterministic statement of the message; the message
 * stays the goal's `source`. Every change goes to the input's decision record (old and new), the
 * goal history and the event log.
 *
 * Pure module: safe to import from workflow code.
 */
import {
  STATEMENT_CHARS,
  refinedStatement,
  taskStatement,
  validStatement,
  type GoalChange,
  type GoalChangeReason,
  type GoalLevel,
} from '../../contract/goals.js';
import {
  LIMITS,
  keepLast,
  type BoundInput,
  type DecisionRecord,
  type Goal,
  type SessionState,
} from '../../contract/state.js';
import { clip } from '../../contract/text.js';
import { emit } from '../ledger/events.js';
import { openPhase } from './phases.js';

/** The decisions whose goals come from a task statement (a first task with no goals yet, a new phase). */
export function statesGoals(state: SessionState, decision: string): boolean {
  return (decision === 'initialize' && state.goals.session === null) || decision === 'new-phase';
}

/**
 * Commits the goals of a first task or a new phase from `answer`, the statement the understanding or
 * extraction call wrote (null: the message states no task; undefined: no model wrote one). A first
 * input that states no task (a greeting) sets no goals: the result is false, and the next input is
 * the first task. A new phase always gets a goal.
 */
export function commitTaskGoals(
  state: SessionState,
  record: DecisionRecord,
  input: BoundInput,
  answer: string | null | undefined,
): boolean {
  const statement = answer === null ? null : (validStatement(answer) ?? (taskStatement(input.text) || null));
  const goal = (text: string): Goal => ({ text, resources: input.resources, setAtSeq: input.seq, source: input.text });
  if (record.decision === 'initialize') {
    if (statement === null) return false;
    commitGoal(state, record, 'session', goal(statement), 'initialize', null);
    commitGoal(state, record, 'phase', goal(statement), 'initialize', null);
    return true;
  }
  // Relevance opened a phase, so the message asks for something: it is its own goal when nothing shorter states it.
  commitGoal(
    state,
    record,
    'phase',
    goal(statement ?? clip(input.text.replace(/\s+/g, ' '), STATEMENT_CHARS)),
    'new-phase',
    null,
  );
  return true;
}

/**
 * A `continue` input that refines the current work: the phase goal becomes the refined statement
 * (the understanding call's, else the phase goal with the message's statement after it). The session
 * goal is untouched.
 */
export function refinePhaseGoal(
  state: SessionState,
  record: DecisionRecord,
  input: BoundInput,
  answer: string | null | undefined,
): void {
  const current = state.goals.phase;
  if (!current) return;
  const text = validStatement(answer) ?? refinedStatement(current.text, input.text);
  if (text === current.text) return;
  commitGoal(state, record, 'phase', { ...current, text, setAtSeq: input.seq, source: input.text }, 'refine', null);
}

/** An approved `propose_goal_change`: the session goal becomes `statement`. */
export function commitProposedGoal(
  state: SessionState,
  record: DecisionRecord,
  seq: number,
  statement: string,
  source: string,
  callId: string,
): void {
  const goal: Goal = { text: statement, resources: [], setAtSeq: seq, source };
  commitGoal(state, record, 'session', goal, 'proposal', callId);
}

/**
 * Sets one goal and records the change. A phase goal of a first task or a new phase opens its phase;
 * a refined one replaces the current phase's goal in place.
 */
export function commitGoal(
  state: SessionState,
  record: DecisionRecord | null,
  level: GoalLevel,
  goal: Goal,
  reason: GoalChangeReason,
  callId: string | null,
): void {
  const old = state.goals[level]?.text ?? null;
  if (level === 'session') {
    state.goals.session = goal;
  } else if (reason === 'refine') {
    state.goals.phase = goal;
    const phase = state.phases.at(-1);
    if (phase) phase.goal = goal;
  } else {
    openPhase(state, goal, 'open');
  }
  recordGoalChange(state, record, { level, reason, seq: goal.setAtSeq, old, new: goal.text, callId, at: Date.now() });
}

/** A goal change in the decision record (when there is one), the goal history and the event log. */
export function recordGoalChange(state: SessionState, record: DecisionRecord | null, change: GoalChange): void {
  if (record) (record.goals ??= []).push(change);
  state.goalHistory.push(change);
  keepLast(state.goalHistory, LIMITS.goalHistory);
  emit(state, { kind: 'goal.changed', level: change.level, reason: change.reason, old: change.old, new: change.new });
}
