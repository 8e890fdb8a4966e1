/**
 * The Session workflow: one durable workflow per agent Session. This file holds the message
 * handlers, the main loop and continue-as-new, like samples-typescript's safe-message-handlers: the
 * handlers hand each item to the module that owns it (control/ for control items, ledger/intake.ts
 * for task inputs), and one bound input at a time goes through process-input.ts.
 */
import { FAILURE } from '../contract/failures.js';
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
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
  submitUpdate,
  type SessionInput,
  type SessionResult,
} from '../contract/api.js';
import { ResultRequest } from '../contract/queries.js';
import { STAGE, type VerifiedClaims } from '../contract/state.js';
import { describeIssues } from '../contract/text.js';
import { routeBufferedSignals } from './control/arrival-order.js';
import { ControlPlane } from './control/control-plane.js';
import { awaitResult } from './control/result.js';
import { registerSubSessionReplies } from './control/sub-session-replies.js';
import { messageIntake, submitAnswer } from './control/while-busy.js';
import { trustIdentity, trustIdentityNow } from './control/signed-control.js';
import { emit, eventsPage } from './ledger/events.js';
import { announceBound, bindNext, refusal } from './ledger/intake.js';
import { ASKED_AFTER_HANDLERS, ASKED_BEFORE_HANDLERS, askAtStart } from './patches.js';
import { processInput, sessionContext } from './process-input.js';
import { CallScopes } from './run/call-scopes.js';
import { capCarriedState } from './run/carried.js';
import { enter, startOf } from './run/enter.js';
import { canIdleClose, closeIdle, idleTimeoutOf } from './run/lifecycle.js';
import { applyCaps } from './run/setting-caps.js';
import { askWorkerPolicy } from './stages/activity-proxies.js';
import { buildView, goalsView, lastN } from './view/view.js';
import { makeStagePublisher } from './view/visibility.js';

