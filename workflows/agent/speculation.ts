/**
 * The speculative first agent step: on a continue-shaped Session the agent's first model step is
 * sent at the same time as the relevance call, so a `continue` input does not wait a whole relevance
 * round trip before the agent starts. Nothing of the step is used before the decision: its tool calls
 * run and its reply is released only once the decision is `continue`, through the turn's normal loop.
 *
 * Like relevance judged ahead (lookahead.ts), the step stands in for the real first step only when
 * its request is the one the Session builds at that point: both come from `requestOf`
 * (step-request.ts), the early one over the transcript with the input's user item added and the
 * decision taken as `continue`, without touching state. When the turn's first request differs (a
 * `set-goals` meanwhile, a capability change, ...), or the relevance call's tokens put the budget
 * over its limit so the real step would have been refused, the early step is discarded and the real
 * one runs: decisions and transcript are those of a Session that never speculates. Any other decision
 * discards the step at once, cancelling it rather than waiting; so does a failure, after which the
 * normal step runs.
 *
 * Continue-shaped, the rule this module applies in runs that asked `patched('speculative-agent-step')`
 * (at their start, session.ts):
 * the input is not the Session's first task, both goals are set, no turn is active, the agent turn
 * and `speculativeAgentStep` are on (and the worker allows it), the previous input's decision left
 * its phase open (`continue`, `initialize` or `new-phase`: the Session is working inside its
 * current phase, where a follow-up most often continues), and the request fits the context budget
 * whole (a step that must compact first changes state, so it is never sent ahead).
 *
 * Where a continue is not the likely outcome, runs that asked `patched('fewer-actions')` send nothing
 * ahead, since a discarded step is a billable action and tokens spent for nothing. What is known
 * before the relevance result decides:
 * - a judgment made ahead for the input (lookahead.ts) that has already answered gives the decision
 *   itself: nothing is sent ahead, since on `continue` the turn's first step starts at once anyway,
 *   in the same workflow task, and on anything else no step is wanted;
 * - otherwise, the input right after `initialize` is not sent ahead. The phase is then the Session's
 *   whole goal, just taken on by the first turn, and the next input is as often the next deliverable
 *   as a follow-up (the README's own second message converts the guide to Word): that input's agent
 *   waits one relevance call, as it would without speculation. From the third input on the phase is
 *   one the Session is working inside, and continue inputs keep their step sent ahead.
 *
 * A discarded step's tokens count in the accounting as speculative (`usage.speculative`), or as a
 * step of unknown usage when it was cancelled before its answer came. The pending step lives in
 * workflow memory only: continue-as-new happens between inputs, when none is pending.
 */
import { CancellationScope, isCancellation } from '@temporalio/workflow';
// Not re-exported by the package's index; the SDK uses it for its own scope listeners (1.24.0, pinned).
import { untrackPromise } from '@temporalio/workflow/lib/stack-helpers.js';
import { AgentStepResult } from '../../contract/activity-contract.js';
import type { BoundInput, Decision, DecisionRecord, SessionState } from '../../contract/state.js';
import { BUDGET } from '../../contract/budget.js';
import { clipBytes, jsonBytes } from '../../contract/text.js';
import { exhausted, type ModelUsage } from '../../contract/usage.js';
import type { WorkerPolicy } from '../../contract/worker-policy.js';
import type { SessionActivityProxies } from '../stages/activity-proxies.js';
import type { Speculation } from '../stages/session-context.js';
import type { UsageMeter } from '../ledger/accounting.js';
import { requestOf, userItem } from './step-request.js';
import { phaseItems } from './context-window.js';
import { recordSpeculation } from '../ledger/metrics.js';
import { describeFailure } from '../stages/stage-runner.js';
import { lastEventId } from '../ledger/events.js';
import { CallScopes } from '../run/call-scopes.js';

/** Decisions after which the next input is taken to continue the phase. */
const LEAVES_PHASE_OPEN: ReadonlySet<Decision> = new Set(['continue', 'initialize', 'new-phase']);
/** The same, in runs with `fewer-actions`: after `initialize` a new phase is as likely (module comment). */
const CONTINUE_LIKELY_AFTER: ReadonlySet<Decision> = new Set(['continue', 'new-phase']);

type Ahead = Awaited<ReturnType<SessionActivityProxies['agentStepAhead']>>;

interface Pending {
  record: DecisionRecord;
  /** The request as sent, without `budget` and `speculative`: its identity. */
  sent: string;
  scope: CancellationScope;
  answer: Promise<Ahead>;
  /** Set once the activity has answered or failed (usage undefined when it failed). */
  settled: { usage: ModelUsage | undefined } | null;
}

/**
 * Why the Session is not continue-shaped for `input`, or null when it is. With `likelyContinue`
 * (runs with `fewer-actions`), also why a continue is not the likely outcome: `ahead` is the decision
 * a judgment made ahead has already given, if any.
 */
