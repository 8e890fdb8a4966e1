/**
 * The Session's event stream: what a subscriber (SessionClient.events, `harness watch`, the HTTP
 * gateway's Server-Sent Events) sees as it happens.
 *
 * Durable events are appended by the workflow to a bounded log in its state (`events`), so they are
 * exactly as durable as the Session and replay-safe; the worker also pushes each one live through
 * its event publisher when the workflow task that made it completes. A subscriber that reconnects
 * with the last id it saw reads the rest from the log (the `events` query), then follows the live
 * push, de-duplicating by id. Agent text deltas are best effort: pushed live by the agent step, never
 * logged; the final text is always in the durable `turn.finished` event and the decision record.
 *
 * Pure module: safe to import from workflow code.
 */
import type { Sinks } from '@temporalio/workflow';
import { z } from 'zod';
import { GoalChangeReason, GoalLevel } from './goals.js';
import { Sender } from './messages.js';
import { ApprovalReason } from './transcript.js';

/** Every event kind, durable or best effort. */
export const EVENT_KINDS = [
  'input.bound',
  'input.merged',
  'decision',
  'stage.started',
  'stage.finished',
  'capabilities.changed',
  'goal.changed',
  'tool.proposed',
  'approval.waiting',
  'tool.approved',
  'tool.rejected',
  'tool.started',
  'tool.finished',
  'agent.delta',
  'turn.finished',
  'session.closed',
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** The only kind that is best effort (never in the durable log). */
export const BEST_EFFORT_KINDS: readonly EventKind[] = ['agent.delta'];

/** Bytes kept of a text field in an event (message text, arguments, tool output, reply). */
export const EVENT_TEXT_BYTES = 2048;

const base = {
  /**
   * `<seq>.<ordinal>`: the seq of the input the Session was working on (0 before the first), then
   * the event's place among that input's events. Ids increase in the order events happened. A
   * best-effort delta's id is `<seq>.<ordinal>~<n>`: after the durable event it follows, never a
   * resume point.
   */
  id: z.string(),
  seq: z.number().int().nonnegative(),
  /**
   * The id of the durable event before this one (null for a Session's first). A subscriber whose
   * last id is older than the oldest kept event's `prev` missed events the bounded log dropped.
   */
  prev: z.string().nullable(),
  /** Workflow time (ms since the epoch) for durable events; wall time for deltas. */
  at: z.number(),
};

const call = { callId: z.string(), tool: z.string() };

/**
 * What a person deciding on a waiting call needs besides the call (absent from events and views of
 * older workers): why it waits, what the user asked in the input it serves, and the words the agent
 * wrote beside the call (its stated reason), each clipped to APPROVAL_CONTEXT_CHARS.
 */
export const approvalContext = {
  why: ApprovalReason.optional(),
  /** The input's text (the user's message) the turn is answering; null when no longer kept. */
  userMessage: z.string().nullable().optional(),
  /** The agent's text in the step that made the call; null when it wrote none. */
  agentText: z.string().nullable().optional(),
};
/** Characters kept of `userMessage` and `agentText` beside a waiting call. */
export const APPROVAL_CONTEXT_CHARS = 500;

export const SessionEvent = z.discriminatedUnion('kind', [
  z.object({
    ...base,
    kind: z.literal('input.bound'),
    messageId: z.string(),
    text: z.string(),
    from: Sender.nullable(),
    /** Set when another Session handed the input over. */
    routedFrom: z.string().nullable(),
  }),
  z.object({
    ...base,
    kind: z.literal('input.merged'),
    messageId: z.string(),
    /** The merged input's own seq (the event's `seq` is the running turn's input). */
    mergedSeq: z.number().int(),
    /** The input whose running turn it joined. */
    into: z.number().int(),
    /** Its relevance decision: `continue`, `conflict`, `uncertain` or `degraded`. */
    decision: z.string(),
  }),
  z.object({
    ...base,
    kind: z.literal('decision'),
    /** One of DECISIONS (contract/state.ts, which imports this module). */
    decision: z.string(),
    scores: z.object({ phase: z.number(), session: z.number() }).nullable(),
    degraded: z.string().nullable(),
  }),
  z.object({ ...base, kind: z.literal('stage.started'), stage: z.string() }),
  z.object({
    ...base,
    kind: z.literal('stage.finished'),
    stage: z.string(),
    /** `ok`, `fallback: <why>` or `skipped: <why>`, as in the decision record. */
    outcome: z.string(),
  }),
  z.object({
    ...base,
    kind: z.literal('capabilities.changed'),
    added: z.array(z.string()),
    removed: z.array(z.string()),
    revision: z.number().int(),
    /** `agent` for the agent's `capabilities_load` / `capabilities_unload`; absent (orchestration) before it existed. */
    reason: z.enum(['orchestration', 'agent']).optional(),
  }),
  z.object({
    ...base,
    kind: z.literal('goal.changed'),
    level: GoalLevel,
    reason: GoalChangeReason,
    old: z.string().nullable(),
    new: z.string(),
  }),
  z.object({ ...base, kind: z.literal('tool.proposed'), ...call, arguments: z.string(), step: z.number().int() }),
  z.object({
    ...base,
    kind: z.literal('approval.waiting'),
    ...call,
    approvalId: z.string(),
    argumentsHash: z.string(),
    arguments: z.string(),
    ...approvalContext,
  }),
  z.object({
    ...base,
    kind: z.literal('tool.approved'),
    ...call,
    approvalId: z.string(),
    by: z.string().nullable(),
    note: z.string().nullable(),
    /** The arguments the tool runs with: the approver's edit, or the model's (absent in events recorded before edits). */
    arguments: z.string().optional(),
    /** The model's arguments when the approver edited them; null when unedited. */
    originalArguments: z.string().nullable().default(null),
  }),
  z.object({
    ...base,
    kind: z.literal('tool.rejected'),
    ...call,
    approvalId: z.string(),
    by: z.string().nullable(),
    note: z.string().nullable(),
  }),
  z.object({ ...base, kind: z.literal('tool.started'), ...call }),
  z.object({
    ...base,
    kind: z.literal('tool.finished'),
    ...call,
    status: z.string(),
    output: z.string(),
  }),
  z.object({
    ...base,
    kind: z.literal('agent.delta'),
    /** The agent step within the turn (1-based) whose text this continues. */
    step: z.number().int(),
    /** The next piece of that step's text; pieces of one attempt, joined in order, are its text so far. */
    text: z.string(),
    /**
     * The activity attempt that streamed it (1 first). A retried step streams its text again from the
     * start: a consumer drops what an earlier attempt of the same step showed.
     */
    attempt: z.number().int().positive().optional(),
    /**
     * From a speculative step, started before the input's decision: followers hold it until that
     * input's `decision` event, then show it if the decision is `continue` and drop it otherwise.
     */
    speculative: z.boolean().optional(),
    /**
     * Replayed to a follower that subscribed mid-step: a piece of the step's text published before it
     * joined, kept by the publisher (bounded) so the reply so far is not lost. Shown like any delta.
     */
    catchUp: z.boolean().optional(),
  }),
  z.object({
    ...base,
    kind: z.literal('turn.finished'),
    /** One of TURN_OUTCOMES (contract/state.ts). */
    outcome: z.string(),
    reason: z.string().nullable(),
    reply: z.string().nullable(),
  }),
  z.object({ ...base, kind: z.literal('session.closed'), reason: z.string() }),
]);
export type SessionEvent = z.infer<typeof SessionEvent>;
/** A durable event as the workflow appends it: everything but its id, seq, prev and time. */
export type EventBody = SessionEvent extends infer E
  ? E extends SessionEvent
    ? Omit<E, 'id' | 'seq' | 'at' | 'prev'>
    : never
  : never;

/** Argument of the `events` query: the events after this id (all that are kept when absent). */
export const EventsRequest = z
  .object({
    after: z
      .string()
      .regex(/^\d+\.\d+$/, 'after must be an event id like 12.3')
      .optional(),
    limit: z.number().int().positive().max(500).optional(),
  })
  .strict();
export type EventsRequest = z.infer<typeof EventsRequest>;

/** Result of the `events` query. */
export const EventsPage = z.object({
  events: z.array(SessionEvent),
  /**
   * True when events after `after` were dropped from the bounded log before this read: the
   * subscriber missed some and should re-read the Session's snapshot.
   */
  gap: z.boolean(),
  /** The newest durable id so far (`0.0` style; null before the first event). */
  lastId: z.string().nullable(),
  /** True when more events follow `events` (the limit cut the page). */
  more: z.boolean(),
});
export type EventsPage = z.infer<typeof EventsPage>;

/** An event id as numbers, for ordering: `12.3` → [12, 3]. Deltas (`12.3~4`) order after `12.3`. */
export function parseEventId(id: string): [seq: number, ordinal: number, delta: number] | null {
  const match = /^(\d+)\.(\d+)(?:~(\d+))?$/.exec(id);
  if (!match) return null;
  return [Number(match[1]), Number(match[2]), match[3] === undefined ? -1 : Number(match[3])];
}

/** Negative when event id `a` comes before `b`, positive after, 0 when equal (ids must parse). */
export function compareEventIds(a: string, b: string): number {
  const x = parseEventId(a);
  const y = parseEventId(b);
  if (!x || !y) throw new Error(`not an event id: ${x ? b : a}`);
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/**
 * The workflow sink that pushes each durable event live as it is appended. Sinks run on the worker
 * after the workflow task that called them, never during replay, so a worker that replays a
 * Session after a restart does not push its old events again.
 */
export interface EventSinks extends Sinks {
  events: { publish(sessionId: string, event: SessionEvent): void };
}

/**
 * Where live events arrive: the worker's publisher on one side, SessionClient.events on the other.
 * A feed is best effort; the durable log fills whatever it misses.
 */
export interface EventFeed {
  /** Calls `listener` with each event pushed for the Session until the returned function is called. */
  subscribe(
    sessionId: string,
    listener: (event: SessionEvent | EventHint) => void,
    /** The last id the subscriber has; a feed that can replay (the gateway's) starts after it. */
    after?: string,
  ): () => void;
  /** Calls `listener` with every Session's pushed events (the approval inbox follows them all). */
  subscribeAll?(listener: (sessionId: string, event: SessionEvent | EventHint) => void): () => void;
}

/** The worker's side of a feed. */
export interface EventPublisher extends EventFeed {
  publish(sessionId: string, event: SessionEvent): void;
  close(): Promise<void>;
}

/**
 * Pushed instead of an event too large for the transport (PostgreSQL NOTIFY takes 8,000 bytes):
 * the subscriber reads it from the log.
 */
export interface EventHint {
  hint: true;
  id: string;
}
