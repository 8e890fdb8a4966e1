/**
 * The Session workflow: one durable workflow per agent Session. This file holds the message
 * handlers, the main loop and continue-as-new; each input's processing is in process-input.ts, its
 * stage in visibility.ts, and every decision and state transition in pure modules.
 */
import { FAILURE } from '../contract/failures.js';
import {
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  CONTROL_SIGNAL_DEFINITIONS,
  DESCRIPTIONS,
  capabilitiesQuery,
  decisionsQuery,
  eventsQuery,
  goalsQuery,
  historyQuery,
  messageSignal,
  outOfScopeQuery,
  resultUpdate,
  snapshotQuery,
  subSessionReplyUpdate,
  submitUpdate,
  approveUpdate,
  type SessionInput,
  type SessionResult,
} from '../contract/api.js';
import { askWorkerPolicy, makeActivities } from './activity-proxies.js';
import { makeMeter } from './accounting.js';
import { applyCaps } from './setting-caps.js';
import { capCarriedState } from './carried.js';
import { CONTROL_KINDS, CONTROL_SIGNALS, controlIdOf, type ControlKind } from '../contract/control-signals.js';
import { messageSigningPayload, unsigned } from '../contract/control-signature.js';
import { DEFAULT_WORKER_POLICY, type WorkerPolicy } from '../contract/worker-policy.js';
import { refusalOfSigned, refuseControl } from './signed-control.js';
import { applyControl } from './commands.js';
import { workflowIdFor } from '../contract/ids.js';
import { bindNext, intake, recordRejection, refusal } from './intake.js';
import { initialState, restoreState } from './state.js';
import { canIdleClose, closeIdle, idleTimeoutOf } from './lifecycle.js';
import { makeLookahead } from './lookahead.js';
import { makeSpeculation } from './speculation.js';
import { ApprovalInput, SessionStart } from '../contract/messages.js';
import type { SessionContext } from './session-context.js';
import { STAGE, type BoundInput, type SessionStage, type SessionState, type StageRecord } from '../contract/state.js';
import { emit, eventsPage } from './events.js';
import { describeIssues } from '../contract/text.js';
import { runAgentTurn } from './agent-loop.js';
import { applyToTurn, awaitResult } from './approvals.js';
import { carriesArguments, editRefusal } from './approval-edits.js';
import { ResultRequest } from '../contract/queries.js';
import { processInput } from './process-input.js';
import { answerParent, applySubSessionReply, replyRefusal } from './sub-sessions.js';
import { buildView } from './view.js';
import { makeStagePublisher } from './visibility.js';
import { registerToolResultUpdate } from './tool-result-update.js';

