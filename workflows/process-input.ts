/**
 * One bound input through the task-control loop, top to bottom: understand it (relevance and the
 * decision table, and with combined understanding the message's task terms in the same call), prepare
 * the environment on a first task or a new phase while the phase that ended is compacted beside it,
 * then hand the aligned state to the business agent.
 */
import { isCancellation, patched, workflowInfo } from '@temporalio/workflow';
import type { AlignedTask } from '../contract/activity-contract.js';
import { applySelection, completeSelection, emptyCandidates } from './environment/capability-diff.js';
import { type Candidates } from '../contract/activity-contract.js';
import { compactBeside, compactPhase, endPhase, openPhase } from './environment/phases.js';
import { commitTaskGoals, refinePhaseGoal, statesGoals } from './environment/goals.js';
import { commitCapabilities } from './environment/capability-revisions.js';
import { decide, preparesEnvironment, type DecisionOutcome } from './understanding/decide.js';
import { runAgentTurn, type TurnExit } from './agent/agent-loop.js';
import { answerParent } from './children/sub-sessions.js';
import { afterTurn, releaseHeldAnswers } from './children/collaboration.js';
import { finishRecord, newRecord } from './ledger/decision-records.js';
import { emit } from './ledger/events.js';
import { BUDGET } from '../contract/budget.js';
import { routeOutOfScope } from './children/routing.js';
import type { SessionContext } from './stages/session-context.js';
import { describeFailure, recordStage, runStage, skipStage } from './stages/stage-runner.js';
import {
  LIMITS,
  STAGE,
  keepLast,
  type BoundInput,
  type Decision,
  type DecisionRecord,
  type Goal,
  type SessionStage,
  type SessionState,
  type StageRecord,
} from '../contract/state.js';
import type { WorkerPolicy } from '../contract/worker-policy.js';
import { makeSpeculation } from './agent/speculation.js';
import { makeMeter } from './ledger/accounting.js';
import type { ASKED_AFTER_HANDLERS } from './patches.js';
import { makeActivities } from './stages/activity-proxies.js';
import { CallScopes } from './run/call-scopes.js';
import { makeLookahead, relevanceRequest } from './understanding/lookahead.js';
import type { StagePublisher } from './view/visibility.js';
import { clipBytes } from '../contract/text.js';

/**
 * What every input of this run is processed with: the activities (metered), relevance judged ahead,
 * the speculative first step, the patches asked at the run's start that matter later, and the stage
 * shown in the Web UI and reported as events.
 */
export function sessionContext(
  state: SessionState,
  stage: StagePublisher,
  patches: Record<(typeof ASKED_AFTER_HANDLERS)[number], boolean>,
  policy: WorkerPolicy | null,
  shouldContinueAsNew: () => boolean,
  cancellable: SessionContext['cancellable'],
): SessionContext {
  const meter = makeMeter(state, patches['model-budgets']);
  const activities = makeActivities(state.settings, meter);
  // A judgment made ahead outlives the input that started it: each runs in a call scope of its own.
  const judgments = new CallScopes();
  const judgeAhead: typeof activities.relevance = (request) => judgments.run(() => activities.relevance(request));
  return {
    state,
    activities,
    lookahead: patches['relevance-lookahead'] ? makeLookahead(state, judgeAhead) : null,
    speculation: makeSpeculation(state, activities, meter, policy, {
      enabled: patches['speculative-agent-step'],
      likelyContinue: patches['fewer-actions'],
      goalStatements: patches['goal-statements'],
    }),
    patches: {
      combinedUnderstanding: patches['combined-understanding'],
      compactionBeside: patches['compaction-beside'],
      agentCapabilities: patches['agent-capabilities'],
      collaborating: patches['collaborating-subsessions'],
      goalStatements: patches['goal-statements'],
      remoteSubsessions: patches['remote-subsessions'],
    },
    taskQueue: workflowInfo().taskQueue,
    meter,
    show: Object.assign((name?: SessionStage) => stage.show(name), {
      started: (name: SessionStage, at: number) => emit(state, { kind: 'stage.started', stage: name }, at),
      finished: (done: StageRecord) =>
        emit(state, { kind: 'stage.finished', stage: done.stage, outcome: done.outcome }, done.endedAt),
    }),
    shouldContinueAsNew,
    cancellable,
  };
}

