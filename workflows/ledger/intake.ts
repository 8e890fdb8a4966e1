/**
 * Intake and binding of task inputs: validation, de-duplication by messageId, the seq ledger and
 * the pending queue. Pure functions over SessionState, unit-tested without Temporal.
 *
 * De-duplication has two parts, each sized on its own: every queued input (found through the queue
 * itself, however long the backlog) and a window of the most recently bound inputs (`state.recent`,
 * bounded by `settings.dedupeWindow` and a byte share). An in-memory index over both, and a running
 * byte count of the queue, are derived from state on first use in a run, so the work per signal does
 * not grow with the queue. Every change to `queue` and `recent` goes through this module, which keeps
 * the index in step.
 *
 * The window itself lives in the index while the run lasts: on first use its entries move from
 * `state.recent` into the index's map (insertion order is the list's order, oldest first), and
 * `carryRecent` writes them back when the state is carried (workflows/run/carried.ts, just before
 * continue-as-new). A `[key, seq]` pair per bound input beside the map entry doubled what the
 * window held in memory (up to `dedupeWindow`, 2,000 by default, of a cached Session's heap).
 */
import { emit } from './events.js';
import { BUDGET } from '../../contract/budget.js';
import { MessageInput, type WhileBusy } from '../../contract/messages.js';
import {
  LIMITS,
  keepLast,
  type BoundInput,
  type PendingInput,
  type Rejection,
  type SessionState,
  type VerifiedClaims,
} from '../../contract/state.js';
import { clipBytes, describeIssues, jsonBytes, utf8Length } from '../../contract/text.js';
import { undecodableReason } from '../../contract/undecodable.js';

/** Why an input was refused; counted per cause in `counts.rejectedBy`. */
export type RejectionCause =
  'invalid' | 'queue-full' | 'closed' | 'unknown-id' | 'unauthenticated' | 'undecodable' | 'busy';

/**
 * What a new message does because a turn runs as it arrives (control/while-busy.ts decides): null
 * when no turn runs, or in runs recorded before `while-busy`.
 */
export type BusyMode = (message: MessageInput) => { mode: WhileBusy; turn: number } | null;

export type IntakeResult =
  | { kind: 'accepted'; seq: number }
  | { kind: 'duplicate'; seq: number }
  | { kind: 'rejected'; reason: string; messageId: string | null; cause: RejectionCause };

/**
 * The de-duplication key: origin and messageId. A user's input has no origin; a handed-over input
 * has its sender's sessionId, which cannot contain ':', so no user id can imitate a routed key.
 */
function keyOf(origin: string | null, messageId: string): string {
  return `${origin ?? ''}:${messageId}`;
}

/** The key an input is de-duplicated by. */
export function dedupeKey(message: { messageId: string; routed?: { fromSessionId: string } | null }): string {
  return keyOf(message.routed?.fromSessionId ?? null, message.messageId);
}

/**
 * The request key a sub-session id is derived from. Unchanged since routing shipped, so a retried
 * hand-over of an older request still finds the same sub-session.
 */
export function requestKeyOf(message: { messageId: string; routed?: { fromSessionId: string } | null }): string {
  return message.routed ? `routed:${message.routed.fromSessionId}:${message.messageId}` : message.messageId;
}

interface IntakeIndex {
  queued: Map<string, number>;
  /** The de-duplication window of bound inputs, oldest first; `state.recent` is empty meanwhile. */
  bound: Map<string, number>;
  queueBytes: number;
  recentBytes: number;
}

// Derived from state and never carried: rebuilt on first use in each run.
const indexes = new WeakMap<SessionState, IntakeIndex>();

/** Approximate bytes one `recent` entry adds to the carried JSON. */
const recentEntryBytes = (key: string): number => utf8Length(key) + 16;

function indexOf(state: SessionState): IntakeIndex {
  let index = indexes.get(state);
  if (!index) {
    index = { queued: new Map(), bound: new Map(), queueBytes: 0, recentBytes: 0 };
    for (const pending of state.queue) {
      index.queued.set(dedupeKey(pending), pending.seq);
      index.queueBytes += jsonBytes(pending);
    }
    for (const [key, seq] of state.recent) {
      // A key listed twice (no code binds one twice, but carried state is input) keeps its newest place.
      if (index.bound.delete(key)) index.recentBytes -= recentEntryBytes(key);
      index.bound.set(key, seq);
      index.recentBytes += recentEntryBytes(key);
    }
    state.recent.length = 0;
    indexes.set(state, index);
  }
  return index;
}

