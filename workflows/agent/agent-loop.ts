/**
 * The inner execution loop: the business agent acts inside the aligned state. Each model step is
 * an activity that assembles its request afresh from facts; each tool call runs, waits for a
 * person's approval, or waits for an external result, and the step is sealed into the transcript
 * with all its results. The turn is workflow state (`state.turn`), so waiting survives worker and
 * server restarts and continue-as-new; a restart never runs a tool without its approval.
 */
import { condition, isCancellation, patched } from '@temporalio/workflow';
import { CreateSubArgs, GOAL_TOOL, isCapabilityTool } from '../../contract/builtin-tools.js';
import { MAX_TEXT_CHARS, type ResourceRef } from '../../contract/messages.js';
import { clip, describeIssues, parseJson } from '../../contract/text.js';
import type { AgentStepRequest } from '../../contract/activity-contract.js';
import { finishRecord } from '../ledger/decision-records.js';
import { recordApprovalRequested } from '../ledger/metrics.js';
import { contextWindow } from './context-window.js';
import type { SessionContext } from '../stages/session-context.js';
import { describeFailure } from '../stages/stage-runner.js';
import { LIMITS, STAGE, type ActiveTurn, type BoundInput, type TurnOutcome } from '../../contract/state.js';
import { finishFollowUp, recordDelegation } from '../children/collaboration.js';
import { createSubSession } from '../children/sub-sessions.js';
import { callRemoteSubSession, subSessionsThisTurn } from '../children/remote-agents.js';
import { requestOf, userItem } from './step-request.js';
import { interruptCalls, nextAction, sealStep, startStep, type RunVia } from './tool-calls.js';
import { runCapabilityTool } from './capability-tools.js';
import { mergeWaiting, waitsToJoin } from './merge.js';
import { runGoalTool } from './goal-tool.js';
import { clipReason } from '../../contract/budget.js';
import { approvalContextOf, approvalIdOf, argumentsHashOf, finishCall } from '../../contract/pending-calls.js';
import { emit, emitCallFinished, lastEventId } from '../ledger/events.js';
import type { PendingCall } from '../../contract/state.js';

/** How a turn left off: finished (its record is in `decisions`), or parked to continue as new. */
export type TurnExit = 'finished' | 'parked';

/**
 * The one way into the agent loop. With `begin`, starts the turn of a bound input whose decision
 * record is in `begin.turn.record`; without it, resumes the turn in `state.turn` (one carried over
 * from the previous run). Runs it until it ends or must wait across continue-as-new.
 */
export async function runAgentTurn(
  ctx: SessionContext,
  begin?: { input: BoundInput; turn: ActiveTurn },
): Promise<TurnExit> {
  const { state } = ctx;
  if (begin) {
    state.turn = begin.turn;
    state.transcript.push(userItem(begin.input));
  }
  const turn = state.turn;
  if (!turn) return 'finished';
  for (;;) {
    if (turn.interrupted) {
      const unfinished = (turn.step?.calls ?? []).filter((c) => c.state !== 'done');
      interruptCalls(turn);
      for (const call of unfinished) emitCallFinished(state, call);
      sealStep(state, turn);
      const by = turn.interruptedBy === undefined ? 'command' : `message ${turn.interruptedBy} (whileBusy: interrupt)`;
      return end(ctx, turn, 'interrupted', `interrupted by ${by}`);
    }
    if (turn.step) {
      const waited = await carryOutStep(ctx, turn);
      if (waited === 'parked') return 'parked';
      if (turn.interrupted) continue;
      const failures = sealStep(state, turn);
      if (failures >= state.settings.maxRepeatedFailures) {
        return end(ctx, turn, 'guarded', `the same tool call failed ${failures} times in a row`);
      }
    }
    if (turn.steps >= state.settings.maxAgentSteps) {
      return end(ctx, turn, 'guarded', `step limit of ${state.settings.maxAgentSteps} reached without a reply`);
    }
    // A step boundary: messages sent to join this turn (`whileBusy: merge`) are judged and taken in.
    // Checked first so a turn with nothing to merge takes no extra await (replays keep their order).
    if (waitsToJoin(ctx.state, turn)) await mergeWaiting(ctx, turn);
    if (turn.interrupted && turn.interruptedBy !== undefined) continue;
    ctx.show(STAGE.agent);
    turn.steps++;
    const request = await stepRequest(ctx, turn);
    // An interrupting message cancelled the compaction; the step is not sent (a command's interrupt
    // sent it, as runs recorded before `while-busy` did).
    if (turn.interrupted && turn.interruptedBy !== undefined) continue;
    // The first step may already be under way, started beside the relevance call (speculation.ts).
    const early = ctx.speculation.adopt(request);
    let answer;
    try {
      answer = await ctx.cancellable(
        'model',
        () => early?.() ?? ctx.activities.agentStep({ ...request, afterEvent: lastEventId(state) }),
      );
    } catch (err) {
      if (turn.interrupted && isCancellation(err)) continue;
      if (isCancellation(err)) throw err;
      return end(ctx, turn, 'failed', clipReason(describeFailure(err)));
    }
    if (answer.kind === 'skipped') return end(ctx, turn, 'skipped', answer.reason);
    // Only Sessions that send their budget (patched 'model-budgets') can be answered this way.
    if (answer.kind === 'budget-exceeded') return end(ctx, turn, 'budget-exceeded', answer.reason);
    if (answer.kind === 'reply') {
      state.transcript.push({ kind: 'reply', seq: turn.seq, text: answer.text });
      if (turn.record.agent) turn.record.agent.reply = answer.text.slice(0, LIMITS.replyChars);
      const bound = state.history.find((h) => h.seq === turn.seq);
      if (bound) bound.reply = answer.text.slice(0, LIMITS.replyChars);
      return end(ctx, turn, 'replied', null);
    }
    startStep(turn, answer.text, answer.calls, answer.reasoning);
    for (const call of turn.step?.calls ?? []) {
      emit(state, {
        kind: 'tool.proposed',
        callId: call.callId,
        tool: call.tool,
        arguments: call.arguments,
        step: turn.steps,
      });
    }
  }
}