/**
 * Takes one input to its end: a newly bound input through the task-control loop and its agent turn,
 * or (with `input` null) the turn carried over in `state.turn` from the previous run, resumed through
 * the same agent loop. The decision record is appended when the turn ends; a turn parked to continue
 * as new finishes in the next run. Once it has ended, a sub-session answers its parent, and a
 * collaborating sub-session's reply may start the input's follow-up turn (children/collaboration.ts),
 * which the main loop resumes like a carried turn.
 */
export async function processInput(ctx: SessionContext, input: BoundInput | null): Promise<TurnExit> {
  const seq = input?.seq ?? ctx.state.turn?.seq;
  // Moving on releases the answers a sub-session held for its follow-ups (children/collaboration.ts).
  if (input && ctx.patches.collaborating) await releaseHeldAnswers(ctx);
  const exit = input ? await throughTheLoop(ctx, input) : await runAgentTurn(ctx);
  if (exit === 'parked' || seq === undefined) return exit;
  // Runs recorded before sub-sessions collaborated answer the parent as soon as the turn ends.
  if (ctx.patches.collaborating) await afterTurn(ctx, seq);
  else await answerParent(ctx, seq);
  return exit;
}

/** The task-control loop for a bound input, then its agent turn. */
async function throughTheLoop(ctx: SessionContext, input: BoundInput): Promise<TurnExit> {
  const { state } = ctx;
  const record = newRecord(input);
  ctx.meter.open(record);
  const firstTask = state.goals.session === null || state.counts.bound === 1;
  // A continue-shaped Session sends the agent's first step beside the relevance call (speculation.ts).
  ctx.speculation.start(input, record, firstTask, decidedAhead(ctx, input, firstTask));
  const understood = await understand(ctx, input, record, firstTask);
  const { outcome } = understood;
  ctx.speculation.decided(outcome.decision);
  record.decision = outcome.decision;
  record.bands = outcome.bands;
  record.degraded = outcome.degraded;
  emit(state, { kind: 'decision', decision: record.decision, scores: record.scores, degraded: record.degraded });

  const previousPhase = state.phases.at(-1);
  // The hand-off of the phase that ended is written beside the new phase's environment, not in front
  // of it; the agent still waits for it. Sessions recorded before that compact after preparing.
  const compacting = outcome.decision === 'new-phase' && previousPhase !== undefined;
  const beside = compacting && ctx.patches.compactionBeside;
  // Sessions recorded before statements set goals from the message at once; with them a first task's
  // or a new phase's goals are committed after the extraction stage, from its statement. The phase
  // that ended is over all the same, and its hand-off starts beside the extraction.
  const stated = ctx.patches.goalStatements && statesGoals(state, outcome.decision);
  if (stated && compacting) {
    endPhase(previousPhase, input.seq);
    input.phaseIndex = previousPhase.index + 1;
  }
  let handoff = stated && beside ? compactBeside(ctx, previousPhase.index, record) : null;
  const extracted = stated ? await taskTerms(ctx, record, statedTask(state, input), understood) : null;
  const noTask = extracted !== null && !commitTaskGoals(state, record, input, extracted.goal);
  // Awaited only when it routes: the other decisions add no step before the next command.
  const routing = stated ? null : applyDecision(ctx, input, record, understood);
  if (routing) await routing;
  input.phaseIndex = state.phases.at(-1)?.index ?? 0;
  ctx.show();
  // The goals are settled for this input: judge the next queued inputs against them meanwhile.
  ctx.lookahead?.fill();

  if (beside && !stated) handoff = compactBeside(ctx, previousPhase.index, record);
  if (noTask) {
    for (const stage of [STAGE.discover, STAGE.orchestrate, STAGE.apply]) skipStage(record, stage, NO_TASK);
  } else if (preparesEnvironment(outcome.decision)) {
    const mode = outcome.decision === 'initialize' ? 'init' : 'reconcile';
    const terms = extracted ?? (outcome.decision === 'new-phase' ? understood : {});
    await prepareEnvironment(ctx, input, record, mode, terms, extracted !== null);
  }
  if (handoff) await handoff();
  else if (compacting) await compactPhase(ctx, previousPhase.index, record);

  input.decision = outcome.decision;
  // Sessions recorded before the tool loop replay the single agent call they made then.
  if (!patched('agent-loop')) {
    await agentTurn(ctx, input, record);
    finishRecord(state, record);
    return 'finished';
  }
  const now = Date.now();
  const skip = noTask ? NO_TASK : agentSkipReason(ctx, record);
  if (skip !== null) {
    record.agent = {
      outcome: 'skipped',
      reason: skip,
      startedAt: now,
      endedAt: now,
      reply: null,
      steps: 0,
      toolCalls: [],
    };
    finishRecord(state, record);
    return 'finished';
  }
  // Placeholder until the turn ends; the record is not published before then.
  record.agent = {
    outcome: 'failed',
    reason: 'the turn has not ended',
    startedAt: now,
    endedAt: now,
    reply: null,
    steps: 0,
    toolCalls: [],
  };
  return runAgentTurn(ctx, {
    input,
    turn: { seq: input.seq, record, from: input.from, steps: 0, step: null, failing: null, interrupted: false },
  });
}

