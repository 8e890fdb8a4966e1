/**
 * The control plane of a run: every control item (approval, tool result, notification, command)
 * is parsed once where it arrives, then, in arrival order, waits for the worker's policy (in a run's
 * first task), for its signature's check (signed control) and for an approval edit's check, and is
 * applied; a refused item is recorded with its reason. A `submit` that follows a waiting item waits
 * behind it, so a close refuses what follows it. This class sets the control handlers (session.ts
 * says when) and owns the state the ordering needs, as in samples-typescript's safe-message-handlers.
 */
import {
  ApplicationFailure,
  condition,
  currentUpdateInfo,
  patched,
  setHandler,
  type CancellationScope,
} from '@temporalio/workflow';
import { CONTROL_SIGNAL_DEFINITIONS, DESCRIPTIONS, approveUpdate } from '../../contract/api.js';
import { FAILURE } from '../../contract/failures.js';
import { CONTROL_KINDS, controlIdOf, type ControlKind } from '../../contract/control-signals.js';
import { unsigned } from '../../contract/control-signature.js';
import type { ApprovalInput } from '../../contract/messages.js';
import type { SessionState, VerifiedClaims } from '../../contract/state.js';
import type { CallKind } from '../stages/session-context.js';
import { DEFAULT_WORKER_POLICY, type WorkerPolicy } from '../../contract/worker-policy.js';
import type { StagePublisher } from '../view/visibility.js';
import { applyToTurn, carriesArguments, editRefusal } from './approvals.js';
import { applyParsed } from './commands.js';
import { parseControl, refuseControl, type ParsedControl } from '../ledger/control-record.js';
import { carriesClaims, checkNow, refusalOfSigned, verifiedOnArrival } from './signed-control.js';
import { newMessage } from '../ledger/intake.js';
import { CallScopes } from '../run/call-scopes.js';
import { registerToolResultUpdate } from './tool-result-update.js';
import type { SignalHandler } from './arrival-order.js';

/** Patches asked at the run's start that decide how control items travel (docs/patches.md). */
export interface ControlPatches {
  /** `worker-policy`: items wait for the worker's policy and, under signed control, their signature's check. */
  readonly policyOn: boolean;
  /** `approval-ids`: approvals bind to approval ids rather than the model's call ids. */
  readonly boundApprovals: boolean;
  /** `submit-after-control`: a submit waits for the control items sent before it. */
  readonly submitAfterControl: boolean;
  /**
   * `bound-control`: tool results bind to their `resultId` (required under signed control), and
   * sub-session replies wait for the policy and, under signed control, their worker's signature.
   */
  readonly boundControl: boolean;
  /**
   * `current-control-policy`: every item but a notification is judged by the worker's configuration
   * when it is checked (the `checkControl` local activity), not by the policy the run asked at its
   * start; signed items are applied once (the replay window); a message signal waits behind them too.
   */
  readonly currentPolicy: boolean;
  /**
   * What a message claims (identity, route, note) is checked when it arrives, in order with the
   * control items, and queued as verified; before, it was checked when the input was bound, so a
   * hand-over that waited in a busy Session's queue longer than its signature's lifetime lost them.
   */
  readonly claimsOnArrival: boolean;
}

/**
 * Work that runs one item at a time, in arrival order, while earlier items wait (for the policy, a
 * signature's check, an edit's check). A chain of promises, so an item that needs no waiting and
 * finds nothing ahead of it can still be applied at once, in its own handler.
 */
class InOrder {
  private tail: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  /** Whether an item is still waiting or running. */
  get busy(): boolean {
    return this.waiting > 0;
  }

  /**
   * Runs `work` after every item queued before it, whether that one applied or failed (a `submit`
   * that intake refuses fails its update; the items behind it still run).
   */
  run<T>(work: () => Promise<T>): Promise<T> {
    this.waiting++;
    const mine = this.tail.then(work, work).finally(() => {
      this.waiting--;
    });
    this.tail = mine;
    return mine;
  }

  /** Runs `work` once the items queued so far are done, whether they applied or failed. */
  after<T>(work: () => T): Promise<T> {
    return this.tail.then(work, work);
  }
}