/** Carries out the step's calls in the model's order; parks when it must wait across continue-as-new. */
async function carryOutStep(ctx: SessionContext, turn: ActiveTurn): Promise<'done' | 'parked'> {
  for (const call of turn.step?.calls ?? []) {
    for (;;) {
      if (turn.interrupted) return 'done';
      const action = nextAction(call);
      if (action.kind === 'done') break;
      if (action.kind === 'finish') {
        finishCall(call, action.status, action.output);
        emitCallFinished(ctx.state, call);
        break;
      }
      if (action.kind === 'await-approval' || action.kind === 'await-result') {
        const waitingFor = action.kind === 'await-approval' ? 'waiting-approval' : 'waiting-result';
        if (call.state !== waitingFor && waitingFor === 'waiting-approval') {
          recordApprovalRequested(call.tool);
          emit(ctx.state, {
            kind: 'approval.waiting',
            callId: call.callId,
            tool: call.tool,
            approvalId: approvalIdOf(turn, call),
            argumentsHash: argumentsHashOf(call),
            arguments: call.arguments,
            ...approvalContextOf(ctx.state, turn, call),
          });
        }
        call.state = waitingFor;
        call.requestedAt ??= Date.now();
        ctx.show(action.kind === 'await-approval' ? STAGE.waitingApproval : STAGE.waitingTool);
        await condition(() => call.state !== waitingFor || turn.interrupted || ctx.shouldContinueAsNew());
        if (call.state === waitingFor && !turn.interrupted) return 'parked';
        continue;
      }
      emit(ctx.state, { kind: 'tool.started', callId: call.callId, tool: call.tool });
      await runCall(ctx, turn, call, action.via);
      emitCallFinished(ctx.state, call);
      break;
    }
  }
  return 'done';
}

/**
 * Runs one call on the worker (MCP, memory_save), starts a sub-session (session_create_sub), or changes
 * the agent's capabilities (capabilities_*).
 */
async function runCall(ctx: SessionContext, turn: ActiveTurn, call: PendingCall, via: RunVia): Promise<void> {
  const { state } = ctx;
  ctx.show(STAGE.agent);
  try {
    // Runs recorded before the Session ran these hand them to runTool, as they did then.
    if (isCapabilityTool(via) && ctx.patches.agentCapabilities) {
      await runCapabilityTool(ctx, turn, call, via);
      return;
    }
    // Likewise for a goal proposal in runs recorded before goal statements (no worker offered it then).
    if (via === GOAL_TOOL && ctx.patches.goalStatements) return runGoalTool(ctx, turn, call);
    if (via === 'session_create_sub') {
      // The worker checked the arguments against the derived JSON Schema; this parse only types them.
      const parsed = CreateSubArgs.safeParse(parseJson(call.arguments));
      if (!parsed.success) {
        finishCall(call, 'error', `invalid arguments for ${call.tool}: ${describeIssues(parsed.error)}`);
        return;
      }
      const args = parsed.data;
      // Sessions recorded before delegation was keyed by input seq hand over the model's text under
      // its call id alone, which a later turn reusing `call_1` collided with.
      if (!patched('delegation-keys')) {
        const created = await ctx.cancellable('tool', () =>
          createSubSession(
            ctx,
            {
              message: { messageId: `tool:${call.callId}`, text: args.text, resources: args.resources },
              requestKey: `tool:${call.callId}`,
              reason: 'delegated',
            },
            { goal: args.text, seq: turn.seq, awaitsReply: false },
          ),
        );
        finishCall(call, 'ok', JSON.stringify({ sessionId: created.sessionId, seq: created.seq ?? null }));
        return;
      }
      const refused = delegationRefusal(ctx, turn);
      if (refused !== null) {
        finishCall(call, 'error', refused);
        return;
      }
      // Runs recorded before remote sub-sessions were never offered `agent`.
      const agent = ctx.patches.remoteSubsessions ? args.agent : undefined;
      if (agent !== undefined) return await callRemoteSubSession(ctx, turn, call, { ...args, agent });
      const key = `tool:${turn.seq}:${call.callId}`;
      const created = await ctx.cancellable('tool', () =>
        createSubSession(
          ctx,
          {
            message: handedOver(ctx, turn, key, args),
            requestKey: key,
            reason: 'delegated',
            parentSeq: turn.seq,
            depth: state.depth + 1,
          },
          { goal: args.text, seq: turn.seq, awaitsReply: true },
        ),
      );
      // Runs recorded before sub-sessions collaborated record no delegation and never act on the reply.
      if (!ctx.patches.collaborating) {
        const output = {
          sessionId: created.sessionId,
          seq: created.seq ?? null,
          status: 'handed over; the sub-session works on it and its reply comes back to this Session',
        };
        finishCall(call, 'ok', JSON.stringify(output));
        return;
      }
      const at = Date.now();
      recordDelegation(turn.record, {
        callId: call.callId,
        sessionId: created.sessionId,
        childSeq: created.seq ?? null,
        mode: args.mode,
        at,
      });
      const output = {
        sessionId: created.sessionId,
        seq: created.seq ?? null,
        mode: args.mode,
        status:
          args.mode === 'collaborate'
            ? 'handed over; when the sub-session replies, you continue this request with its reply'
            : 'handed over; the sub-session works on it and its reply is recorded in this Session',
      };
      finishCall(call, 'ok', JSON.stringify(output));
      return;
    }
    const result = await ctx.cancellable('tool', () =>
      ctx.activities.runTool({
        sessionId: state.sessionId,
        ...(turn.from?.kind === 'user' && turn.from.id ? { userId: turn.from.id } : {}),
        callId: call.callId,
        seq: turn.seq,
        tool: call.tool,
        toolset: call.toolset,
        arguments: call.arguments,
      }),
    );
    finishCall(call, result.isError ? 'error' : 'ok', result.output, result.resources);
  } catch (err) {
    if (isCancellation(err) && turn.interrupted) {
      finishCall(call, 'interrupted', 'interrupted while it ran');
      return;
    }
    if (isCancellation(err)) throw err;
    finishCall(call, 'error', `tool call failed: ${describeFailure(err)}`);
  }
}

