/**
 * The Session workflow: one durable workflow per agent Session. Inputs are recorded in order,
 * judged against the two-level goal, and the capability environment changes only on the first task
 * or a new phase. Decision logic and state transitions live in pure modules; this file wires them
 * to Temporal.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import { z } from 'zod';
import type { AlignedTask, SessionActivities } from './activity-contract.js';
import {
  DESCRIPTIONS,
  approvalSignal,
  capabilitiesQuery,
  commandSignal,
  decisionsQuery,
  goalsQuery,
  historyQuery,
  messageSignal,
  notificationSignal,
  outOfScopeQuery,
  snapshotQuery,
  submitUpdate,
  toolResultSignal,
} from './api.js';
import {
  CandidatesSchema,
  SelectionSchema,
  applySelection,
  completeSelection,
  emptyCandidates,
  type Candidates,
} from './capabilities.js';
import { applyControl, openPhase, type ControlKind } from './control.js';
import { band, decide, preparesEnvironment, type DecisionOutcome } from './decide.js';
import { BUDGET, clipBytes, enforceBudget } from './budget.js';
import { bindNext, dedupeKey, initialState, intake, refusal, restoreState } from './intake.js';
import { SessionStart, describeIssues, workflowIdFor } from './schemas.js';
import { SessionGoalKey, SessionParentKey, SessionStageKey, SessionStatusKey } from './search-attributes.js';
import {
  AGENT_STAGE,
  COMPACTION_STAGE,
  LIMITS,
  ROUTING_STAGE,
  STAGES,
  keepLast,
  type BoundInput,
  type ChildSession,
  type DecisionRecord,
  type Goal,
  type SessionStage,
  type SessionState,
} from './state.js';
import { buildView, renderDetails } from './view.js';

/** The workflow argument: the public start argument, plus state carried across continue-as-new. */
export type SessionInput = SessionStart & { carried?: unknown };

export interface SessionResult {
  sessionId: string;
  status: SessionState['status'];
  lastSeq: number;
  runs: number;
}

const NON_RETRYABLE = ['ModelInvalidOutput', 'ModelRequestRejected', 'ModelNotConfigured', 'InvalidRequest'];

// Activity results are checked before use: a worker running other code on the same task queue must
// not be able to fail a workflow task with a malformed answer.
const ScoresShape = z.object({ phaseRelevance: z.number(), sessionRelevance: z.number() });
const TermsShape = z.object({ terms: z.array(z.string()) });
const CreatedShape = z.object({ sessionId: z.string().min(1) });

function expectShape<T>(shape: z.ZodType<T>, value: unknown): T {
  const parsed = shape.safeParse(value);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(
      `unexpected activity result: ${describeIssues(parsed.error)}`,
      'InvalidActivityResult',
    );
  }
  return parsed.data;
}