/** The ordered control plane of one run. */
export class ControlPlane {
  /** The worker's policy, once this run has asked for it (null before, and always on old histories). */
  private policy: WorkerPolicy | null = null;
  private readonly queue = new InOrder();
  /** The activity call the `interrupt` command cancels (the running model step or tool call), and its kind. */
  private running: { scope: CancellationScope; kind: CallKind } | null = null;
  /** Approvals the `approve` validator parsed, by update id, until their handler takes them. */
  private readonly validated = new Map<string, ParsedControl>();
  /** Whether the worker required signing at the last `checkControl` (runs with `current-control-policy`). */
  private signingNow: boolean | null = null;
  /** Where the calls' scopes are made: not under the root scope, which would keep each one (call-scopes.ts). */
  private readonly scopes = new CallScopes();

  constructor(
    private readonly state: SessionState,
    private readonly stage: StagePublisher,
    private readonly patches: ControlPatches,
    /** Moves the idle clock: an item was applied. */
    private readonly touch: () => void,
  ) {}

  /** The policy this run asked for is known: items waiting for it go on, in arrival order. */
  policyKnown(policy: WorkerPolicy | null): void {
    this.policy = policy;
  }

  /** The worker's policy this run asked for, once it is known (the default in runs without one). */
  policyReady(): Promise<WorkerPolicy> {
    return this.patches.policyOn ? this.policyWaited() : Promise.resolve(DEFAULT_WORKER_POLICY);
  }

  /**
   * Sets the control signals' handlers (approval, tool result, notification, command). Call it with
   * the other handlers, before the workflow's first await; session.ts decides the order.
   */
  registerSignals(): void {
    for (const kind of CONTROL_KINDS) {
      setHandler(CONTROL_SIGNAL_DEFINITIONS[kind], (raw) => this.signal(kind, raw), {
        description: DESCRIPTIONS[kind],
      });
    }
  }

  /** The control signals' handlers by signal name, the same as `registerSignals` sets (arrival-order.ts). */
  signalHandlers(): [string, SignalHandler][] {
    return CONTROL_KINDS.map((kind) => [CONTROL_SIGNAL_DEFINITIONS[kind].name, (raw) => this.signal(kind, raw)]);
  }

  /** Sets the `approve` and `answerTool` updates' handlers, which tell the sender the verdict. */
  registerUpdates(): void {
    setHandler(approveUpdate, (raw) => this.approve(raw), {
      description: DESCRIPTIONS.approve,
      validator: (raw) => this.validateApproval(raw),
    });
    registerToolResultUpdate((raw) => this.deliver('toolResult', raw));
  }

  /** A control signal: the item is applied now or queued; the handler finishes once it is applied. */
  private signal(kind: ControlKind, raw: unknown): Promise<void> | undefined {
    const outcome = this.deliver(kind, raw);
    return outcome instanceof Promise ? outcome.then(() => undefined) : undefined;
  }

  /**
   * The `approve` update's validator: a malformed approval is refused before it is accepted, so it
   * never reaches history. Its parse is kept, by update id, for the handler that runs right after it
   * (the SDK hands the handler a fresh copy of the arguments); a replay runs no validator, and the
   * handler parses there. Either way each approval is parsed once.
   */
  private validateApproval(raw: unknown): void {
    const item = parseControl('approval', raw);
    if (!item.ok) throw ApplicationFailure.nonRetryable(item.reason, FAILURE.InvalidRequest);
    const id = currentUpdateInfo()?.id;
    if (id !== undefined) this.validated.set(id, item);
  }

  /**
   * The `approve` update: the same path as the signal, and the approver learns at once whether it
   * applied, or why not (a refused edit, a bad signature, no such waiting call).
   */
  private async approve(raw: unknown): Promise<{ approvalId: string; approved: boolean }> {
    const id = currentUpdateInfo()?.id;
    const item = (id !== undefined ? this.validated.get(id) : undefined) ?? parseControl('approval', raw);
    if (id !== undefined) this.validated.delete(id);
    const why = await this.deliver('approval', raw, item);
    if (why !== null || !item.ok) {
      throw ApplicationFailure.nonRetryable(why ?? 'invalid approval', FAILURE.ApprovalRefused);
    }
    const approval = item.payload as ApprovalInput;
    return { approvalId: approval.approvalId, approved: approval.approved };
  }