/** The seq an earlier input with this de-duplication key got, if it is queued or recently bound. */
export function seqOfRecent(state: SessionState, key: string): number | undefined {
  const index = indexOf(state);
  return index.queued.get(key) ?? index.bound.get(key);
}

/** Bytes of the queued inputs' JSON, kept as a running count. */
export function queuedBytes(state: SessionState): number {
  return indexOf(state).queueBytes;
}

/** Remembers a bound input's key, forgetting the oldest beyond the window's count or byte share. */
function rememberBound(state: SessionState, key: string, seq: number): void {
  const index = indexOf(state);
  // A window written out by carryRecent is stale once the index changes.
  state.recent.length = 0;
  if (index.bound.delete(key)) index.recentBytes -= recentEntryBytes(key);
  index.bound.set(key, seq);
  index.recentBytes += recentEntryBytes(key);
  while (index.bound.size > state.settings.dedupeWindow || index.recentBytes > BUDGET.recent) {
    if (!forgetOldest(index)) break;
  }
}

/** Forgets the window's oldest entry; false when it is empty. */
function forgetOldest(index: IntakeIndex): boolean {
  const oldest = index.bound.keys().next();
  if (oldest.done) return false;
  index.bound.delete(oldest.value);
  index.recentBytes -= recentEntryBytes(oldest.value);
  return true;
}

/**
 * Writes the de-duplication window into `state.recent`, oldest first, for carrying it: the run keeps
 * it in the index, and the list is empty otherwise. Called before the carried state is measured.
 */
export function carryRecent(state: SessionState): void {
  const index = indexOf(state);
  state.recent.length = 0;
  for (const entry of index.bound) state.recent.push(entry);
}

/** Forgets the oldest bound ids (the carried-state cap's last resort), keeping the index and a carried list in step. */
export function forgetOldestBound(state: SessionState, count: number): void {
  const index = indexOf(state);
  for (let i = 0; i < count && forgetOldest(index); i++);
  state.recent.splice(0, count);
}

function messageIdOf(raw: unknown): string | null {
  if (raw && typeof raw === 'object' && 'messageId' in raw) {
    const id = raw.messageId;
    if (typeof id === 'string') return id.slice(0, 200);
  }
  return null;
}

type Checked =
  | { ok: true; message: MessageInput; key: string; earlier: number | undefined }
  | { ok: false; reason: string; cause: RejectionCause };