/** Workflow type `session`. */
export async function session(input: SessionInput): Promise<SessionResult> {
  const state = enter(input);
  const fresh = input.carried === undefined;
  let inputsThisRun = 0;

  // Sessions started before the stage attribute went coarse keep upserting it per input on replay.
  const coarseStage = patched('coarse-stage-attribute');
  // Sessions started before approval ids existed keep answering approvals by the model's call id.
  const boundApprovals = patched('approval-ids');
  const stage = makeStagePublisher(state, coarseStage);
  // Sessions started before the idle timeout existed never arm its timer on replay.
  const idleOn = patched('idle-timeout');
  // Runs recorded before worker policies took their settings as the start gave them.
  const policyOn = patched('worker-policy');
  // Runs recorded before it decided a `submit` at once, even behind a control item still waiting for
  // the worker policy (a close sent before it then did not refuse it). Asked before the handlers,
  // which may run for buffered messages as soon as they are set.
  const submitAfterControl = patched('submit-after-control');
  // Workflow time of the last accepted input or control signal, or of the last finished input.
  let lastActivity = Date.now();
  // The worker's policy, once this run has asked for it (null before, and always on old histories).
  let policy: WorkerPolicy | null = null;
  // Under a worker policy, control items wait for it (and for their signature's check) one at a
  // time, in arrival order: the chain keeps ordering while a verification is in flight.
  let controlTail: Promise<unknown> = Promise.resolve();
  // Control items waiting in that chain.
  let pendingControl = 0;

  // All handlers are registered before the first await, so no early signal or update is dropped.
  setHandler(
    messageSignal,
    (raw) => {
      if (intake(state, raw, 'signal', Date.now()).kind === 'accepted') lastActivity = Date.now();
      stage.show();
    },
    { description: DESCRIPTIONS.message },
  );
  const submitNow = (raw: unknown) => {
    const result = intake(state, raw, 'update', Date.now());
    if (result.kind === 'accepted') lastActivity = Date.now();
    stage.show();
    if (result.kind === 'rejected') throw ApplicationFailure.nonRetryable(result.reason, FAILURE.InvalidMessage);
    return { seq: result.seq, duplicate: result.kind === 'duplicate' };
  };
  const registerSubmit = () =>
    setHandler(
      submitUpdate,
      // A control item that came first and still waits (for the worker policy in a run's first task,
      // or a signature check) is applied first: a close refuses the submit that follows it.
      (raw) =>
        submitAfterControl && pendingControl > 0
          ? controlTail.then(
              () => submitNow(raw),
              () => submitNow(raw),
            )
          : submitNow(raw),
      {
        description: DESCRIPTIONS.submit,
        validator: (raw) => {
          const reason = refusal(state, raw);
          if (reason !== null) throw ApplicationFailure.nonRetryable(reason, FAILURE.InvalidMessage);
        },
      },
    );
  // A run's first task hands buffered signals and updates to their handlers as each is set, so a
  // submit whose handler is set before the control handlers would be decided before a close sent
  // ahead of it. Runs recorded before `submit-after-control` set it here.
  if (!submitAfterControl) registerSubmit();
  // The activity call the `interrupt` command cancels: the running model step or tool call.
  let running: CancellationScope | null = null;
  const cancellable = async <T>(fn: () => Promise<T>): Promise<T> => {
    const scope = new CancellationScope();
    running = scope;
    try {
      return await scope.run(fn);
    } finally {
      if (running === scope) running = null;
    }
  };

  /** Applies a control item now; returns why an approval or tool result answered nothing, else null. */
  const applyNow = (kind: ControlKind, raw: unknown): string | null => {
    const result = applyControl(state, kind, raw, Date.now());
    if (result.kind === 'applied') lastActivity = Date.now();
    const why = applyToTurn(state, kind, result, Date.now(), boundApprovals);
    if (result.kind === 'applied' && result.interruptTurn) running?.cancel();
    stage.followStatus();
    // Pause, resume and close show in the Web UI's filters at once, not after the next input.
    if (patched('control-search-attributes')) stage.publish();
    return why;
  };
  const verifiedThenApplied = async (kind: ControlKind, raw: unknown, edit = false): Promise<string | null> => {
    // Only an edit reaches here in a run that predates worker policies (it then has none to wait for).
    const known = policyOn ? await policyKnown() : DEFAULT_WORKER_POLICY;
    if (known.signedControl && kind !== 'notification') {
      const parsed = CONTROL_SIGNALS[kind].schema.safeParse(raw);
      // An invalid payload is refused by applyControl with its schema's reason, as without signing.
      if (parsed.success) {
        const payload = parsed.data as Record<string, unknown>;
        const why = await refusalOfSigned(
          known,
          kind,
          state.sessionId,
          unsigned(payload),
          payload.signature,
          Date.now(),
        );
        if (why !== null) {
          refuseControl(state, kind, controlIdOf(kind, payload), why, Date.now());
          stage.show();
          return why;
        }
      }
    }
    if (edit) {
      const why = await editRefusal(state, raw, boundApprovals);
      if (why !== null) {
        refuseControl(state, kind, controlIdOf(kind, raw as Record<string, unknown>), why, Date.now(), 'invalid');
        stage.show();
        return why;
      }
    }
    return applyNow(kind, raw);
  };
  const policyKnown = async (): Promise<WorkerPolicy> => {
    await condition(() => policy !== null);
    return policy ?? DEFAULT_WORKER_POLICY;
  };
  const queued = (kind: ControlKind, raw: unknown, edit = false): Promise<string | null> => {
    pendingControl++;
    const mine = controlTail
      .then(() => verifiedThenApplied(kind, raw, edit))
      .finally(() => {
        pendingControl--;
      });
    controlTail = mine;
    return mine;
  };
  /** Delivers a control item; resolves to why it answered nothing (approvals, tool results), else null. */
  const control =
    (kind: ControlKind) =>
    (raw: unknown): string | null | Promise<string | null> => {
      // An approval that edits the arguments waits for the worker's check of the edit, in order with the rest.
      if (kind === 'approval' && carriesArguments(raw)) {
        if (patched('approval-edits')) return queued(kind, raw, true);
        // Runs recorded before edits refused such an approval by its schema; a replay refuses it too.
        const why = 'this Session run predates approval edits; approve without arguments';
        refuseControl(state, kind, controlIdOf(kind, raw as Record<string, unknown>), why, Date.now(), 'invalid');
        return why;
      }
      if (!policyOn) return applyNow(kind, raw);
      // Nothing to verify and nothing queued ahead of it: applied at once, in order with the task
      // inputs of the same activation (a pause, then messages, holds them; a close refuses what follows).
      if (pendingControl === 0 && policy !== null && (!policy.signedControl || kind === 'notification')) {
        return applyNow(kind, raw);
      }
      return queued(kind, raw);
    };
  for (const kind of CONTROL_KINDS) {
    const deliver = control(kind);
    setHandler(
      CONTROL_SIGNAL_DEFINITIONS[kind],
      (raw) => {
        const outcome = deliver(raw);
        return outcome instanceof Promise ? outcome.then(() => undefined) : undefined;
      },
      { description: DESCRIPTIONS[kind] },
    );
  }
  if (submitAfterControl) registerSubmit();
  // The approval as an update: the same path as the signal, and the approver learns at once whether
  // it applied, or why not (a refused edit, a bad signature, no such waiting call).
  const approve = control('approval');
  setHandler(
    approveUpdate,
    async (raw) => {
      const why = await approve(raw);
      if (why !== null) throw ApplicationFailure.nonRetryable(why, FAILURE.ApprovalRefused);
      const approval = ApprovalInput.parse(raw);
      return { approvalId: approval.approvalId, approved: approval.approved };
    },
    {
      description: DESCRIPTIONS.approve,
      validator: (raw) => {
        const parsed = ApprovalInput.safeParse(raw);
        if (!parsed.success) {
          throw ApplicationFailure.nonRetryable(
            `invalid approval: ${describeIssues(parsed.error)}`,
            FAILURE.InvalidRequest,
          );
        }
      },
    },
  );
  registerToolResultUpdate(control('toolResult'));

  setHandler(goalsQuery, () => state.goals, { description: DESCRIPTIONS.goals });
  setHandler(capabilitiesQuery, () => state.capabilities, { description: DESCRIPTIONS.capabilities });
  setHandler(decisionsQuery, (options) => lastN(state.decisions, options?.limit), {
    description: DESCRIPTIONS.decisions,
  });
  setHandler(historyQuery, (options) => lastN(state.history, options?.limit), { description: DESCRIPTIONS.history });
  setHandler(outOfScopeQuery, () => state.outOfScope, { description: DESCRIPTIONS.outOfScope });
  setHandler(snapshotQuery, () => buildView(state, stage.current), { description: DESCRIPTIONS.snapshot });
  setHandler(eventsQuery, (request) => eventsPage(state, request), { description: DESCRIPTIONS.events });

  setHandler(
    subSessionReplyUpdate,
    (raw) => {
      const result = applySubSessionReply(state, raw, Date.now());
      if (result.accepted) lastActivity = Date.now();
      return result;
    },
    {
      description: DESCRIPTIONS.subSessionReply,
      validator: (raw) => {
        const reason = replyRefusal(raw);
        if (reason !== null) throw ApplicationFailure.nonRetryable(reason, FAILURE.InvalidRequest);
      },
    },
  );

  setHandler(resultUpdate, (request) => awaitResult(state, request), {
    description: DESCRIPTIONS.result,
    validator: (request) => {
      const parsed = ResultRequest.safeParse(request);
      if (!parsed.success) throw ApplicationFailure.nonRetryable(describeIssues(parsed.error), FAILURE.InvalidRequest);
    },
  });

  // Server-side limits win: the worker's caps bound the settings before anything is scheduled with them.
  // Asked after the handlers (which may already have run for a buffered first input) and before the
  // worker-policy await, so each marker sits in the same place in every history: the places these
  // patches had before worker policies existed.
  // Sessions started before budgets existed send none with their model calls (docs/patches.md).
  const budgetsOn = patched('model-budgets');
  // Sessions started before judging ahead existed replay one input at a time.
  const lookaheadOn = patched('relevance-lookahead');
  // Asked here, before any local activity, although they matter only later: a patch first asked in
  // the continuation of a local activity's result (the worker policy's at a run's start, a signed
  // message's check) is met in another workflow task on replay than it was in the run, and the
  // replay fails (docs/patches.md, "Where a patch is asked").
  const patches = {
    speculativeAgentStep: patched('speculative-agent-step'),
    combinedUnderstanding: patched('combined-understanding'),
    compactionBeside: patched('compaction-beside'),
  };
  let asked: WorkerPolicy | null = null;
  if (policyOn) {
    asked = await askWorkerPolicy();
    const capped = applyCaps(state, asked, {
      ownQueue: workflowInfo().taskQueue,
      fresh,
      now: Date.now(),
    });
    if (capped.kind === 'refused') throw ApplicationFailure.nonRetryable(capped.reason, FAILURE.SettingNotAllowed);
  }
  const idleMs = idleOn ? idleTimeoutOf(state) : null;

  const shouldContinueAsNew = () =>
    workflowInfo().continueAsNewSuggested || inputsThisRun >= state.settings.continueAsNewAfter;
  const meter = makeMeter(state, budgetsOn);
  const activities = makeActivities(state.settings, meter);
  const ctx: SessionContext = {
    state,
    activities,
    lookahead: lookaheadOn ? makeLookahead(state, activities.relevance) : null,
    speculation: makeSpeculation(state, activities, meter, asked, patches.speculativeAgentStep),
    patches,
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
  // No new input is bound while an agent turn is in progress: it is judged after the turn.
  const hasWork = () => state.queue.length > 0 && state.status !== 'paused' && state.turn === null;
  const finished = () => state.status === 'closed' && state.queue.length === 0 && state.turn === null;
  let parked = false;

  stage.show();
  stage.publish();
  // Control items that arrived meanwhile wait for the policy; it is set only now, after this run's
  // start-up commands, so they apply after them in the first execution and in every replay alike.
  policy = asked;

  const wake = () => hasWork() || finished() || shouldContinueAsNew() || (state.turn !== null && !parked);
  for (;;) {
    if (idleMs === null || !canIdleClose(state)) {
      await condition(wake);
    } else if (!(await condition(wake, Math.max(1, lastActivity + idleMs - Date.now())))) {
      // The timer fired with nothing to do. A control signal may have moved the clock meanwhile;
      // then this waits again for the rest of the new timeout.
      if (canIdleClose(state) && Date.now() - lastActivity >= idleMs) {
        closeIdle(state, Date.now(), idleMs);
        stage.show();
      }
      continue;
    }
    if (finished()) break;
    if (shouldContinueAsNew()) {
      // Between inputs only, and after every handler has finished, so nothing in flight is lost.
      await condition(allHandlersFinished);
      capCarriedState(state);
      await continueAsNew<typeof session>({ ...startOf(state), carried: state });
    }
    if (state.turn !== null) {
      // A turn carried over from the previous run (it was waiting when this run began).
      const seq = state.turn.seq;
      parked = (await runAgentTurn(ctx)) === 'parked';
      if (!parked) await answerParent(ctx, seq);
      lastActivity = Date.now();
      stage.rest();
      continue;
    }
    const next = bindNext(state, Date.now());
    if (!next) continue;
    // The signature has done its work once the input is bound; history keeps no MACs.
    const signature = next.signature;
    delete next.signature;
    if (policy?.signedControl) await trustIdentity(policy, state, next, signature);
    inputsThisRun++;
    stage.publish(STAGE.understand);
    parked = (await processInput(ctx, next)) === 'parked';
    if (!parked) await answerParent(ctx, next.seq);
    lastActivity = Date.now();
    if (parked) continue;
    stage.rest();
    if (state.queue.length === 0 || state.status === 'paused') stage.publish();
  }

  stage.show(STAGE.closed);
  stage.publish();
  const closedBy = [...state.controlEvents]
    .reverse()
    .find((e) => e.kind === 'command' && e.summary.startsWith('close'));
  emit(state, { kind: 'session.closed', reason: closedBy?.summary ?? 'closed' });
  await condition(allHandlersFinished);
  return { sessionId: state.sessionId, status: state.status, lastSeq: state.boundSeq, runs: state.run };
}

/**
 * Under signed control a user identity in `from` is trusted only with a valid signature over the
 * message; otherwise the input is still processed, but as from an anonymous user (user-scoped
 * memory off for it), and the dropped identity is a recorded rejection.
 */
async function trustIdentity(
  policy: WorkerPolicy,
  state: SessionState,
  input: BoundInput,
  signature: unknown,
): Promise<void> {
  const claimed = input.from?.kind === 'user' ? input.from.id : undefined;
  if (claimed === undefined) return;
  const payload = messageSigningPayload(input);
  const why = await refusalOfSigned(policy, 'message', state.sessionId, payload, signature, Date.now());
  if (why === null) return;
  input.from = { kind: 'user' };
  const reason = `identity "${claimed}" dropped: ${why}`;
  recordRejection(state, { at: Date.now(), via: 'message', messageId: input.messageId, reason }, 'unauthenticated');
}

/** Parses the workflow argument. Bad start input fails the workflow with a clear, non-retryable error. */
function enter(input: SessionInput): SessionState {
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
