/**
 * How the `harness` CLI prints Sessions: decision records, inspect tables, list rows, watch lines.
 * Pure functions of query results, so the output is the same on a TTY and in a pipe.
 */
import Table from 'cli-table3';
import type { SessionEvent } from '../contract/events.js';
import type { BoundInput, DecisionRecord, SessionSummary, SessionView } from '../client/index.js';
import { FAILURE } from '../contract/failures.js';
import { clip } from '../contract/text.js';
import type { UsageSum, UsageTotals } from '../contract/usage.js';

/** Tables without colour, so piped output and test assertions see plain text. */
function table(head: string[], colWidths?: Array<number | null>): Table.Table {
  return new Table({
    head,
    style: { head: [], border: [] },
    wordWrap: true,
    ...(colWidths ? { colWidths } : {}),
  });
}

function ms(startedAt: number, endedAt: number): string {
  const d = Math.max(0, endedAt - startedAt);
  return d >= 10_000 ? `${(d / 1000).toFixed(1)} s` : `${d} ms`;
}

export function scores(record: DecisionRecord): string {
  return record.scores ? `phase ${record.scores.phase.toFixed(2)}, session ${record.scores.session.toFixed(2)}` : '—';
}

export function diff(record: DecisionRecord): string {
  if (!record.diff) return '—';
  const parts = [...record.diff.added.map((id) => `+${id}`), ...record.diff.removed.map((id) => `-${id}`)];
  return parts.length > 0 ? parts.join(' ') : `no change (${record.diff.kept.length} kept)`;
}

function stageMark(outcome: string): string {
  if (outcome === 'ok') return '✓';
  if (outcome.startsWith('skipped')) return '-';
  return '!';
}

/**
 * The model calls of a decision that the endpoint refused for their configuration
 * (FAILURE.ModelConfigError): in the degraded reason, a stage, a fallback or the agent's outcome.
 * Each is the provider's message and the setting to change, shown apart so it is not read as an
 * ordinary degraded input.
 */
export function configErrors(record: DecisionRecord): string[] {
  const texts = [
    record.degraded,
    ...record.stages.map((s) => s.outcome),
    ...record.fallbacks,
    record.agent?.reason ?? null,
  ].filter((t): t is string => typeof t === 'string' && t.includes(FAILURE.ModelConfigError));
  const seen = new Set<string>();
  const out: string[] = [];
  for (const text of texts) {
    // One refusal reaches several fields (a stage and the degraded reason); show it once.
    const from = text.indexOf(FAILURE.ModelConfigError);
    const core = text.slice(from + FAILURE.ModelConfigError.length).replace(/^:\s*/, '');
    if (seen.has(core)) continue;
    seen.add(core);
    out.push(core);
  }
  return out;
}

/** The decision block `send --wait` ends with. */
/**
 * `send --wait`'s closing block. `replyPrinted`: the reply is on the screen already, whole (streamed,
 * with any end the stream missed added from the record), so the block names it instead of repeating it.
 */
