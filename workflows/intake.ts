/**
 * Intake and binding of task inputs: validation, de-duplication by messageId, the seq ledger and
 * the pending queue. Pure functions over SessionState, unit-tested without Temporal.
 */
import { MessageInput, type SessionStart } from './schemas.js';
import { describeIssues, jsonBytes } from './text.js';
import {
  LIMITS,
  SCHEMA_VERSION,
  SessionState,
  keepLast,
  type BoundInput,
  type Goal,
  type PendingInput,
} from './state.js';
import { Settings } from './schemas.js';
import { BUDGET } from './budget.js';

export type IntakeResult =
  | { kind: 'accepted'; seq: number }
  | { kind: 'duplicate'; seq: number }
  | { kind: 'rejected'; reason: string; messageId: string | null };

/** Builds the state of a brand-new Session from its (already validated) start argument. */
export function initialState(start: SessionStart): SessionState {
  const goal = (text: string | undefined): Goal | null => (text ? { text, resources: [], setAtSeq: 0 } : null);
  const sessionGoal = goal(start.goals?.session);
  // A phase goal without a session goal would leave the Session without a responsibility; the phase
  // text then serves as both, as it would for a first input.
  const phaseGoal = goal(start.goals?.phase) ?? sessionGoal;
  return {
    schemaVersion: SCHEMA_VERSION,
    sessionId: start.sessionId,
    parentSessionId: start.parentSessionId ?? null,
    profile: start.profile ?? 'default',
    settings: Settings.parse(start.settings ?? {}),
    status: 'active',
    goals: { session: sessionGoal ?? phaseGoal, phase: phaseGoal },
    capabilities: { skills: [], toolsets: [], memories: [], revision: 0 },
    phases: phaseGoal
      ? [{ index: 0, goal: phaseGoal, startedAtSeq: 0, endedAtSeq: null, compaction: 'open', summary: null }]
      : [],
    nextSeq: 1,
    boundSeq: 0,
    queue: [],
    recent: [],
    history: [],
    decisions: [],
    rejections: [],
    outOfScope: [],
    children: [],
    controlEvents: [],
    recentControl: [],
    counts: { accepted: 0, duplicates: 0, rejected: 0, bound: 0, controlEvents: 0, byDecision: {} },
    run: 1,
  };
}

/** Parses carried state. Older schema versions are migrated here when they exist. */
export function restoreState(raw: unknown): { ok: true; state: SessionState } | { ok: false; reason: string } {
  const parsed = SessionState.safeParse(raw);
  if (!parsed.success) return { ok: false, reason: describeIssues(parsed.error) };
  return { ok: true, state: parsed.data };
}

function messageIdOf(raw: unknown): string | null {
  if (raw && typeof raw === 'object' && 'messageId' in raw) {
    const id = raw.messageId;
    if (typeof id === 'string') return id.slice(0, 200);
  }
  return null;
}

function queuedBytes(state: SessionState): number {
  return state.queue.reduce((sum, p) => sum + jsonBytes(p), 0);
}

/** The key an input is de-duplicated by: a handed-over input is keyed by its origin too. */
export function dedupeKey(message: { messageId: string; routed?: { fromSessionId: string } | null }): string {
  return message.routed ? `routed:${message.routed.fromSessionId}:${message.messageId}` : message.messageId;
}

/** The seq an earlier input with this de-duplication key got, if it is still remembered. */
export function seqOfRecent(state: SessionState, key: string): number | undefined {
  for (let i = state.recent.length - 1; i >= 0; i--) {
    const entry = state.recent[i];
    if (entry && entry[0] === key) return entry[1];
  }
  return undefined;
}

/**
 * Keeps the de-duplication memory within settings.dedupeWindow by forgetting the oldest ids of
 * inputs already bound. Ids of queued inputs are never forgotten, however many are waiting.
 */
function forgetBoundIds(state: SessionState): void {
  while (state.recent.length > state.settings.dedupeWindow && (state.recent[0]?.[1] ?? 0) <= state.boundSeq) {
    state.recent.shift();
  }
}

type Checked =
  { ok: true; message: MessageInput; key: string; earlier: number | undefined } | { ok: false; reason: string };

/** Parses and checks a raw `message` payload once: its de-duplication key, or why it is refused. */
function check(state: SessionState, raw: unknown): Checked {
  const parsed = MessageInput.safeParse(raw);
  if (!parsed.success) return { ok: false, reason: `invalid message: ${describeIssues(parsed.error)}` };
  const key = dedupeKey(parsed.data);
  const earlier = seqOfRecent(state, key);
  if (earlier === undefined) {
    if (state.status === 'closed') return { ok: false, reason: 'session is closed and accepts no new messages' };
    if (queuedBytes(state) + jsonBytes(parsed.data) > BUDGET.queue) {
      return { ok: false, reason: `session queue is full (${state.queue.length} inputs waiting); retry later` };
    }
  }
  return { ok: true, message: parsed.data, key, earlier };
}

/**
 * Why a message would be refused, or null if it would be accepted (or is a duplicate). Used by the
 * `submit` update's validator so a bad update never reaches history.
 */
export function refusal(state: SessionState, raw: unknown): string | null {
  const checked = check(state, raw);
  return checked.ok ? null : checked.reason;
}

/**
 * Records a raw `message` payload: rejected with a reason, recognised as a duplicate, or accepted
 * with the next seq and queued. Never throws: bad data must not fail a workflow task.
 */
export function intake(state: SessionState, raw: unknown, via: PendingInput['via'], now: number): IntakeResult {
  const checked = check(state, raw);
  if (!checked.ok) {
    const messageId = messageIdOf(raw);
    state.rejections.push({ at: now, via, messageId, reason: checked.reason });
    keepLast(state.rejections, LIMITS.rejections);
    state.counts.rejected++;
    return { kind: 'rejected', reason: checked.reason, messageId };
  }
  const { message, key, earlier } = checked;
  if (earlier !== undefined) {
    state.counts.duplicates++;
    return { kind: 'duplicate', seq: earlier };
  }
  const seq = state.nextSeq++;
  state.queue.push({
    seq,
    messageId: message.messageId,
    text: message.text,
    resources: message.resources ?? [],
    from: message.from ?? null,
    receivedAt: now,
    via,
    routed: message.routed ?? null,
  });
  state.recent.push([key, seq]);
  forgetBoundIds(state);
  state.counts.accepted++;
  return { kind: 'accepted', seq };
}

/** Takes the next queued input and appends it to history as a fact, in consumption order. */
export function bindNext(state: SessionState, now: number): BoundInput | undefined {
  const next = state.queue.shift();
  if (!next) return undefined;
  const bound: BoundInput = {
    ...next,
    boundAt: now,
    phaseIndex: currentPhaseIndex(state),
    decision: null,
    reply: null,
  };
  state.boundSeq = next.seq;
  state.counts.bound++;
  state.history.push(bound);
  keepLast(state.history, LIMITS.history);
  return bound;
}

export function currentPhaseIndex(state: SessionState): number {
  return state.phases.at(-1)?.index ?? 0;
}