/** Parses and checks a raw `message` payload once: its de-duplication key, or why it is refused. */
function check(state: SessionState, raw: unknown): Checked {
  // The worker's codec could not decode the payload (contract/undecodable.ts): say so, with its size.
  const undecodable = undecodableReason(raw);
  if (undecodable !== null) return { ok: false, reason: clipBytes(undecodable, BUDGET.reason), cause: 'undecodable' };
  const parsed = MessageInput.safeParse(raw);
  if (!parsed.success) {
    const reason = clipBytes(`invalid message: ${describeIssues(parsed.error)}`, BUDGET.reason);
    return { ok: false, reason, cause: 'invalid' };
  }
  const key = dedupeKey(parsed.data);
  const earlier = seqOfRecent(state, key);
  if (earlier === undefined) {
    if (state.status === 'closed') {
      return { ok: false, reason: 'session is closed and accepts no new messages', cause: 'closed' };
    }
    if (queuedBytes(state) + jsonBytes(parsed.data) > BUDGET.queue) {
      const reason = `session queue is full (${state.queue.length} inputs waiting); retry later`;
      return { ok: false, reason, cause: 'queue-full' };
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
 * The parsed message when it would be accepted as a new input now, or null when it would be refused
 * or is a duplicate: only a new input is worth checking a signature for before `intake`.
 */
export function newMessage(state: SessionState, raw: unknown): MessageInput | null {
  const checked = check(state, raw);
  return checked.ok && checked.earlier === undefined ? checked.message : null;
}

/**
 * Records a raw `message` payload: rejected with a reason, recognised as a duplicate, or accepted
 * with the next seq and queued. Never throws: bad data must not fail a workflow task. With
 * `verified` (its claims checked on arrival), the input is queued with the verified `from`, `routed`
 * and `note` and without its signature; it is still de-duplicated by what it claimed, as a retried
 * hand-over is. With `busyMode`, a new message that arrives while a turn runs is refused (`reject`,
 * cause `busy`, no seq used) or queued marked to merge into or interrupt that turn.
 */
export function intake(
  state: SessionState,
  raw: unknown,
  via: PendingInput['via'],
  now: number,
  verified?: VerifiedClaims,
  busyMode?: BusyMode,
): IntakeResult {
  const checked = check(state, raw);
  if (!checked.ok) {
    const messageId = messageIdOf(raw);
    recordRejection(state, { at: now, via, messageId, reason: checked.reason }, checked.cause);
    return { kind: 'rejected', reason: checked.reason, messageId, cause: checked.cause };
  }
  const { message, key, earlier } = checked;
  if (earlier !== undefined) {
    state.counts.duplicates++;
    return { kind: 'duplicate', seq: earlier };
  }
  const busy = busyMode?.(message) ?? null;
  if (busy?.mode === 'reject') {
    const reason = `session is busy with input #${busy.turn} and refuses messages meanwhile (whileBusy: reject); send it again once the turn has ended`;
    recordRejection(state, { at: now, via, messageId: message.messageId, reason }, 'busy');
    return { kind: 'rejected', reason, messageId: message.messageId, cause: 'busy' };
  }
  const seq = state.nextSeq++;
  const claims = verified ?? { from: message.from ?? null, routed: message.routed ?? null, note: message.note ?? null };
  const pending: PendingInput = {
    seq,
    messageId: message.messageId,
    text: message.text,
    resources: message.resources ?? [],
    from: claims.from,
    receivedAt: now,
    via,
    routed: claims.routed,
    note: claims.note,
    ...(verified ? { claimsCheckedAt: now } : message.signature ? { signature: message.signature } : {}),
    ...(busy && busy.mode !== 'enqueue' ? { busy: { mode: busy.mode, turn: busy.turn } } : {}),
  };
  const index = indexOf(state);
  state.queue.push(pending);
  index.queued.set(key, seq);
  index.queueBytes += jsonBytes(pending);
  state.counts.accepted++;
  return { kind: 'accepted', seq };
}

/**
 * Takes the next queued input and appends it to history as a fact, in consumption order. With
 * `announce: false` the caller emits `input.bound` itself (`announceBound`), once what the input
 * claims has been checked.
 */
export function bindNext(state: SessionState, now: number, { announce = true } = {}): BoundInput | undefined {
  const next = state.queue.shift();
  if (!next) return undefined;
  const index = indexOf(state);
  const key = dedupeKey(next);
  index.queued.delete(key);
  index.queueBytes -= jsonBytes(next);
  rememberBound(state, key, next.seq);
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
  if (announce) announceBound(state, bound, now);
  return bound;
}

/** The `input.bound` event: the input's identity and route as the Session trusts them. */
export function announceBound(state: SessionState, bound: BoundInput, now: number): void {
  emit(
    state,
    {
      kind: 'input.bound',
      messageId: bound.messageId,
      text: bound.text,
      from: bound.from,
      routedFrom: bound.routed?.fromSessionId ?? null,
    },
    now,
  );
}

export function currentPhaseIndex(state: SessionState): number {
  return state.phases.at(-1)?.index ?? 0;
}

/** Records a refused input or control payload with a clipped reason, and counts it by cause. */
export function recordRejection(state: SessionState, rejection: Rejection, cause: RejectionCause): void {
  state.rejections.push({
    ...rejection,
    messageId: rejection.messageId === null ? null : clipBytes(rejection.messageId, 256),
    reason: clipBytes(rejection.reason, BUDGET.reason),
  });
  keepLast(state.rejections, LIMITS.rejections);
  state.counts.rejected++;
  state.counts.rejectedBy[cause] = (state.counts.rejectedBy[cause] ?? 0) + 1;
}