/**
 * What a decision does to the goals where no task statement is committed for it: a refinement of the
 * current work, and (in Sessions recorded before statements) the goals of a first task or a new phase
 * set from the message; an out-of-scope request is kept, and the routing returned to be awaited.
 */
function applyDecision(
  ctx: SessionContext,
  input: BoundInput,
  record: DecisionRecord,
  understood: Understood,
): Promise<void> | null {
  const { state } = ctx;
  const { outcome } = understood;
  if (outcome.decision === 'continue' && understood.refines && ctx.patches.goalStatements) {
    refinePhaseGoal(state, record, input, understood.goal);
  } else if (outcome.decision === 'initialize') {
    if (state.goals.session === null) {
      const goal: Goal = { text: input.text, resources: input.resources, setAtSeq: input.seq };
      state.goals.session = goal;
      openPhase(state, goal, 'open');
    } else if (state.goals.phase === null) {
      openPhase(state, state.goals.session, 'open');
    }
  } else if (outcome.decision === 'new-phase') {
    openPhase(state, { text: input.text, resources: input.resources, setAtSeq: input.seq }, 'open');
  } else if (outcome.decision === 'out-of-scope') {
    state.outOfScope.push({
      seq: input.seq,
      messageId: input.messageId,
      text: input.text,
      resources: input.resources,
      from: input.from,
      status: 'pending',
      routedTo: null,
      note: null,
    });
    keepLast(state.outOfScope, LIMITS.outOfScope);
    // Sessions recorded before routing existed replay without it.
    if (patched('route-out-of-scope')) return routeOutOfScope(ctx, input, record);
  }
  return null;
}

/** Why the agent does not act on this input, or null when it does. */
function agentSkipReason(ctx: SessionContext, record: DecisionRecord): string | null {
  const { state } = ctx;
  if (!state.settings.agentTurn) return 'agent turn disabled in session settings';
  if (record.decision === 'out-of-scope') {
    return `out of scope: ${record.route?.to ? `routed to ${record.route.to}` : 'preserved for routing'}`;
  }
  if (!state.goals.session || !state.goals.phase) return 'session has no goals';
  return null;
}

/** The decision a judgment made ahead for `input` has already given (lookahead.ts), or null. */
function decidedAhead(ctx: SessionContext, input: BoundInput, firstTask: boolean): Decision | null {
  const { session, phase } = ctx.state.goals;
  if (firstTask || !session || !phase) return null;
  const scores = ctx.lookahead?.answered(input.seq, phase.text, session.text);
  if (!scores) return null;
  return decide({ firstTask: false, relevance: { ok: true, scores }, thresholds: ctx.state.settings.thresholds })
    .decision;
}