export function notContinueShaped(
  state: SessionState,
  input: BoundInput,
  firstTask: boolean,
  policy: Pick<WorkerPolicy, 'speculativeAgentStep'> | null,
  likely: { likelyContinue: boolean; ahead: Decision | null } = { likelyContinue: false, ahead: null },
): string | null {
  if (firstTask || !state.goals.session || !state.goals.phase) return 'no goals to continue';
  if (state.turn !== null) return 'a turn is active';
  if (!state.settings.agentTurn) return 'agent turn off';
  if (!state.settings.speculativeAgentStep || policy?.speculativeAgentStep === false) return 'speculation off';
  if (likely.likelyContinue && likely.ahead !== null) return `decided ahead: ${likely.ahead}`;
  const previous = state.history.filter((h) => h.seq < input.seq).at(-1)?.decision ?? null;
  if (previous === null || !LEAVES_PHASE_OPEN.has(previous)) return 'the previous input did not continue a phase';
  if (likely.likelyContinue && !CONTINUE_LIKELY_AFTER.has(previous)) return `no continue likely after ${previous}`;
  return null;
}

/** Which rule a run's speculation follows, from the patches asked at its start. */
export interface SpeculationRule {
  /** `patched('speculative-agent-step')`; false in runs recorded before it. */
  enabled: boolean;
  /** `patched('fewer-actions')`: only where a continue is the likely outcome (module comment). */
  likelyContinue: boolean;
  /** `patched('goal-statements')`: the request offers `propose_goal_change` where the real one would. */
  goalStatements?: boolean;
}

export function makeSpeculation(
  state: SessionState,
  activities: Pick<SessionActivityProxies, 'agentStepAhead' | 'agentStep'>,
  meter: Pick<UsageMeter, 'charge' | 'discard' | 'check'>,
  policy: WorkerPolicy | null,
  rule: SpeculationRule,
): Speculation {
  let pending: Pending | null = null;
  // Not children of the root scope, which would hold every step's scope for the rest of the run.
  const scopes = new CallScopes();

  const discard = (p: Pending, reason: string) => {
    if (pending === p) pending = null;
    p.record.speculation = { outcome: 'discarded', reason: clipBytes(reason, BUDGET.reason) };
    // The non-continue path never waits for it: cancelled if it is still running, and its tokens,
    // which only the worker's metrics then see, are counted here as unknown.
    if (!p.settled) p.scope.cancel();
    const usage = p.settled?.usage;
    meter.discard('agent', usage);
    recordSpeculation('discarded', usage);
  };

  return {
    start(input, record, firstTask, decidedAhead) {
      if (pending) discard(pending, 'a later input began');
      if (!rule.enabled) return;
      if (
        notContinueShaped(state, input, firstTask, policy, {
          likelyContinue: rule.likelyContinue,
          ahead: decidedAhead,
        }) !== null
      ) {
        return;
      }
      const window = phaseItems(state, [...state.transcript, userItem(input)]);
      if (jsonBytes(window) > state.settings.agentContextBytes) return;
      const request = requestOf(
        state,
        { from: input.from, steps: 1, record: { decision: 'continue' } },
        window,
        rule.goalStatements === true,
      );
      const scope = scopes.child();
      const ahead = { ...request, speculative: true, afterEvent: lastEventId(state) };
      const answer = scope.run(() => activities.agentStepAhead(ahead));
      const p: Pending = { record, sent: JSON.stringify(request), scope, answer, settled: null };
      // Handled here, so a failure is never an unhandled rejection (which fails the workflow task).
      // Once the step has answered, its scope is released: settling it schedules nothing (the
      // activity is no longer pending), and lets go of what the activity's cancellation listener
      // holds (the request) (run/call-scopes.ts).
      answer.then(
        (a) => {
          p.settled = { usage: a.usage };
          scopes.release(scope);
        },
        () => {
          p.settled = { usage: undefined };
          scopes.release(scope);
        },
      );
      pending = p;
    },

    decided(decision) {
      if (pending && decision !== 'continue') discard(pending, `decision ${decision}`);
    },

    adopt(request) {
      const p = pending;
      if (!p) return undefined;
      pending = null;
      if (JSON.stringify(request) !== p.sent) {
        discard(p, 'the first request differed from the one sent ahead');
        return undefined;
      }
      // The budget the real step would carry counts the relevance call; the worker would refuse it
      // if that put the budget over, so the step sent before it may not stand in.
      const check = meter.check();
      const over = check ? exhausted(check, policy?.budgetMax ?? {}) : null;
      if (over !== null) {
        discard(p, over);
        return undefined;
      }
      p.record.speculation = { outcome: 'adopted', reason: null };
      return async () => {
        const mine = CancellationScope.current();
        // An interrupt cancels the caller's scope; the step sent ahead runs in its own, so it is
        // cancelled from here. A scope's cancelRequested settles only if it is cancelled, so this
        // listener outlives the step: it is untracked (the SDK would keep its stack trace for as
        // long as it is pending, as it does for its own listeners) and lets go of the step once the
        // step has answered, when cancelling it would do nothing. Same commands, same order.
        let ahead: CancellationScope | null = p.scope;
        untrackPromise(mine.cancelRequested.catch(() => ahead?.cancel()));
        let reason: string;
        try {
          const { answer, usage } = await p.answer;
          ahead = null;
          const parsed = AgentStepResult.safeParse(answer);
          if (parsed.success && parsed.data.kind !== 'budget-exceeded') {
            meter.charge('agent', usage);
            recordSpeculation('adopted');
            return parsed.data;
          }
          reason = parsed.success ? 'refused for budget when sent' : 'malformed answer';
        } catch (err) {
          ahead = null;
          if (isCancellation(err) && mine.consideredCancelled) throw err;
          reason = `failed: ${describeFailure(err)}`;
        }
        discard(p, reason);
        return activities.agentStep({ ...request, afterEvent: lastEventId(state) });
      };
    },
  };
}