export function formatDecision(
  record: DecisionRecord,
  view: SessionView | null,
  input: BoundInput | null,
  { replyPrinted = false }: { replyPrinted?: boolean } = {},
): string {
  const lines = [`decision #${record.seq}: ${record.decision}${record.scores ? ` (${scores(record)})` : ''}`];
  if (record.degraded) lines.push(`  degraded: ${record.degraded}`);
  for (const error of configErrors(record)) lines.push(`  configuration error: ${error}`);
  const width = Math.max(0, ...record.stages.map((s) => s.stage.length));
  for (const stage of record.stages) {
    lines.push(
      `  ${stageMark(stage.outcome)} ${stage.stage.padEnd(width)}  ${ms(stage.startedAt, stage.endedAt).padStart(7)}  ${stage.outcome}`,
    );
  }
  if (record.agent) {
    const why = record.agent.reason ? `: ${record.agent.reason}` : '';
    const steps = record.agent.steps > 0 ? ` (${record.agent.steps} step${record.agent.steps === 1 ? '' : 's'})` : '';
    lines.push(`  agent: ${record.agent.outcome}${steps}${why}`);
    for (const call of record.agent.toolCalls) {
      const result = call.result === null ? '' : ` → ${clip(call.result, 120)}`;
      const answer = call.approval
        ? ` (${call.approval.approved ? 'approved' : 'rejected'}${call.approval.by ? ` by ${call.approval.by}` : ''})`
        : '';
      const policy = call.policy ? ` policy ${call.policy.effect} by rule ${call.policy.rule}` : '';
      lines.push(
        `    tool ${call.tool}(${clip(call.arguments, 80)}) [${call.status}]${policy}${answer} callId ${call.callId}${result}`,
      );
      if (call.originalArguments !== null) {
        const by = call.editedBy ? ` by ${call.editedBy}` : '';
        lines.push(`      arguments edited${by} on approval; the model proposed ${clip(call.originalArguments, 80)}`);
      }
    }
    for (const waiting of view?.pendingApprovals.filter((a) => a.seq === record.seq) ?? []) {
      lines.push(
        `    waiting for approval ${waiting.approvalId}: harness approve|reject ${view?.sessionId} ${waiting.approvalId}`,
      );
    }
  }
  if (record.route) lines.push(`  route: ${record.route.to ?? 'nowhere'} (${record.route.via}) — ${record.route.note}`);
  const answer = record.route?.reply;
  if (answer) {
    lines.push(`  sub-session ${answer.sessionId} answered (#${answer.seq}, ${answer.outcome})`);
  }
  for (const fallback of record.fallbacks) lines.push(`  fallback: ${fallback}`);
  if (view) {
    lines.push(`session goal: ${view.goals.session ? clip(view.goals.session.text, 200) : '—'}`);
    lines.push(`phase goal:   ${view.goals.phase ? clip(view.goals.phase.text, 200) : '—'}`);
    const caps = view.capabilities;
    lines.push(
      `capabilities: ${caps.skills.length} skills, ${caps.toolsets.length} toolsets, ${caps.memories.length} memories ` +
        `(revision ${caps.revision}); changes: ${diff(record)}`,
    );
  }
  const reply = record.agent?.reply ?? input?.reply;
  if (reply && replyPrinted) lines.push('reply: printed above');
  else if (reply) lines.push('reply:', ...reply.split('\n').map((l) => `  ${l}`));
  return lines.join('\n');
}

/** Most artifacts `inspect` lists (the newest). */
const ARTIFACT_ROWS = 20;