/** What understanding an input gives: the decision, and the task terms when the relevance call had them. */
interface Understood {
  outcome: DecisionOutcome;
  terms?: string[] | undefined;
  /** The understanding call's task statement (or refined phase goal), and whether the message refines. */
  goal?: string | null | undefined;
  refines?: boolean | undefined;
}

/** Why an input that states no task (a greeting before any task) skips the environment and the agent. */
const NO_TASK = 'no task stated';

/**
 * The task as the extraction role sees it before the goals are committed: the phase the message
 * opens is the message itself (as it was when its goals were set first), the session goal the
 * Session's, or the message on a first task.
 */
function statedTask(state: SessionState, input: BoundInput): AlignedTask {
  return {
    sessionGoal: state.goals.session?.text ?? input.text,
    phaseGoal: input.text,
    message: input.text,
    resources: input.resources,
  };
}

/** The task as the extraction and orchestration roles see it: the goals it serves, the message as sent. */
function alignedTask(state: SessionState, input: BoundInput): AlignedTask {
  return {
    sessionGoal: state.goals.session?.text ?? input.text,
    phaseGoal: state.goals.phase?.text ?? input.text,
    message: input.text,
    resources: input.resources,
  };
}

/** Stage 1: how does this input relate to the current phase and the Session? */
async function understand(
  ctx: SessionContext,
  input: BoundInput,
  record: DecisionRecord,
  firstTask: boolean,
): Promise<Understood> {
  const { state, activities } = ctx;
  const thresholds = state.settings.thresholds;
  const { session: sessionGoal, phase: phaseGoal } = state.goals;
  if (firstTask || !sessionGoal || !phaseGoal) {
    await runStage(record, STAGE.understand, ctx.show, () => Promise.resolve('first task input: goals come from it'));
    return { outcome: decide({ firstTask: true, thresholds }) };
  }
  const judge = () => activities.relevance(relevanceRequest(input, phaseGoal.text, sessionGoal.text));
  // A judgment made ahead that failed is not the input's verdict: it ran beside other work, and one
  // at a time the input would be judged now. It is judged again, and only that failure degrades it.
  const ahead = ctx.lookahead?.take(input.seq, phaseGoal.text, sessionGoal.text);
  const result = await runStage(record, STAGE.understand, ctx.show, () => (ahead ? ahead.catch(judge) : judge()));
  if (!result.ok) {
    return { outcome: decide({ firstTask: false, relevance: { ok: false, reason: result.reason }, thresholds }) };
  }
  const { phaseRelevance, sessionRelevance } = result.value;
  if (Number.isFinite(phaseRelevance) && Number.isFinite(sessionRelevance)) {
    record.scores = { phase: phaseRelevance, session: sessionRelevance };
  }
  const outcome = decide({ firstTask: false, relevance: { ok: true, scores: result.value }, thresholds });
  const last = record.stages.at(-1);
  if (outcome.degraded && last) last.outcome = `fallback: ${outcome.degraded}`;
  return { outcome, terms: result.value.terms, goal: result.value.goal, refines: result.value.refines };
}

/**
 * Extract terms -> recall candidates -> orchestrate -> apply the difference. `understood` are the task
 * terms the relevance call extracted for a new phase (combined understanding): with some, extraction
 * is not called; without any, it is.
 */
