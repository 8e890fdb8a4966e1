/**
 * Read models of the Session: what queries return and what the Temporal Web UI shows as the
 * workflow's current details. Pure functions of SessionState.
 */
import type { GoalsResult, SessionView } from '../../contract/queries.js';
import type { SessionStage, SessionState } from '../../contract/state.js';
import { clip, clipBytes } from '../../contract/text.js';
import { describeSum } from '../../contract/usage.js';
import {
  approvalIdOf,
  approvalContextOf,
  argumentsHashOf,
  externalCalls,
  resultIdOf,
  waitingApprovals,
} from '../../contract/pending-calls.js';

/** Goal changes the `goals` and `snapshot` queries show. */
const GOAL_CHANGES_SHOWN = 10;

/** The `goals` query: the goals and their newest changes. */
export function goalsView(state: SessionState): GoalsResult {
  return { ...state.goals, history: state.goalHistory.slice(-GOAL_CHANGES_SHOWN) };
}

export function buildView(state: SessionState, stage: SessionStage): SessionView {
  const current = state.phases.at(-1);
  return {
    sessionId: state.sessionId,
    parentSessionId: state.parentSessionId,
    profile: state.profile,
    status: state.status,
    stage,
    run: state.run,
    queueLength: state.queue.length,
    seq: { lastAccepted: state.nextSeq - 1, lastBound: state.boundSeq },
    counts: state.counts,
    goals: state.goals,
    phase: current
      ? {
          index: current.index,
          startedAtSeq: current.startedAtSeq,
          previous: state.phases.slice(0, -1).map((p) => ({
            index: p.index,
            goal: p.goal.text,
            compaction: p.compaction,
            summary: p.summary,
          })),
        }
      : null,
    capabilities: state.capabilities,
    capabilityRevisions: state.capabilityRevisions.slice(-10),
    goalHistory: state.goalHistory.slice(-GOAL_CHANGES_SHOWN),
    lastDecision: state.decisions.at(-1) ?? null,
    pendingOutOfScope: state.outOfScope.filter((r) => r.status === 'pending').length,
    children: state.children,
    artifacts: state.artifacts,
    recentRejections: state.rejections,
    recentControlEvents: state.controlEvents.slice(-10),
    settings: state.settings,
    usage: state.usage,
    settingsClamped: state.settingsClamped,
    turn: state.turn ? { seq: state.turn.seq, steps: state.turn.steps, interrupted: state.turn.interrupted } : null,
    pendingApprovals: pendingApprovals(state),
    pendingToolCalls: externalCalls(state.turn).map((c) => ({
      callId: c.callId,
      ...(state.turn ? { resultId: resultIdOf(state.turn, c) } : {}),
      seq: state.turn?.seq ?? 0,
      tool: c.tool,
      arguments: clipBytes(c.arguments, 2048),
    })),
  };
}

function pendingApprovals(state: SessionState): SessionView['pendingApprovals'] {
  const { turn } = state;
  if (!turn) return [];
  return waitingApprovals(turn).map((c) => ({
    approvalId: approvalIdOf(turn, c),
    argumentsHash: argumentsHashOf(c),
    callId: c.callId,
    seq: turn.seq,
    tool: c.tool,
    arguments: clipBytes(c.arguments, 2048),
    requestedAt: c.requestedAt,
    ...approvalContextOf(state, turn, c),
  }));
}

function names(caps: { name: string }[]): string {
  return caps.length > 0 ? caps.map((c) => c.name).join(', ') : '—';
}