  /**
   * Runs a task input's handler (a `submit`, and a `message` signal in runs with `current-control-policy`) behind the control items sent before it that still wait,
   * so a close refuses what follows it; at once when none waits, or in runs recorded before
   * `submit-after-control`.
   */
  behind<T>(work: () => T): T | Promise<T> {
    return this.patches.submitAfterControl && this.queue.busy ? this.queue.after(work) : work();
  }

  /**
   * A task input (a `message` signal in runs with `message-after-control`, a `submit` update): `take`
   * runs behind the control items sent before it (`behind`). In runs that check claims on arrival, a
   * new message that claims an identity, a route or a note is checked first (`checkControl`), in the
   * same arrival order as the control items, and `take` gets the claims that held; the inputs and
   * control items sent after it wait for that check. A message that claims nothing, or that intake
   * would refuse or find a duplicate, costs no check.
   */
  input<T>(raw: unknown, take: (verified?: VerifiedClaims) => T): T | Promise<T> {
    const { state } = this;
    const bound = this.patches.boundControl;
    if (!this.patches.claimsOnArrival || !carriesClaims(raw, bound)) return this.behind(() => take());
    return this.queue.run(async () => {
      // Decided when its turn comes: an earlier input may have made it a duplicate, or a close refuses it.
      const message = newMessage(state, raw);
      if (message === null || !carriesClaims(message, bound)) return take();
      return take(await verifiedOnArrival(state, message, message.signature, bound));
    });
  }

  /**
   * Whether every control item sent so far has been checked and applied or refused. In runs with
   * `current-control-policy` an item waits for its `checkControl` first; a `result` asked right after
   * an approval waits for this, so it reports the approval's effect rather than the state before it.
   */
  settled(): boolean {
    return !this.patches.currentPolicy || !this.queue.busy;
  }

  /**
   * Runs an activity call that an interrupt can cancel: the `interrupt` command cancels either kind,
   * a message sent with `whileBusy: interrupt` only a `model` call (a running tool call finishes).
   */
  async cancellable<T>(kind: CallKind, fn: () => Promise<T>): Promise<T> {
    const running = { scope: this.scopes.child(), kind };
    this.running = running;
    try {
      return await running.scope.run(fn);
    } finally {
      if (this.running === running) this.running = null;
      this.scopes.release(running.scope);
    }
  }

  /** Cancels the running call if it is a model call (`whileBusy: interrupt`); a tool call runs on. */
  cancelModelCall(): void {
    if (this.running?.kind === 'model') this.running.scope.cancel();
  }

  /** Delivers a control item; resolves to why it answered nothing (approvals, tool results), else null. */
  private deliver(
    kind: ControlKind,
    raw: unknown,
    item: ParsedControl = parseControl(kind, raw),
  ): string | null | Promise<string | null> {
    const { state, policy } = this;
    // An approval that edits the arguments waits for the worker's check of the edit, in order with the rest.
    if (kind === 'approval' && carriesArguments(raw)) {
      if (patched('approval-edits')) return this.queued(item, true);
      // Runs recorded before edits refused such an approval by its schema; a replay refuses it too.
      const why = 'this Session run predates approval edits; approve without arguments';
      refuseControl(state, kind, controlIdOf(kind, raw as Record<string, unknown>), why, Date.now(), 'invalid');
      return why;
    }
    // A result naming its waiting call, in a run that began before `bound-control`: asked here, in
    // the handler, never after a local activity (patches.ts). Live, the run binds it; a replay of a
    // history recorded before `resultId` existed refuses it, as that history's schema did.
    if (kind === 'toolResult' && carriesResultId(raw) && !this.patches.boundControl && !patched('bound-control')) {
      const why = 'this Session run predates tool result ids; send the result without resultId';
      refuseControl(state, kind, controlIdOf(kind, raw as Record<string, unknown>), why, Date.now(), 'invalid');
      return why;
    }
    if (!this.patches.policyOn) return this.applyNow(item);
    // Whether signing is required is the worker's to say when the item is checked: only a notification
    // (never signed) with nothing queued ahead of it is applied at once.
    if (this.patches.currentPolicy) {
      return kind === 'notification' && !this.queue.busy && policy !== null ? this.applyNow(item) : this.queued(item);
    }
    // Nothing to verify and nothing queued ahead of it: applied at once, in order with the task
    // inputs of the same activation (a pause, then messages, holds them; a close refuses what follows).
    if (!this.queue.busy && policy !== null && (!policy.signedControl || kind === 'notification')) {
      return this.applyNow(item);
    }
    return this.queued(item);
  }