/** Workflow type `session`. */
export async function session(input: SessionInput): Promise<SessionResult> {
  const state = enter(input);
  const fresh = input.carried === undefined;
  let inputsThisRun = 0;
  // Asked before the handlers, which may run for buffered messages as soon as they are set (patches.ts).
  const early = askAtStart(ASKED_BEFORE_HANDLERS);
  const stage = makeStagePublisher(state, early['coarse-stage-attribute']);
  // Workflow time of the last accepted input or control item, or of the last finished input.
  let lastActivity = Date.now();
  const touch = () => {
    lastActivity = Date.now();
  };
  const control = new ControlPlane(
    state,
    stage,
    {
      policyOn: early['worker-policy'],
      boundApprovals: early['approval-ids'],
      submitAfterControl: early['submit-after-control'],
      boundControl: early['bound-control'],
      currentPolicy: early['current-control-policy'],
      claimsOnArrival: early['current-control-policy'],
    },
    touch,
  );

  // All handlers are registered before the first await, so no early signal or update is dropped.
  // With `while-busy` a message that arrives during a turn is queued, merged, interrupts or is refused.
  const take = messageIntake(state, { enabled: early['while-busy'], control, stage, touch });
  const takeMessage = (raw: unknown, verified?: VerifiedClaims) => void take(raw, 'signal', verified);
  // With `message-after-control` a message waits, like a submit, behind the control items sent before
  // it (a pause waiting for the worker policy holds it); runs recorded before it take it in at once.
  // `control.input` also checks what the message claims on arrival, in runs that do so.
  const onMessage = early['message-after-control']
    ? (raw: unknown) => control.input(raw, (verified) => takeMessage(raw, verified))
    : (raw: unknown) => takeMessage(raw);
  const registerMessage = () => setHandler(messageSignal, onMessage, { description: DESCRIPTIONS.message });
  // With `arrival-order-signals` every signal buffered before this task reaches its handler in arrival
  // order first (control/arrival-order.ts); older runs hand them over kind by kind, as each is set.
  const endRouting = early['arrival-order-signals']
    ? routeBufferedSignals(new Map([[messageSignal.name, onMessage], ...control.signalHandlers()]))
    : null;
  if (!early['message-after-control']) registerMessage();
  const submitNow = (raw: unknown, verified?: VerifiedClaims) => submitAnswer(take(raw, 'update', verified));
  const registerSubmit = () =>
    setHandler(submitUpdate, (raw) => control.input(raw, (verified) => submitNow(raw, verified)), {
      description: DESCRIPTIONS.submit,
      validator: (raw) => {
        const reason = refusal(state, raw);
        if (reason !== null) throw ApplicationFailure.nonRetryable(reason, FAILURE.InvalidMessage);
      },
    });
  // A submit whose handler is set before the control handlers would be decided before a close sent
  // ahead of it. Runs recorded before `submit-after-control` set it here.
  if (!early['submit-after-control']) registerSubmit();
  // In this order, which decides the order of items buffered in the run's first task (patches.ts).
  control.registerSignals();
  if (early['message-after-control']) registerMessage();
  endRouting?.();
  if (early['submit-after-control']) registerSubmit();
  control.registerUpdates();

  setHandler(goalsQuery, () => goalsView(state), { description: DESCRIPTIONS.goals });
  setHandler(capabilitiesQuery, () => state.capabilities, { description: DESCRIPTIONS.capabilities });
  setHandler(decisionsQuery, (options) => lastN(state.decisions, options?.limit), {
    description: DESCRIPTIONS.decisions,
  });
  setHandler(historyQuery, (options) => lastN(state.history, options?.limit), { description: DESCRIPTIONS.history });
  setHandler(outOfScopeQuery, () => state.outOfScope, { description: DESCRIPTIONS.outOfScope });
  setHandler(snapshotQuery, () => buildView(state, stage.current), { description: DESCRIPTIONS.snapshot });
  setHandler(eventsQuery, (request) => eventsPage(state, request), { description: DESCRIPTIONS.events });

  registerSubSessionReplies(state, control, early, touch);

  setHandler(resultUpdate, (request) => awaitResult(state, request, () => control.settled()), {
    description: DESCRIPTIONS.result,
    validator: (request) => {
      const parsed = ResultRequest.safeParse(request);
      if (!parsed.success) throw ApplicationFailure.nonRetryable(describeIssues(parsed.error), FAILURE.InvalidRequest);
    },
  });

  // Asked after the handlers and before the worker-policy local activity (patches.ts).
  const later = askAtStart(ASKED_AFTER_HANDLERS);
  // Asked in applyNow as well; here first in runs that began with submit-after-control, so their
  // marker never waits for a local activity's continuation (patches.ts, ASKING_RULE).
  if (early['submit-after-control']) patched('control-search-attributes');
  // The inputs this run began with, counted before its first await. A signal that arrives while the
  // worker-policy local activity runs may reach the workflow in the same activation as its result in
  // the first execution, yet after it in a replay (the marker is in the first task): what the first
  // publish below upserts must not depend on which (test/faults/server-kill.fault.ts found it).
  const inputsAtStart = state.counts.bound + state.queue.length;
  // Server-side limits win: the worker's caps bound the settings before anything is scheduled with them.
  const asked = early['worker-policy'] ? await askWorkerPolicy() : null;
  if (asked) {
    const capped = applyCaps(state, asked, { ownQueue: workflowInfo().taskQueue, fresh, now: Date.now() });
    if (capped.kind === 'refused') throw ApplicationFailure.nonRetryable(capped.reason, FAILURE.SettingNotAllowed);
  }
  const idleMs = early['idle-timeout'] ? idleTimeoutOf(state) : null;

  const shouldContinueAsNew = () =>
    workflowInfo().continueAsNewSuggested || inputsThisRun >= state.settings.continueAsNewAfter;
  const ctx = sessionContext(state, stage, later, asked, shouldContinueAsNew, (kind, fn) =>
    control.cancellable(kind, fn),
  );
  // No new input is bound while an agent turn is in progress: it is judged after the turn.
  const hasWork = () => state.queue.length > 0 && state.status !== 'paused' && state.turn === null;
  const finished = () => state.status === 'closed' && state.queue.length === 0 && state.turn === null;
  let parked = false;

  stage.show();
  // With `fewer-actions` a first input bound in this task sets the goal before anything is upserted.
  if (later['fewer-actions']) stage.holdForGoal();
  stage.publish(undefined, inputsAtStart);
  // Control items that arrived meanwhile wait for the policy; it is set only now, after this run's
  // start-up commands, so they apply after them in the first execution and in every replay alike.
  control.policyKnown(asked);

  const wake = () => hasWork() || finished() || shouldContinueAsNew() || (state.turn !== null && !parked);
  // Each wait and each input runs in a call scope, not the root scope: what the root scope's
  // cancellation reaches stays reachable from it until the run ends (run/call-scopes.ts).
  const scopes = new CallScopes();
  for (;;) {
    // Before a wait that blocks: what the hold kept back is upserted now, in this task.
    if (!wake()) stage.flush();
    if (idleMs === null || !canIdleClose(state)) {
      await scopes.run(() => condition(wake));
    } else if (!(await scopes.run(() => condition(wake, Math.max(1, lastActivity + idleMs - Date.now()))))) {
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
      // A turn carried over from the previous run (it was waiting when this run began) resumes.
      parked = (await scopes.run(() => processInput(ctx, null))) === 'parked';
      touch();
      stage.rest();
      continue;
    }
    const next = bindNext(state, Date.now(), { announce: false });
    if (!next) continue;
    // The signature has done its work once the input is bound; history keeps no MACs.
    const signature = next.signature;
    delete next.signature;
    // An input checked on arrival (control.input) carries its verified claims. Otherwise (carried over
    // from a run that checked at bind time) `current-control-policy` asks the worker now; older runs
    // trust their start's policy. `input.bound` then shows what the Session trusts, not what was claimed.
    const unchecked = next.claimsCheckedAt === undefined;
    if (unchecked && early['current-control-policy']) {
      await scopes.run(() => trustIdentityNow(state, next, signature, early['bound-control']));
    } else if (unchecked && asked?.signedControl) {
      await scopes.run(() => trustIdentity(asked, state, next, signature, early['bound-control']));
    }
    announceBound(state, next, next.boundAt);
    inputsThisRun++;
    stage.publish(STAGE.understand);
    parked = (await scopes.run(() => processInput(ctx, next))) === 'parked';
    touch();
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
