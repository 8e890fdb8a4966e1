/**
 * The durable event log: each event is appended to `state.events` (bounded like every carried list)
 * and pushed live through the worker's event sink. Appending is pure state, so it needs no patch:
 * it issues no command, and a replay rebuilds the same log with the same ids.
 */
import { ApplicationFailure, inWorkflowContext, proxySinks } from '@temporalio/workflow';
import {
  EVENT_TEXT_BYTES,
  EventsRequest,
  compareEventIds,
  type EventBody,
  type EventSinks,
  type EventsPage,
  type SessionEvent,
} from '../../contract/events.js';
import { FAILURE } from '../../contract/failures.js';
import { LIMITS, keepLast, type PendingCall, type SessionState } from '../../contract/state.js';
import { clipBytes, describeIssues } from '../../contract/text.js';

const { events: sink } = proxySinks<EventSinks>();

/** Text fields clipped to EVENT_TEXT_BYTES, so that one event stays small on the wire and in state. */
const TEXT_FIELDS = ['text', 'arguments', 'output', 'reply', 'note', 'reason', 'degraded'] as const;

/** The id of the Session's newest durable event, null before its first. */
export function lastEventId(state: Pick<SessionState, 'lastEvent'>): string | null {
  return state.lastEvent ? `${state.lastEvent[0]}.${state.lastEvent[1]}` : null;
}

/** Appends a durable event to the Session's log and pushes it live. Returns the event. */
export function emit(state: SessionState, body: EventBody, at: number = Date.now()): SessionEvent {
  // The input the Session works on: the running turn's, even after an input merged into it was bound.
  const seq = state.turn?.seq ?? state.boundSeq;
  const ordinal = state.lastEvent && state.lastEvent[0] === seq ? state.lastEvent[1] + 1 : 0;
  const clipped: Record<string, unknown> = { ...body };
  for (const field of TEXT_FIELDS) {
    const value = clipped[field];
    if (typeof value === 'string') clipped[field] = clipBytes(value, EVENT_TEXT_BYTES);
  }
  const prev = lastEventId(state);
  const event = { ...clipped, id: `${seq}.${ordinal}`, seq, prev, at } as SessionEvent;
  state.lastEvent = [seq, ordinal];
  state.events.push(event);
  keepLast(state.events, LIMITS.events);
  // Pure modules that emit are unit-tested outside a workflow; there is nobody to push to.
  if (inWorkflowContext()) sink.publish(state.sessionId, event);
  return event;
}

/** Most events one `events` query returns when it names no limit. */
const PAGE_DEFAULT = 200;

/**
 * The `events` query: the kept events after `after` (all kept ones without it), oldest first, and
 * whether the bounded log dropped some the subscriber never saw.
 */
export function eventsPage(state: SessionState, raw: unknown): EventsPage {
  const parsed = EventsRequest.safeParse(raw ?? {});
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(
      `invalid events request: ${describeIssues(parsed.error)}`,
      FAILURE.InvalidRequest,
    );
  }
  const { after, limit = PAGE_DEFAULT } = parsed.data;
  const newer = after === undefined ? state.events : state.events.filter((e) => compareEventIds(e.id, after) > 0);
  const oldest = state.events[0];
  const gap =
    oldest !== undefined && oldest.prev !== null && (after === undefined || compareEventIds(oldest.prev, after) > 0);
  return {
    events: newer.slice(0, limit),
    gap,
    lastId: lastEventId(state),
    more: newer.length > limit,
  };
}

/** Reports a call that is done (its status and the output the model sees). */
export function emitCallFinished(state: SessionState, call: PendingCall): void {
  emit(state, {
    kind: 'tool.finished',
    callId: call.callId,
    tool: call.tool,
    status: call.result ?? 'interrupted',
    output: call.output ?? '',
  });
}