/** Workflow type `session`. */
export async function session(input: SessionInput): Promise<SessionResult> {
  const state = enter(input);
  let stage: SessionStage = state.status === 'paused' ? 'Paused' : 'Idle';
  let inputsThisRun = 0;

  const searchAttributes = makeSearchAttributePublisher(state);
  const publish = (next?: SessionStage): void => {
    if (next) stage = next;
    setCurrentDetails(renderDetails(state, stage));
  };

  // All handlers are registered before the first await, so no early signal or update is dropped.
  setHandler(
    messageSignal,
    (raw) => {
      intake(state, raw, 'signal', Date.now());
      publish();
    },
    { description: DESCRIPTIONS.message },
  );
  setHandler(
    submitUpdate,
    (raw) => {
      const result = intake(state, raw, 'update', Date.now());
      publish();
      if (result.kind === 'rejected') throw ApplicationFailure.nonRetryable(result.reason, 'InvalidMessage');
      return { seq: result.seq, duplicate: result.kind === 'duplicate' };
    },
    {
      description: DESCRIPTIONS.submit,
      validator: (raw) => {
        const reason = refusal(state, raw);
        if (reason !== null) throw ApplicationFailure.nonRetryable(reason, 'InvalidMessage');
      },
    },
  );
  const control = (kind: ControlKind) => (raw: unknown) => {
    applyControl(state, kind, raw, Date.now());
    if (state.status === 'paused' && stage === 'Idle') stage = 'Paused';
    if (state.status === 'active' && stage === 'Paused') stage = 'Idle';
    publish();
    // Pause, resume and close show in the Web UI's filters at once, not after the next input.
    if (patched('control-search-attributes')) searchAttributes(stage);
  };
  setHandler(approvalSignal, control('approval'), { description: DESCRIPTIONS.approval });
  setHandler(toolResultSignal, control('toolResult'), { description: DESCRIPTIONS.toolResult });
  setHandler(notificationSignal, control('notification'), { description: DESCRIPTIONS.notification });
  setHandler(commandSignal, control('command'), { description: DESCRIPTIONS.command });

  setHandler(goalsQuery, () => state.goals, { description: DESCRIPTIONS.goals });
  setHandler(capabilitiesQuery, () => state.capabilities, { description: DESCRIPTIONS.capabilities });
  setHandler(decisionsQuery, (options) => lastN(state.decisions, options?.limit), {
    description: DESCRIPTIONS.decisions,
  });
  setHandler(historyQuery, (options) => lastN(state.history, options?.limit), { description: DESCRIPTIONS.history });
  setHandler(outOfScopeQuery, () => state.outOfScope, { description: DESCRIPTIONS.outOfScope });
  setHandler(snapshotQuery, () => buildView(state, stage), { description: DESCRIPTIONS.snapshot });

  const activities = makeActivities(state.settings);

  const shouldContinueAsNew = () =>
    workflowInfo().continueAsNewSuggested || inputsThisRun >= state.settings.continueAsNewAfter;
  const hasWork = () => state.queue.length > 0 && state.status !== 'paused';
  const finished = () => state.status === 'closed' && state.queue.length === 0;

  publish();
  searchAttributes(stage);

  for (;;) {
    await condition(() => hasWork() || finished() || shouldContinueAsNew());
    if (finished()) break;
    if (shouldContinueAsNew()) {
      // Between inputs only, and after every handler has finished, so nothing in flight is lost.
      await condition(allHandlersFinished);
      enforceBudget(state);
      await continueAsNew<typeof session>({ ...startOf(state), carried: state });
    }
    const next = bindNext(state, Date.now());
    if (!next) continue;
    inputsThisRun++;
    searchAttributes(STAGES[0]);
    await processInput(next);
    publish(state.status === 'paused' ? 'Paused' : 'Idle');
    if (state.queue.length === 0 || state.status === 'paused') searchAttributes(stage);
  }

  publish('Closed');
  searchAttributes('Closed');
  await condition(allHandlersFinished);
  return { sessionId: state.sessionId, status: state.status, lastSeq: state.boundSeq, runs: state.run };

  /** One bound input through the task-control loop, then the business-agent turn. */
  async function processInput(input: BoundInput): Promise<void> {
    const record: DecisionRecord = {
      seq: input.seq,
      messageId: input.messageId,
      decision: 'uncertain',
      scores: null,
      bands: null,
      degraded: null,
      diff: null,
      dropped: [],
      fallbacks: [],
      stages: [],
      agent: null,
      route: null,
    };
    const firstTask = state.goals.session === null || state.counts.bound === 1;
    const outcome = await understand(input, record, firstTask);
    record.decision = outcome.decision;
    record.bands = outcome.bands;
    record.degraded = outcome.degraded;

    const previousPhase = state.phases.at(-1);
    if (outcome.decision === 'initialize') {
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
      if (patched('route-out-of-scope')) await routeOutOfScope(input, record);
    }
    input.phaseIndex = state.phases.at(-1)?.index ?? 0;
    publish();

    if (preparesEnvironment(outcome.decision)) {
      await prepareEnvironment(input, record, outcome.decision === 'initialize' ? 'init' : 'reconcile');
    }
    if (outcome.decision === 'new-phase' && previousPhase) await compactPhase(previousPhase.index, record);

    input.decision = outcome.decision;
    await agentTurn(input, record);
    state.decisions.push(record);
    keepLast(state.decisions, state.settings.keepDecisions);
    state.counts.byDecision[record.decision] = (state.counts.byDecision[record.decision] ?? 0) + 1;
    enforceBudget(state);
  }

  /** Stage 1: how does this input relate to the current phase and the Session? */
  async function understand(input: BoundInput, record: DecisionRecord, firstTask: boolean): Promise<DecisionOutcome> {
    const thresholds = state.settings.thresholds;
    const { session: sessionGoal, phase: phaseGoal } = state.goals;
    if (firstTask || !sessionGoal || !phaseGoal) {
      await runStage(record, STAGES[0], () => Promise.resolve('first task input: goals come from it'));
      return decide({ firstTask: true, thresholds });
    }
    const result = await runStage(record, STAGES[0], async () =>
      expectShape(
        ScoresShape,
        await activities.relevance({
          message: { text: input.text, resources: input.resources },
          phaseGoal: phaseGoal.text,
          sessionGoal: sessionGoal.text,
        }),
      ),
    );
    if (!result.ok) return decide({ firstTask: false, relevance: { ok: false, reason: result.reason }, thresholds });
    const { phaseRelevance, sessionRelevance } = result.value;
    if (Number.isFinite(phaseRelevance) && Number.isFinite(sessionRelevance)) {
      record.scores = { phase: phaseRelevance, session: sessionRelevance };
    }
    const outcome = decide({ firstTask: false, relevance: { ok: true, scores: result.value }, thresholds });
    const last = record.stages.at(-1);
    if (outcome.degraded && last) last.outcome = `fallback: ${outcome.degraded}`;
    return outcome;
  }

  /** Extract terms -> recall candidates -> orchestrate -> apply the difference. */
  async function prepareEnvironment(input: BoundInput, record: DecisionRecord, mode: 'init' | 'reconcile') {
    const task: AlignedTask = {
      sessionGoal: state.goals.session?.text ?? input.text,
      phaseGoal: state.goals.phase?.text ?? input.text,
      message: input.text,
      resources: input.resources,
    };
    const extracted = await runStage(record, STAGES[1], async () =>
      expectShape(TermsShape, await activities.extractTerms({ task })),
    );
    const terms = extracted.ok ? extracted.value.terms.filter((t) => t.trim()) : [];
    if (!extracted.ok) record.fallbacks.push(`extraction: ${extracted.reason}; recall used the raw task text`);

    const rawText = task.phaseGoal === input.text ? input.text : `${task.phaseGoal}\n${input.text}`;
    const recalled = await runStage(record, STAGES[2], async () => {
      const parsed = CandidatesSchema.safeParse(
        await activities.recall({
          sessionId: state.sessionId,
          terms,
          text: rawText,
          // User-scoped memories belong to whoever sent the input that set this task.
          ...(input.from?.kind === 'user' && input.from.id ? { userId: input.from.id } : {}),
        }),
      );
      if (!parsed.success) throw ApplicationFailure.nonRetryable(describeIssues(parsed.error), 'InvalidRecallResult');
      return parsed.data;
    });
    const candidates: Candidates = recalled.ok ? recalled.value : emptyCandidates();
    if (!recalled.ok) record.fallbacks.push(`recall: ${recalled.reason}; no new candidates`);

    const current = state.capabilities;
    const selected = await runStage(record, STAGES[3], async () => {
      const answer = await activities.orchestrate({
        task,
        mode,
        current: { skills: current.skills, toolsets: current.toolsets, memories: current.memories },
        candidates,
      });
      const parsed = SelectionSchema.safeParse(answer);
      if (!parsed.success) throw ApplicationFailure.nonRetryable(describeIssues(parsed.error), 'ModelInvalidOutput');
      return completeSelection(parsed.data, current);
    });
    if (!selected.ok) {
      record.fallbacks.push(`orchestration: ${selected.reason}; capabilities kept`);
      skipStage(record, STAGES[4], 'orchestration failed; current capabilities kept');
      return;
    }
    await runStage(record, STAGES[4], () => {
      const applied = applySelection(current, candidates, selected.value);
      state.capabilities = applied.next;
      record.diff = applied.diff;
      record.dropped = applied.dropped;
      return Promise.resolve(applied);
    });
  }

  /** Offers the finished phase to the compaction role; failure leaves it uncompacted. */
  async function compactPhase(phaseIndex: number, record: DecisionRecord) {
    const phase = state.phases.find((p) => p.index === phaseIndex);
    if (!phase) return;
    const inputs = state.history.filter((h) => h.phaseIndex === phaseIndex).map((h) => h.text);
    const result = await runStage(record, COMPACTION_STAGE, () =>
      activities.compact({ phaseGoal: phase.goal.text, inputs }),
    );
    if (result.ok && typeof result.value.summary === 'string') {
      phase.compaction = 'compacted';
      phase.summary = result.value.summary.slice(0, LIMITS.replyChars);
    } else {
      phase.compaction = 'failed';
      record.fallbacks.push(`compaction: ${result.ok ? 'no summary' : result.reason}; phase kept uncompacted`);
    }
  }

  async function agentTurn(input: BoundInput, record: DecisionRecord) {
    const startedAt = Date.now();
    const done = (outcome: 'replied' | 'skipped' | 'failed', reason: string | null) => {
      record.agent = { outcome, reason, startedAt, endedAt: Date.now() };
    };
    if (!state.settings.agentTurn) return done('skipped', 'agent turn disabled in session settings');
    if (record.decision === 'out-of-scope') {
      const where = record.route?.to ? `routed to ${record.route.to}` : 'preserved for routing';
      return done('skipped', `out of scope: ${where}`);
    }
    const { session: sessionGoal, phase: phaseGoal } = state.goals;
    if (!sessionGoal || !phaseGoal) return done('skipped', 'session has no goals');
    publish(AGENT_STAGE);
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
      if ('reply' in result && typeof result.reply === 'string') {
        input.reply = result.reply.slice(0, LIMITS.replyChars);
        done('replied', null);
      } else {
        done('skipped', 'skipped' in result ? String(result.skipped) : 'no reply');
      }
    } catch (err) {
      if (isCancellation(err)) throw err;
      done('failed', clipBytes(describeFailure(err), BUDGET.reason));
    }
  }

  /**
   * Hands an out-of-scope request to the Session responsible for it: a sub-session forwards it to
   * its parent; a top-level Session picks the sub-session whose goal fits best (relevance role,
   * same bands), or creates a new one. The message travels verbatim with its original messageId,
   * so a re-delivery is a duplicate on the receiving side.
   */
  async function routeOutOfScope(input: BoundInput, record: DecisionRecord): Promise<void> {
    const request = state.outOfScope.find((r) => r.seq === input.seq);
    if (!request) return;
    const cameFrom = input.from?.kind === 'session' ? input.from.id : undefined;
    const payload = {
      messageId: input.messageId,
      text: input.text,
      resources: input.resources,
      from: { kind: 'session' as const, id: state.sessionId },
      routed: { fromSessionId: state.sessionId, reason: 'out-of-scope' as const },
    };
    const settle = (to: string | null, via: NonNullable<DecisionRecord['route']>['via'], note: string, ok = true) => {
      record.route = { to, via, note };
      request.status = ok ? (to ? 'routed' : 'pending') : 'failed';
      request.routedTo = to;
      request.note = note;
    };
    const routed = await runStage(record, ROUTING_STAGE, async () => {
      if (state.parentSessionId) {
        if (cameFrom === state.parentSessionId) {
          return settle(null, 'none', 'handed over by the parent Session; not routed back');
        }
        await getExternalWorkflowHandle(workflowIdFor(state.parentSessionId)).signal(messageSignal, payload);
        return settle(state.parentSessionId, 'parent', 'forwarded to the parent Session');
      }
      let best: { child: ChildSession; score: number } | undefined;
      for (const child of state.children.filter((c) => c.sessionId !== cameFrom).slice(-LIMITS.routingCandidates)) {
        try {
          const scores = await activities.routeRelevance({
            message: { text: input.text, resources: input.resources },
            phaseGoal: child.goal,
            sessionGoal: child.goal,
          });
          const fits = band(scores.sessionRelevance, state.settings.thresholds) === 'high';
          if (fits && (!best || scores.sessionRelevance > best.score)) best = { child, score: scores.sessionRelevance };
        } catch (err) {
          if (isCancellation(err)) throw err;
          record.fallbacks.push(`routing: scoring ${child.sessionId} failed: ${describeFailure(err)}`);
        }
      }
      if (best) {
        try {
          await getExternalWorkflowHandle(workflowIdFor(best.child.sessionId)).signal(messageSignal, payload);
          best.child.lastRoutedSeq = input.seq;
          best.child.routed++;
          return settle(
            best.child.sessionId,
            'existing-sub',
            `handed to sub-session (session relevance ${best.score.toFixed(2)})`,
          );
        } catch (err) {
          if (isCancellation(err)) throw err;
          // A sub-session that has finished can take nothing more: forget it and start a new one.
          const gone = best.child.sessionId;
          state.children = state.children.filter((c) => c.sessionId !== gone);
          record.fallbacks.push(
            clipBytes(
              `routing: ${gone} did not take the request (${describeFailure(err)}); created a new sub-session`,
              BUDGET.reason,
            ),
          );
        }
      }
      const created = expectShape(
        CreatedShape,
        await activities.createSubSession({
          parentSessionId: state.sessionId,
          taskQueue: workflowInfo().taskQueue,
          profile: 'sub-session',
          settings: state.settings,
          message: { messageId: input.messageId, text: input.text, resources: input.resources },
          requestKey: dedupeKey(input),
        }),
      );
      state.children.push({
        sessionId: created.sessionId,
        goal: input.text,
        createdAtSeq: input.seq,
        lastRoutedSeq: input.seq,
        routed: 1,
      });
      keepLast(state.children, LIMITS.children);
      return settle(created.sessionId, 'new-sub', 'created a sub-session for the request');
    });
    if (!routed.ok) settle(null, 'none', `routing failed: ${routed.reason}`, false);
  }

  /** Runs one stage, timing it and turning any failure into a recorded fallback. */
  async function runStage<T>(
    record: DecisionRecord,
    name: SessionStage,
    fn: () => Promise<T>,
  ): Promise<{ ok: true; value: T } | { ok: false; reason: string }> {
    publish(name);
    const startedAt = Date.now();
    try {
      const value = await fn();
      record.stages.push({ stage: name, startedAt, endedAt: Date.now(), outcome: 'ok' });
      return { ok: true, value };
    } catch (err) {
      if (isCancellation(err)) throw err;
      const reason = clipBytes(describeFailure(err), BUDGET.reason);
      record.stages.push({ stage: name, startedAt, endedAt: Date.now(), outcome: `fallback: ${reason}` });
      return { ok: false, reason };
    }
  }

  function skipStage(record: DecisionRecord, name: SessionStage, why: string) {
    const now = Date.now();
    record.stages.push({ stage: name, startedAt: now, endedAt: now, outcome: `skipped: ${why}` });
  }
}

