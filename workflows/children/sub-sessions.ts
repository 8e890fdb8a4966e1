/**
 * The sub-session round trip. A parent creates a sub-session in one place (`createSubSession`, used
 * by routing.ts and by its agent's `session_create_sub` in agent-loop.ts) and hands it inputs; when the sub-session's agent turn for that input ends, the
 * sub-session sends its reply back with the `answerParent` activity, which executes the parent's
 * `subSessionReply` update. The parent records it as a fact (decision record, history, transcript,
 * children view): a bypass input, never judged by relevance and never a task input.
 *
 * Delivery is exactly-once in effect: the activity is retried after a lost worker and the parent
 * de-duplicates by (sub-session, seq) in `recentControl`, which survives continue-as-new.
 */
import { isCancellation, patched } from '@temporalio/workflow';
import type { CreateSubRequest, CreateSubResult } from '../../contract/activity-contract.js';
import { SubSessionReply, type SubSessionReplyResult } from '../../contract/messages.js';
import {
  LIMITS,
  keepLast,
  type ChildSession,
  type DecisionRecord,
  type SessionState,
  type SubSessionAnswer,
} from '../../contract/state.js';
import { clip, clipBytes, describeIssues } from '../../contract/text.js';
import { BUDGET } from '../../contract/budget.js';
import { recordRejection } from '../ledger/intake.js';
import type { SessionContext } from '../stages/session-context.js';
import { describeFailure } from '../stages/stage-runner.js';

/** The de-duplication id of one reply: the answering sub-session and its input seq. */
export function replyId(reply: { sessionId: string; seq: number }): string {
  return `subSessionReply:${reply.sessionId}:${reply.seq}`;
}

/** Why a `subSessionReply` payload is refused, or null when it is taken (or a duplicate). */
export function replyRefusal(raw: unknown): string | null {
  const parsed = SubSessionReply.safeParse(raw);
  return parsed.success ? null : clipBytes(`invalid subSessionReply: ${describeIssues(parsed.error)}`, BUDGET.reason);
}

/** Marks a sub-session as working on one more handed-over input. */
export function awaitReply(child: ChildSession): void {
  child.awaiting++;
  child.status = 'working';
}

/**
 * Starts a sub-session with the first input it is handed, and records it in `children`: the one
 * place a sub-session is created (routing an out-of-scope request, or the agent's
 * `session_create_sub`). `awaitsReply`: the parent counts the input as awaiting the sub-session's
 * answer (false in runs recorded before sub-sessions answered back).
 */
export async function createSubSession(
  ctx: SessionContext,
  handOver: Omit<CreateSubRequest, 'parentSessionId' | 'taskQueue' | 'profile' | 'settings'>,
  child: { goal: string; seq: number; awaitsReply: boolean },
): Promise<CreateSubResult> {
  const { state } = ctx;
  const created = await ctx.activities.createSubSession({
    parentSessionId: state.sessionId,
    taskQueue: ctx.taskQueue,
    profile: 'sub-session',
    settings: state.settings,
    ...handOver,
  });
  const record: ChildSession = {
    sessionId: created.sessionId,
    goal: child.goal,
    createdAtSeq: child.seq,
    lastRoutedSeq: child.seq,
    routed: 1,
    status: 'idle',
    awaiting: 0,
    lastReply: null,
  };
  if (child.awaitsReply) awaitReply(record);
  state.children.push(record);
  keepLast(state.children, LIMITS.children);
  return created;
}

/**
 * Records a sub-session's reply in the parent: the children view, the routed input's decision
 * record and history entry (so the `result` update and `harness send --wait` return it), the
 * transcript (so the agent sees it on its next step) and a control event. Never throws.
 */