/** `inspect`: a header line, then goals, capabilities, artifacts and recent decisions as tables. */
export function formatInspect(view: SessionView, decisions: DecisionRecord[]): string {
  const out: string[] = [];
  out.push(
    `Session ${view.sessionId} — stage ${view.stage} · status ${view.status} · run ${view.run} · ` +
      `seq ${view.seq.lastBound}/${view.seq.lastAccepted} · queue ${view.queueLength}`,
  );
  const byDecision = Object.entries(view.counts.byDecision)
    .map(([d, n]) => `${d} ${n}`)
    .join(', ');
  out.push(
    `profile ${view.profile} · parent ${view.parentSessionId ?? '—'} · inputs ${view.counts.bound} bound, ` +
      `${view.counts.duplicates} duplicate, ${view.counts.rejected} rejected · decisions: ${byDecision || '—'}`,
  );

  if (view.settingsClamped.length > 0) {
    const shown = (v: number | string | null) => (v === null ? 'unset' : String(v));
    const clamped = view.settingsClamped.map((c) => `${c.field} ${shown(c.asked)} → ${shown(c.used)}`).join(', ');
    out.push(`settings capped by the worker: ${clamped}`);
  }

  const goals = table(['goal', 'text', 'set at seq'], [9, 90, 12]);
  goals.push(['session', view.goals.session?.text ?? '—', view.goals.session?.setAtSeq ?? '—']);
  goals.push(['phase', view.goals.phase?.text ?? '—', view.goals.phase?.setAtSeq ?? '—']);
  out.push('', 'Goals', goals.toString());
  // Views from workers that predate goal statements have no goal history.
  for (const g of view.goalHistory ?? []) {
    const was = g.old === null ? '—' : `"${clip(g.old, 60)}"`;
    out.push(
      `  ${g.level} goal by ${g.reason} at input #${g.seq}${g.callId ? ` (${g.callId})` : ''}: ${was} → "${clip(g.new, 60)}"`,
    );
  }

  const caps = table(['kind', 'id', 'name', 'source'], [10, 30, 40, 50]);
  const kinds = [
    ['skill', view.capabilities.skills],
    ['toolset', view.capabilities.toolsets],
    ['memory', view.capabilities.memories],
  ] as const;
  for (const [kind, list] of kinds) for (const cap of list) caps.push([kind, cap.id, cap.name, cap.source]);
  if (caps.length === 0) caps.push(['—', '(none loaded)', '', '']);
  out.push('', `Capabilities (revision ${view.capabilities.revision})`, caps.toString());
  // Views from workers that predate revision records have none.
  for (const r of view.capabilityRevisions ?? []) {
    const changes = [...r.added.map((a) => `+${a}`), ...r.removed.map((c) => `-${c}`)].join(' ');
    out.push(
      `  revision ${r.revision} by ${r.reason} at input #${r.seq}${r.callId ? ` (${r.callId})` : ''}: ${changes}`,
    );
  }

  if (view.parentSessionId || view.children.length > 0) out.push('', 'Session tree', formatTree(view));

  // Views from workers that predate artifacts have none.
  const artifacts = view.artifacts ?? [];
  if (artifacts.length > 0) {
    const t = table(['artifact', 'kind', 'from', 'input', 'phase'], [50, 10, 36, 7, 7]);
    for (const a of artifacts.slice(-ARTIFACT_ROWS)) {
      t.push([a.uri, a.kind, `${a.tool} (${a.callId})`, `#${a.seq}`, a.phaseIndex]);
    }
    const shown = artifacts.length > ARTIFACT_ROWS ? `, newest ${ARTIFACT_ROWS} shown` : '';
    out.push('', `Artifacts (${artifacts.length}${shown})`, t.toString());
  }
  if (view.usage) out.push('', 'Model usage (Session)', formatUsage(view.usage));
  const lastUsage = decisions.at(-1)?.usage;
  if (lastUsage) out.push('', `Model usage (input #${decisions.at(-1)?.seq})`, formatUsage(lastUsage));

  const recent = table(['seq', 'decision', 'scores', 'capability changes', 'notes', 'took'], [6, 14, 28, 34, 40, 9]);
  for (const record of decisions) {
    const first = record.stages[0];
    const last = record.stages.at(-1);
    const notes = [
      record.degraded ? `degraded: ${record.degraded}` : '',
      record.route ? `routed ${record.route.via}${record.route.to ? ` to ${record.route.to}` : ''}` : '',
      record.route?.reply ? `answered ${record.route.reply.outcome}` : '',
      record.agent ? `agent ${record.agent.outcome}` : '',
      ...(record.agent?.toolCalls ?? []).map(
        (c) =>
          `tool ${c.tool} [${c.status}]${c.policy ? ` (${c.policy.effect}: ${c.policy.rule})` : ''}${c.originalArguments !== null ? ` (arguments edited${c.editedBy ? ` by ${c.editedBy}` : ''})` : ''}`,
      ),
      ...record.fallbacks,
    ].filter(Boolean);
    recent.push([
      record.seq,
      record.decision,
      scores(record),
      diff(record),
      clip(notes.join('; ') || '—', 160),
      first && last ? ms(first.startedAt, record.agent?.endedAt ?? last.endedAt) : '—',
    ]);
  }
  if (decisions.length === 0) recent.push(['—', '(no input yet)', '', '', '', '']);
  out.push('', `Recent decisions (${decisions.length})`, recent.toString());
  const refused = decisions.flatMap((record) => configErrors(record).map((error) => `  #${record.seq}: ${error}`));
  if (refused.length > 0) {
    out.push(
      '',
      `Configuration errors (the model endpoint refused what the harness sent; see harness doctor):`,
      ...refused,
    );
  }
  if (view.pendingApprovals.length > 0 || view.pendingToolCalls.length > 0) {
    const waiting = [
      ...view.pendingApprovals.map((a) => `approval ${a.approvalId}: ${a.tool}(${clip(a.arguments, 80)})`),
      ...view.pendingToolCalls.map((c) => `tool result ${c.resultId ?? c.callId}: ${c.tool}(${clip(c.arguments, 80)})`),
    ];
    out.push('', `Waiting for: ${waiting.join(' | ')} (input #${view.turn?.seq ?? '?'})`);
  }
  const reply = decisions.at(-1)?.agent?.reply;
  if (reply) out.push('', `Last reply (input #${decisions.at(-1)?.seq}):`, ...reply.split('\n').map((l) => `  ${l}`));
  if (view.recentRejections.length > 0) {
    out.push('', `Recent rejections: ${view.recentRejections.map((r) => clip(r.reason, 120)).join(' | ')}`);
  }
  return out.join('\n');
}

