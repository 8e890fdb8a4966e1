/**
 * Responsibility routing of an out-of-scope request. A sub-session forwards it to its parent; a
 * top-level Session picks the sub-session whose goal fits best (relevance role, same bands), or
 * creates a new one. The message travels verbatim with its original messageId, so a re-delivery is
 * a duplicate on the receiving side.
 */
import { getExternalWorkflowHandle, isCancellation, patched } from '@temporalio/workflow';
import { messageSignal } from '../../contract/api.js';
import { BUDGET } from '../../contract/budget.js';
import { band } from '../../contract/relevance.js';
import { workflowIdFor } from '../../contract/ids.js';
import { requestKeyOf } from '../ledger/intake.js';
import { describeFailure, runStage } from '../stages/stage-runner.js';
import { LIMITS, STAGE, type BoundInput, type ChildSession, type DecisionRecord } from '../../contract/state.js';
import type { Thresholds } from '../../contract/messages.js';
import { clipBytes } from '../../contract/text.js';
import type { SessionContext } from '../stages/session-context.js';
import { awaitReply, createSubSession } from './sub-sessions.js';

type Via = NonNullable<DecisionRecord['route']>['via'];

/** Routes the out-of-scope request recorded for `input`, and records where it went. */
export async function routeOutOfScope(ctx: SessionContext, input: BoundInput, record: DecisionRecord): Promise<void> {
  const { state, activities } = ctx;
  const request = state.outOfScope.find((r) => r.seq === input.seq);
  if (!request) return;
  const cameFrom = input.from?.kind === 'session' ? input.from.id : undefined;
  // Sessions recorded before sub-sessions answered back hand over without naming the input, and
  // neither limit the tree's depth nor wait for a reply.
  const answered = patched('sub-session-answers');
  const payload = {
    messageId: input.messageId,
    text: input.text,
    resources: input.resources,
    from: { kind: 'session' as const, id: state.sessionId },
    routed: {
      fromSessionId: state.sessionId,
      reason: 'out-of-scope' as const,
      ...(answered ? { seq: input.seq } : {}),
    },
  };
  const settle = (to: string | null, via: Via, note: string, ok = true) => {
    record.route = { to, via, note, reply: null };
    request.status = ok ? (to ? 'routed' : 'pending') : 'failed';
    request.routedTo = to;
    request.note = note;
  };
  // Sessions that routed by signal before hand-over by update existed replay that way; the update
  // path sees a receiver's refusal and records the request as failed instead of routed.
  const byUpdate = patched('route-by-update');
  const handOver = async (sessionId: string) => {
    if (byUpdate) await activities.handOver({ sessionId, message: payload });
    else await getExternalWorkflowHandle(workflowIdFor(sessionId)).signal(messageSignal, payload);
  };
  const routed = await runStage(record, STAGE.route, ctx.show, async () => {
    if (state.parentSessionId) {
      if (cameFrom === state.parentSessionId) {
        return settle(null, 'none', 'handed over by the parent Session; not routed back');
      }
      await handOver(state.parentSessionId);
      return settle(state.parentSessionId, 'parent', 'forwarded to the parent Session');
    }
    const best = await bestFittingChild(ctx, input, record, cameFrom);
    if (best) {
      try {
        await handOver(best.child.sessionId);
        best.child.lastRoutedSeq = input.seq;
        best.child.routed++;
        if (answered) awaitReply(best.child);
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
    if (answered && state.depth >= state.settings.maxSessionDepth) {
      return settle(null, 'none', `kept here: sub-session depth limit of ${state.settings.maxSessionDepth} reached`);
    }
    const created = await createSubSession(
      ctx,
      {
        message: { messageId: input.messageId, text: input.text, resources: input.resources },
        requestKey: requestKeyOf(input),
        ...(answered ? { parentSeq: input.seq, depth: state.depth + 1 } : {}),
      },
      { goal: input.text, seq: input.seq, awaitsReply: answered },
    );
    return settle(created.sessionId, 'new-sub', 'created a sub-session for the request');
  });
  if (!routed.ok) settle(null, 'none', `routing failed: ${routed.reason}`, false);
}

/**
 * The sub-sessions a request may go to: the most recent `LIMITS.routingCandidates`, never the one
 * it came from, which would only send it back.
 */
export function routingCandidates(children: readonly ChildSession[], cameFrom: string | undefined): ChildSession[] {
  return children.filter((c) => c.sessionId !== cameFrom).slice(-LIMITS.routingCandidates);
}

/**
 * The scored sub-session that takes the request: session relevance in the high band, the highest
 * score, the earlier candidate on a tie. None fits: the caller creates a new sub-session.
 */
export function bestFit(
  scored: ReadonlyArray<{ child: ChildSession; score: number }>,
  thresholds: Thresholds,
): { child: ChildSession; score: number } | undefined {
  let best: { child: ChildSession; score: number } | undefined;
  for (const candidate of scored) {
    const fits = band(candidate.score, thresholds) === 'high';
    if (fits && (!best || candidate.score > best.score)) best = candidate;
  }
  return best;
}

/** Scores the candidates' goals against the request, one at a time; the best fit, if any. */
async function bestFittingChild(
  ctx: SessionContext,
  input: BoundInput,
  record: DecisionRecord,
  cameFrom: string | undefined,
): Promise<{ child: ChildSession; score: number } | undefined> {
  const { state, activities } = ctx;
  const scored: Array<{ child: ChildSession; score: number }> = [];
  for (const child of routingCandidates(state.children, cameFrom)) {
    try {
      const scores = await activities.routeRelevance({
        message: { text: input.text, resources: input.resources },
        phaseGoal: child.goal,
        sessionGoal: child.goal,
      });
      scored.push({ child, score: scores.sessionRelevance });
    } catch (err) {
      if (isCancellation(err)) throw err;
      record.fallbacks.push(`routing: scoring ${child.sessionId} failed: ${describeFailure(err)}`);
    }
  }
  return bestFit(scored, state.settings.thresholds);
}