/** Why this turn may not create another sub-session (a tool error the model sees), or null. */
function delegationRefusal(ctx: SessionContext, turn: ActiveTurn): string | null {
  const { state } = ctx;
  const { maxSubSessionsPerTurn, maxSessionDepth } = state.settings;
  if (state.depth >= maxSessionDepth) {
    return `session_create_sub refused: this Session is at depth ${state.depth} and sub-sessions may go at most ${maxSessionDepth} deep; do the work here or tell the user`;
  }
  const created = subSessionsThisTurn(ctx, turn);
  if (created >= maxSubSessionsPerTurn) {
    return `session_create_sub refused: at most ${maxSubSessionsPerTurn} sub-sessions per turn, and this turn created ${created}`;
  }
  return null;
}

/**
 * The message a delegation hands over: the user's input verbatim (text and resources), with the
 * agent's own words beside it as a note. Resources the agent named that the input lacked are listed
 * in the note, so nothing it passed is lost and the user's message stays as sent.
 */
function handedOver(
  ctx: SessionContext,
  turn: ActiveTurn,
  messageId: string,
  args: CreateSubArgs,
): { messageId: string; text: string; resources: ResourceRef[]; note: string } {
  const { state } = ctx;
  const bound = state.history.find((h) => h.seq === turn.seq);
  const said = state.transcript.find((t) => t.kind === 'user' && t.seq === turn.seq);
  const original = bound ?? (said?.kind === 'user' ? said : undefined);
  const text = original?.text ?? args.text;
  const resources = original?.resources ?? args.resources;
  const extra = args.resources.filter((r) => !resources.some((own) => own.uri === r.uri));
  const note = [args.text, ...extra.map((r) => `[resource] ${r.title ? `${r.title} ` : ''}${r.uri}`)].join('\n');
  return { messageId, text, resources, note: clip(note, MAX_TEXT_CHARS) };
}

/** The facts the model step is given; compacts older sealed items first when over the budget. */
async function stepRequest(ctx: SessionContext, turn: ActiveTurn): Promise<AgentStepRequest> {
  return requestOf(ctx.state, turn, await contextWindow(ctx, turn), ctx.patches.goalStatements);
}

/** Ends the turn: finishes the input's decision record and makes the Session ready for the next input. */
function end(ctx: SessionContext, turn: ActiveTurn, outcome: TurnOutcome, reason: string | null): TurnExit {
  const { state } = ctx;
  const agent = turn.record.agent;
  if (agent) {
    agent.outcome = outcome;
    agent.reason = reason === null ? null : clipReason(reason);
    agent.steps = turn.steps;
    agent.endedAt = Date.now();
  }
  const bound = state.history.find((h) => h.seq === turn.seq);
  if (bound) bound.decision = turn.record.decision;
  // Recorded while the turn is still the Session's: its `turn.finished` carries the turn's seq.
  if (turn.followUp) finishFollowUp(state, turn.record);
  else finishRecord(state, turn.record);
  state.turn = null;
  return 'finished';
}