/** Usage per role and in all: tokens by kind, cost (blank when no price is known), calls and model time. */
export function formatUsage(usage: UsageTotals): string {
  const rows = table(
    ['role', 'prompt', 'cached', 'completion', 'reasoning', 'cost USD', 'calls', 'model time'],
    [15, 10, 10, 12, 11, 22, 7, 12],
  );
  const row = (name: string, sum: UsageSum) => [
    name,
    sum.promptTokens,
    sum.cachedTokens,
    sum.completionTokens,
    sum.reasoningTokens,
    sum.costUsd === null
      ? '— (no price)'
      : `${sum.costUsd.toFixed(6)}${sum.unpricedCalls > 0 ? ` +${sum.unpricedCalls} unpriced` : ''}`,
    sum.calls,
    `${(sum.latencyMs / 1000).toFixed(2)} s`,
  ];
  for (const [role, sum] of Object.entries(usage.byRole)) rows.push(row(role, sum));
  rows.push(row('total', usage.total));
  // Discarded speculative agent steps: already in `agent` and `total`; this is what they cost unused.
  const ahead = usage.speculative;
  if (ahead) {
    const unknown = ahead.unknown > 0 ? ` (+${ahead.unknown} unknown)` : '';
    rows.push(row(`speculative${unknown}`, ahead.usage));
  }
  return rows.toString();
}

/**
 * Parent, this Session and its sub-sessions with the goal each was created for, whether it is
 * working on a handed-over input, and the last reply it sent back.
 */
export function formatTree(view: SessionView): string {
  const lines: string[] = [];
  let indent = '';
  if (view.parentSessionId) {
    lines.push(`${view.parentSessionId}  (parent)`);
    indent = '└─ ';
  }
  lines.push(`${indent}${view.sessionId}  (this session)`);
  const pad = view.parentSessionId ? '   ' : '';
  view.children.forEach((child, i) => {
    const branch = i === view.children.length - 1 ? '└─' : '├─';
    const requests = `${child.routed} request${child.routed === 1 ? '' : 's'}`;
    const status = child.status === 'working' ? `working on ${child.awaiting}` : 'idle';
    lines.push(`${pad}${branch} ${child.sessionId}  ${clip(child.goal, 60)} · ${requests} · ${status}`);
    const last = child.lastReply;
    if (last) {
      const stem = i === view.children.length - 1 ? '   ' : '│  ';
      const text = last.text === null ? '(no reply)' : clip(last.text.replace(/\s+/g, ' '), 100);
      lines.push(`${pad}${stem}   last reply (#${last.seq}, ${last.outcome}): ${text}`);
    }
  });
  return lines.join('\n');
}

/** `list`: one row per Session. */
export function formatList(rows: SessionSummary[]): string {
  if (rows.length === 0) return 'no sessions match';
  const t = table(['session', 'stage', 'status', 'execution', 'goal', 'parent', 'started']);
  for (const r of rows) {
    t.push([
      r.sessionId,
      r.stage ?? '—',
      r.status ?? '—',
      r.executionStatus,
      clip(r.goal ?? '—', 60),
      r.parent ?? '—',
      r.startTime.toISOString().replace(/\.\d+Z$/, 'Z'),
    ]);
  }
  return t.toString();
}