async function prepareEnvironment(
  ctx: SessionContext,
  input: BoundInput,
  record: DecisionRecord,
  mode: 'init' | 'reconcile',
  understood: Pick<Understood, 'terms'>,
  extracted: boolean,
): Promise<void> {
  const { state, activities } = ctx;
  const task = alignedTask(state, input);
  const terms = extracted ? (understood.terms ?? []) : (await taskTerms(ctx, record, task, understood)).terms;

  const rawText = task.phaseGoal === input.text ? input.text : `${task.phaseGoal}\n${input.text}`;
  const recalled = await runStage(record, STAGE.discover, ctx.show, () =>
    activities.recall({
      sessionId: state.sessionId,
      terms,
      text: rawText,
      // User-scoped memories belong to whoever sent the input that set this task.
      ...(input.from?.kind === 'user' && input.from.id ? { userId: input.from.id } : {}),
    }),
  );
  const candidates: Candidates = recalled.ok ? recalled.value : emptyCandidates();
  if (!recalled.ok) record.fallbacks.push(`recall: ${recalled.reason}; no new candidates`);

  const current = state.capabilities;
  const selected = await runStage(record, STAGE.orchestrate, ctx.show, async () => {
    const answer = await activities.orchestrate({
      task,
      mode,
      current: { skills: current.skills, toolsets: current.toolsets, memories: current.memories },
      candidates,
    });
    return completeSelection(answer, current);
  });
  if (!selected.ok) {
    record.fallbacks.push(`orchestration: ${selected.reason}; capabilities kept`);
    skipStage(record, STAGE.apply, 'orchestration failed; current capabilities kept');
    return;
  }
  await runStage(record, STAGE.apply, ctx.show, () => {
    const applied = applySelection(current, candidates, selected.value);
    commitCapabilities(state, applied, { reason: 'orchestration', seq: input.seq, callId: null });
    record.diff = applied.diff;
    record.dropped = applied.dropped;
    return Promise.resolve(applied);
  });
}

/**
 * The retrieval terms of the aligned task and its statement: those the relevance call already gave,
 * or the extraction role's. Sessions recorded before combined understanding always call extraction;
 * their relevance results carry no terms, so the patch is asked only when terms are there to use.
 * A failed extraction gives no statement (undefined: the deterministic one stands in).
 */
async function taskTerms(
  ctx: SessionContext,
  record: DecisionRecord,
  task: AlignedTask,
  understood: Pick<Understood, 'terms' | 'goal'>,
): Promise<{ terms: string[]; goal?: string | null | undefined }> {
  const { terms, goal } = understood;
  if (terms && terms.length > 0 && ctx.patches.combinedUnderstanding) {
    recordStage(record, STAGE.extract, 'terms from the relevance call');
    return { terms, goal };
  }
  const extracted = await runStage(record, STAGE.extract, ctx.show, () => ctx.activities.extractTerms({ task }));
  if (!extracted.ok) record.fallbacks.push(`extraction: ${extracted.reason}; recall used the raw task text`);
  return extracted.ok
    ? { terms: extracted.value.terms.filter((t) => t.trim()), goal: extracted.value.goal }
    : { terms: [] };
}

/** The business agent's single call, as Sessions made it before the tool loop (kept for replay). */
async function agentTurn(ctx: SessionContext, input: BoundInput, record: DecisionRecord): Promise<void> {
  const { state, activities } = ctx;
  const startedAt = Date.now();
  const done = (outcome: 'replied' | 'skipped' | 'failed', reason: string | null) => {
    record.agent = { outcome, reason, startedAt, endedAt: Date.now(), reply: input.reply, steps: 1, toolCalls: [] };
  };
  if (!state.settings.agentTurn) return done('skipped', 'agent turn disabled in session settings');
  if (record.decision === 'out-of-scope') {
    const where = record.route?.to ? `routed to ${record.route.to}` : 'preserved for routing';
    return done('skipped', `out of scope: ${where}`);
  }
  const { session: sessionGoal, phase: phaseGoal } = state.goals;
  if (!sessionGoal || !phaseGoal) return done('skipped', 'session has no goals');
  ctx.show(STAGE.agent);
  try {
    const result = await activities.agentTurn({
      sessionId: state.sessionId,
      goals: { session: sessionGoal.text, phase: phaseGoal.text },
      decision: record.decision,
      message: { text: input.text, resources: input.resources },
      skills: state.capabilities.skills.map((c) => c.id),
      toolsets: state.capabilities.toolsets.map((c) => c.id),
      memories: state.capabilities.memories.map((c) => c.id),
    });
    if ('reply' in result) {
      input.reply = result.reply.slice(0, LIMITS.replyChars);
      done('replied', null);
    } else {
      done('skipped', result.skipped);
    }
  } catch (err) {
    if (isCancellation(err)) throw err;
    done('failed', clipBytes(describeFailure(err), BUDGET.reason));
  }
}