/** Markdown shown in the Temporal Web UI as the workflow's current details. */
export function renderDetails(state: SessionState, stage: SessionStage): string {
  // The Web UI shows the first few lines without scrolling: the most telling ones come first.
  const last = state.decisions.at(-1);
  const lines = [
    `**Stage:** ${stage} · **Status:** ${state.status} · **Queue:** ${state.queue.length} · **Input:** ${state.boundSeq} of ${state.nextSeq - 1}`,
  ];
  if (last) {
    const scores = last.scores
      ? ` (phase ${last.scores.phase.toFixed(2)}, session ${last.scores.session.toFixed(2)})`
      : '';
    const degraded = last.degraded ? ` — degraded: ${clip(last.degraded, 200)}` : '';
    const routed = last.route?.to ? ` — routed to ${last.route.to}` : '';
    lines.push('', `**Last decision:** #${last.seq} ${last.decision}${scores}${degraded}${routed}`);
  }
  if (state.usage.total.calls > 0) lines.push('', `**Model usage:** ${describeSum(state.usage.total)}`);
  if (state.status === 'closed') {
    const closedBy = [...state.controlEvents]
      .reverse()
      .find((e) => e.kind === 'command' && e.summary.startsWith('close'));
    if (closedBy)
      lines.push(
        '',
        `**Closed by:** ${clip(closedBy.id === 'idle-timeout' ? closedBy.summary : `command ${closedBy.id}`, 200)}`,
      );
  }
  const waiting = pendingApprovals(state);
  if (waiting.length > 0) {
    const calls = waiting.map((c) => `${c.tool} (approvalId ${c.approvalId})`).join(', ');
    lines.push('', `**Waiting for approval:** ${clip(calls, 400)}`);
  }
  // The approver's edits of the latest calls: what the model proposed beside what ran.
  const edited = [...(last?.agent?.toolCalls ?? []), ...(state.turn?.step?.calls ?? [])]
    .filter((c) => c.originalArguments !== null)
    .slice(-3)
    .map(
      (c) =>
        `${c.tool} (callId ${c.callId}${c.editedBy ? `, by ${c.editedBy}` : ''}): proposed ${clip(c.originalArguments ?? '', 160)} → ran ${clip(c.arguments, 160)}`,
    );
  if (edited.length > 0) lines.push('', `**Arguments edited on approval:** ${clip(edited.join('; '), 900)}`);
  const external = externalCalls(state.turn).filter((c) => c.state === 'waiting-result');
  if (external.length > 0) {
    lines.push(
      '',
      `**Waiting for a tool result:** ${clip(external.map((c) => `${c.tool} (callId ${c.callId})`).join(', '), 400)}`,
    );
  }
  lines.push(
    '',
    `**Session goal:** ${state.goals.session ? clip(state.goals.session.text, 300) : '—'}`,
    '',
    `**Phase ${state.phases.at(-1)?.index ?? 0} goal:** ${state.goals.phase ? clip(state.goals.phase.text, 300) : '—'}`,
    '',
    `**Loaded:** skills ${names(state.capabilities.skills)} · toolsets ${names(state.capabilities.toolsets)} · memories ${state.capabilities.memories.length}`,
  );
  if (state.artifacts.length > 0) {
    const newest = state.artifacts.slice(-5).map((a) => `${a.uri} (${a.tool}, #${a.seq})`);
    const more = state.artifacts.length > 5 ? ` and ${state.artifacts.length - 5} earlier` : '';
    lines.push('', `**Artifacts:** ${clip(newest.join(', '), 400)}${more}`);
  }
  if (state.parentSessionId) lines.push('', `**Parent session:** ${state.parentSessionId}`);
  if (state.children.length > 0) {
    // Newest first, each with where it stands and what it last answered.
    const children = state.children
      .slice(-5)
      .reverse()
      .map((c) => {
        const reply = c.lastReply ? `, last reply (${c.lastReply.outcome}): ${clip(c.lastReply.text ?? '—', 120)}` : '';
        return `${c.sessionId} (${c.status}${c.awaiting > 0 ? `, ${c.awaiting} awaiting` : ''}${reply})`;
      });
    const more = state.children.length > 5 ? ` and ${state.children.length - 5} earlier` : '';
    lines.push('', `**Sub-sessions:** ${clip(children.join('; '), 900)}${more}`);
  }
  return lines.join('\n');
}

/** The newest `limit` entries of a list (all of them without a positive limit), for the list queries. */
export function lastN<T>(list: T[], limit: number | undefined): T[] {
  const n = typeof limit === 'number' && limit > 0 ? Math.floor(limit) : list.length;
  return list.slice(-n);
}