/** One line per watch event. */
export function formatStage(stage: string, seq: number, view: SessionView): string {
  const queue = view.queueLength > 0 ? ` · ${view.queueLength} queued` : '';
  const waiting = [
    ...view.pendingApprovals.map((a) => `approval ${a.approvalId}: ${a.tool}(${clip(a.arguments, 60)})`),
    ...view.pendingToolCalls.map((c) => `tool result ${c.resultId ?? c.callId}: ${c.tool}(${clip(c.arguments, 60)})`),
  ];
  const pending = waiting.length > 0 ? ` · waiting for ${waiting.join(', ')}` : '';
  return `stage: ${stage}${seq > 0 ? ` (input #${seq})` : ''}${queue}${pending}`;
}

export function formatDecisionLine(record: DecisionRecord): string {
  const agent = record.agent
    ? `agent ${record.agent.outcome}${record.agent.toolCalls.length > 0 ? `, tools ${record.agent.toolCalls.map((c) => `${c.tool}[${c.status}]`).join(' ')}` : ''}`
    : '';
  const extra = [
    record.degraded ? `degraded: ${clip(record.degraded, 100)}` : '',
    record.diff ? diff(record) : '',
    agent,
  ]
    .filter(Boolean)
    .join(' · ');
  return `decision #${record.seq}: ${record.decision} (${scores(record)})${extra ? ` · ${extra}` : ''}`;
}

/** One line per event of the event stream (`harness watch` with a gateway). */
export function formatEvent(event: SessionEvent): string {
  const head = `${event.id.padEnd(6)} ${event.kind}`;
  switch (event.kind) {
    case 'input.bound':
      return `${head}: ${clip(event.text, 100)}`;
    case 'input.merged':
      return `${head}: input #${event.mergedSeq} (${event.messageId}) joined the turn of input #${event.into} (${event.decision})`;
    case 'decision':
      return `${head}: ${event.decision}${event.degraded ? ` (degraded: ${clip(event.degraded, 80)})` : ''}`;
    case 'stage.started':
      return `${head}: ${event.stage}`;
    case 'stage.finished':
      return `${head}: ${event.stage} → ${clip(event.outcome, 80)}`;
    case 'capabilities.changed':
      return `${head}: ${[...event.added.map((a) => `+${a}`), ...event.removed.map((r) => `-${r}`)].join(' ')}${event.reason === 'agent' ? ' (by the agent)' : ''}`;
    case 'goal.changed':
      return `${head}: ${event.level} (${event.reason}) ${event.old === null ? '—' : `"${clip(event.old, 60)}"`} → "${clip(event.new, 60)}"`;
    case 'tool.proposed':
    case 'approval.waiting':
      return `${head}: ${event.tool}(${clip(event.arguments, 80)})${event.kind === 'approval.waiting' ? ` approvalId ${event.approvalId}` : ''}`;
    case 'tool.approved':
    case 'tool.rejected': {
      const edited =
        event.kind === 'tool.approved' && event.originalArguments !== null
          ? ` with edited arguments ${clip(event.arguments ?? '', 80)} (proposed ${clip(event.originalArguments, 80)})`
          : '';
      return `${head}: ${event.tool} ${event.approvalId}${event.by ? ` by ${event.by}` : ''}${edited}${event.note ? `: ${clip(event.note, 80)}` : ''}`;
    }
    case 'tool.started':
      return `${head}: ${event.tool} (${event.callId})`;
    case 'tool.finished':
      return `${head}: ${event.tool} [${event.status}] ${clip(event.output, 80)}`;
    case 'agent.delta':
      return `${head}: ${clip(event.text, 100)}`;
    case 'turn.finished':
      return `${head}: ${event.outcome}${event.reply ? `: ${clip(event.reply, 100)}` : event.reason ? ` (${clip(event.reason, 100)})` : ''}`;
    case 'session.closed':
      return `${head}: ${event.reason}`;
  }
}