/** Parses the workflow argument. Bad start input fails the workflow with a clear, non-retryable error. */
function enter(input: SessionInput): SessionState {
  if (!input || typeof input !== 'object') {
    throw ApplicationFailure.nonRetryable('start argument must be an object', 'InvalidStartArgument');
  }
  const { carried, ...start } = input;
  if (carried !== undefined) {
    const restored = restoreState(carried);
    if (!restored.ok) {
      throw ApplicationFailure.nonRetryable(`carried state is invalid: ${restored.reason}`, 'InvalidCarriedState');
    }
    restored.state.run++;
    return restored.state;
  }
  const parsed = SessionStart.safeParse(start);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(
      `invalid start argument: ${describeIssues(parsed.error)}`,
      'InvalidStartArgument',
    );
  }
  const expectedId = `session:${parsed.data.sessionId}`;
  if (workflowInfo().workflowId !== expectedId) {
    throw ApplicationFailure.nonRetryable(
      `workflow id must be ${expectedId} for sessionId ${parsed.data.sessionId}`,
      'InvalidStartArgument',
    );
  }
  return initialState(parsed.data);
}

/** The start argument a continued run is given (its state rides along in `carried`). */
function startOf(state: SessionState): SessionStart {
  return {
    sessionId: state.sessionId,
    ...(state.parentSessionId ? { parentSessionId: state.parentSessionId } : {}),
    profile: state.profile,
  };
}