  private queued(item: ParsedControl, edit = false): Promise<string | null> {
    return this.queue.run(() => this.verifiedThenApplied(item, edit));
  }

  private async verifiedThenApplied(item: ParsedControl, edit: boolean): Promise<string | null> {
    const { state, stage } = this;
    const { kind } = item;
    // Only an edit reaches here in a run that predates worker policies (it then has none to wait for).
    const known = this.patches.policyOn ? await this.policyWaited() : DEFAULT_WORKER_POLICY;
    // An invalid payload is refused when it is applied, with its schema's reason, as without signing.
    if (this.patches.currentPolicy && kind !== 'notification' && item.ok) {
      const { payload } = item;
      const { why, required } = await checkNow(state, kind, unsigned(payload), payload.signature, Date.now());
      // What the worker said now, not the run's start, decides whether a tool result must name its call.
      this.signingNow = required;
      if (why !== null) {
        refuseControl(state, kind, controlIdOf(kind, payload), why, Date.now());
        stage.show();
        return why;
      }
    } else if (!this.patches.currentPolicy && known.signedControl && kind !== 'notification' && item.ok) {
      const { payload } = item;
      const why = await refusalOfSigned(known, kind, state.sessionId, unsigned(payload), payload.signature, Date.now());
      if (why !== null) {
        refuseControl(state, kind, controlIdOf(kind, payload), why, Date.now());
        stage.show();
        return why;
      }
    }
    if (edit) {
      const why = await editRefusal(state, item, this.patches.boundApprovals);
      if (why !== null && item.ok) {
        refuseControl(state, kind, controlIdOf(kind, item.payload), why, Date.now(), 'invalid');
        stage.show();
        return why;
      }
    }
    return this.applyNow(item);
  }

  private async policyWaited(): Promise<WorkerPolicy> {
    await condition(() => this.policy !== null);
    return this.policy ?? DEFAULT_WORKER_POLICY;
  }

  /** Applies a control item now; returns why an approval or tool result answered nothing, else null. */
  private applyNow(item: ParsedControl): string | null {
    const { state, stage } = this;
    // Approvals and tool results go to the waiting call (approvals.ts); commands and notifications to state.
    const binding = {
      boundApprovals: this.patches.boundApprovals,
      // Under signed control (in runs with `bound-control`), a tool result must name its waiting call.
      resultIdRequired: this.patches.boundControl && (this.signingNow ?? this.policy?.signedControl) === true,
    };
    const { result, why } = isTurnItem(item)
      ? applyToTurn(state, item, Date.now(), binding)
      : { result: applyParsed(state, item, Date.now()), why: null };
    if (result.kind === 'applied') this.touch();
    if (result.kind === 'applied' && result.interruptTurn) this.running?.scope.cancel();
    stage.followStatus();
    // Pause, resume and close show in the Web UI's filters at once, not after the next input. Newer
    // runs asked this patch at their start already (session.ts); older ones ask it here first.
    if (patched('control-search-attributes')) stage.publish();
    return why;
  }
}

/** Whether a raw tool result names its waiting call (before it is parsed). */
function carriesResultId(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && (raw as Record<string, unknown>).resultId !== undefined;
}

/** Whether an item answers a call of the turn (an approval or a tool result) rather than changing state. */
function isTurnItem(item: ParsedControl): item is ParsedControl & { kind: 'approval' | 'toolResult' } {
  return item.kind === 'approval' || item.kind === 'toolResult';
}