export function applySubSessionReply(state: SessionState, raw: unknown, now: number): SubSessionReplyResult {
  const parsed = SubSessionReply.safeParse(raw);
  if (!parsed.success) {
    const reason = clipBytes(`invalid subSessionReply: ${describeIssues(parsed.error)}`, BUDGET.reason);
    recordRejection(state, { at: now, via: 'subSessionReply', messageId: null, reason }, 'invalid');
    return { accepted: false, duplicate: false };
  }
  const reply = parsed.data;
  const id = replyId(reply);
  if (state.recentControl.includes(id)) return { accepted: false, duplicate: true };
  state.recentControl.push(id);
  keepLast(state.recentControl, LIMITS.recentControl);

  const answer = answerOf(reply, now);
  const text = answer.text;
  const child = state.children.find((c) => c.sessionId === reply.sessionId);
  if (child) {
    // The children list is carried with a small byte share; the whole reply is in the record and transcript.
    child.lastReply = { ...answer, text: text === null ? null : clip(text, LIMITS.childReplyChars) };
    child.awaiting = Math.max(0, child.awaiting - 1);
    child.status = child.awaiting > 0 ? 'working' : 'idle';
  }
  const input = reply.parentSeq === null ? undefined : state.history.find((h) => h.seq === reply.parentSeq);
  const record = routedRecord(state, reply);
  if (record?.route) record.route.reply = answer;
  // An out-of-scope input got no reply of its own: the sub-session's is its answer.
  if (record && input && input.reply === null && text !== null) input.reply = text;

  const request = input?.text ?? state.outOfScope.find((r) => r.seq === reply.parentSeq)?.text ?? reply.messageId;
  state.transcript.push({
    kind: 'sub-reply',
    seq: state.boundSeq,
    inputSeq: reply.parentSeq,
    request: clip(request, 500),
    sessionId: reply.sessionId,
    outcome: reply.outcome,
    text: text ?? `(no reply: ${reply.why ?? reply.outcome})`,
  });
  state.controlEvents.push({
    at: now,
    kind: 'subSessionReply',
    id,
    summary: clip(
      `${reply.outcome}${reply.parentSeq === null ? '' : ` for #${reply.parentSeq}`}: ${text ?? reply.why ?? ''}`,
      200,
    ),
  });
  keepLast(state.controlEvents, LIMITS.controlEvents);
  state.counts.controlEvents++;
  return { accepted: true, duplicate: false };
}

/** A reply as the parent records it: its text clipped to `LIMITS.replyChars`. */
export function answerOf(reply: SubSessionReply, now: number): SubSessionAnswer {
  const text = reply.reply === null ? null : reply.reply.slice(0, LIMITS.replyChars);
  return { sessionId: reply.sessionId, seq: reply.seq, outcome: reply.outcome, text, at: now };
}

/** The decision record of the out-of-scope input this reply answers, if the parent routed it there. */
function routedRecord(state: SessionState, reply: SubSessionReply): DecisionRecord | undefined {
  if (reply.parentSeq === null || reply.reason !== 'out-of-scope') return undefined;
  const record = state.decisions.find((d) => d.seq === reply.parentSeq);
  return record?.route?.to === reply.sessionId ? record : undefined;
}

/**
 * Whether the `result` update should still wait for a sub-session's reply to this input: it was
 * routed to a sub-session, no reply has come, and the bounded wait has not passed.
 */
export function awaitsSubSessionReply(state: SessionState, record: DecisionRecord, now: number): boolean {
  const route = record.route;
  if (!route || route.reply !== null || route.to === null) return false;
  if (route.via !== 'existing-sub' && route.via !== 'new-sub') return false;
  const routedAt = record.agent?.endedAt ?? record.stages.at(-1)?.endedAt ?? now;
  return now - routedAt < state.settings.subSessionReplyWaitMs;
}

/**
 * Sub-session side: once the agent turn for input `seq` has ended, sends its reply to the parent if
 * the parent handed that input over. A parent that cannot take it (closed, gone) is recorded as a
 * fallback on the input's decision record; the reply stays in this Session's own record.
 */
export async function answerParent(ctx: SessionContext, seq: number): Promise<void> {
  const { state } = ctx;
  const parent = state.parentSessionId;
  const input = state.history.find((h) => h.seq === seq);
  if (!parent || !input?.routed || input.routed.fromSessionId !== parent) return;
  const record = state.decisions.find((d) => d.seq === seq);
  const agent = record?.agent;
  if (!record || !agent || agent.outcome === 'waiting-approval' || agent.outcome === 'waiting-tool') return;
  // A merged input has no turn of its own (never called with its seq: processInput answers the turn's).
  if (agent.outcome === 'merged') return;
  // Sessions recorded before sub-sessions answered back end the turn without a reply to the parent.
  if (!patched('sub-session-answers')) return;
  const reply: SubSessionReply = {
    sessionId: state.sessionId,
    seq,
    parentSeq: input.routed.seq ?? null,
    messageId: input.messageId,
    reason: input.routed.reason,
    outcome: agent.outcome,
    reply: agent.reply,
    why: agent.reply === null ? clip(agent.reason ?? agent.outcome, 2_000) : null,
  };
  try {
    await ctx.activities.answerParent({ sessionId: parent, reply });
  } catch (err) {
    if (isCancellation(err)) throw err;
    record.fallbacks.push(clipBytes(`answering the parent ${parent} failed: ${describeFailure(err)}`, BUDGET.reason));
  }
}