function lastN<T>(list: T[], limit: number | undefined): T[] {
  const n = typeof limit === 'number' && limit > 0 ? Math.floor(limit) : list.length;
  return list.slice(-n);
}

function makeActivities(settings: SessionState['settings']) {
  const retry: ActivityOptions['retry'] = {
    maximumAttempts: settings.modelAttempts,
    initialInterval: '250ms',
    backoffCoefficient: 2,
    maximumInterval: '2s',
    nonRetryableErrorTypes: NON_RETRYABLE,
  };
  // scheduleToClose bounds the whole call, retries and server-requested delays (retry-after) included,
  // so a rate-limited or dead model degrades an input instead of stalling the Session.
  const helper = (summary: string, timeoutMs = settings.modelTimeoutMs) =>
    proxyActivities<SessionActivities>({
      startToCloseTimeout: timeoutMs,
      scheduleToCloseTimeout: timeoutMs * settings.modelAttempts + 15_000,
      retry,
      summary,
    });
  // Recall is a fast, in-process index look-up: a local activity skips a server round trip.
  const recall = proxyLocalActivities<SessionActivities>({
    startToCloseTimeout: '10s',
    retry: { maximumAttempts: 2, initialInterval: '100ms' },
    summary: STAGES[2],
  });
  return {
    relevance: helper(STAGES[0]).relevance,
    extractTerms: helper(STAGES[1]).extractTerms,
    recall: recall.recall,
    orchestrate: helper(STAGES[3]).orchestrate,
    compact: helper(COMPACTION_STAGE).compact,
    agentTurn: helper(AGENT_STAGE, settings.agentTimeoutMs).agentTurn,
    routeRelevance: helper(ROUTING_STAGE).relevance,
    // Starting a Session is a short server call; its id is deterministic, so retries are safe.
    createSubSession: proxyActivities<SessionActivities>({
      startToCloseTimeout: '10s',
      retry: { maximumAttempts: 5, initialInterval: '500ms', maximumInterval: '5s' },
      summary: 'Creating a sub-session',
    }).createSubSession,
  };
}

/** Upserts the typed search attributes, skipping values that have not changed (each upsert is a history event). */
function makeSearchAttributePublisher(state: SessionState) {
  let last = '';
  return (stage: SessionStage): void => {
    // Temporal refuses Keyword/Text values over 2 KB (and terminates the run): cut by bytes.
    const goal = clipBytes(state.goals.session?.text ?? '', 1_500);
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

/** One line saying why an activity failed, for decision records. */
export function describeFailure(err: unknown): string {
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    const retry = err.retryState ? ` [${String(err.retryState)}]` : '';
    if (cause instanceof ApplicationFailure) return `${cause.type ?? 'Error'}: ${cause.message}${retry}`;
    if (cause instanceof TimeoutFailure) return `timeout (${String(cause.timeoutType)})${retry}`;
    return `${cause?.message ?? err.message}${retry}`;
  }
  if (err instanceof ApplicationFailure) return `${err.type ?? 'Error'}: ${err.message}`;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
