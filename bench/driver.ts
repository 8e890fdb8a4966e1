/**
 * Driving the two workflows the same way: start, signal `message`, poll the `decisions` query, send
 * `close`; and reading their real histories (events by type, billable actions, carried bytes).
 */
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import proto from '@temporalio/proto';

export type FlavorName = 'session' | 'baseline';

/** What both workflows answer: `message` and `command` signals and a `decisions` query with `{ seq, decision }`. */
export interface Flavor {
  name: FlavorName;
  workflowType: string;
  workflowId(id: string): string;
  args(id: string, settings?: Record<string, unknown>): unknown[];
}

export const FLAVORS: Record<FlavorName, Flavor> = {
  session: {
    name: 'session',
    workflowType: 'session',
    workflowId: (id) => `session:${id}`,
    args: (id, settings) => [{ sessionId: id, ...(settings ? { settings } : {}) }],
  },
  baseline: {
    name: 'baseline',
    workflowType: 'benchBaseline',
    workflowId: (id) => `bench-baseline:${id}`,
    args: () => [{}],
  },
};

/** The source article's conversation: with LocalModels these give initialize, new phase, continue, out of scope. */
export const TEXT = {
  goal: 'Research ComfyUI and deliver a Markdown guide',
  newPhase: 'Convert the Markdown we just created to Word',
  continue: 'Continue',
  outOfScope: "Also check tomorrow's weather",
} as const;

export interface Driven {
  flavor: Flavor;
  handle: WorkflowHandleWithFirstExecutionRunId;
  /** Messages sent so far (= the seq of the last one, as both workflows number inputs from 1). */
  sent: number;
}

export async function start(
  client: Client,
  taskQueue: string,
  flavor: Flavor,
  settings?: Record<string, unknown>,
  id = randomUUID().slice(0, 8),
) {
  const handle = await client.workflow.start(flavor.workflowType, {
    workflowId: flavor.workflowId(`bench-${id}`),
    taskQueue,
    args: flavor.args(`bench-${id}`, settings),
  });
  return { flavor, handle, sent: 0 } satisfies Driven;
}

/**
 * Starts a workflow with its first input by signal-with-start, as the project's client sends a
 * Session's first message (client/session-client.ts `send`): the start and the message then reach
 * the workflow's first task together, whatever the worker's timing.
 */
export async function startWith(
  client: Client,
  taskQueue: string,
  flavor: Flavor,
  text: string,
  id = randomUUID().slice(0, 8),
): Promise<Driven> {
  const workflowId = flavor.workflowId(`bench-${id}`);
  const started = await client.workflow.signalWithStart(flavor.workflowType, {
    workflowId,
    taskQueue,
    args: flavor.args(`bench-${id}`),
    signal: 'message',
    signalArgs: [{ messageId: `m1-${randomUUID().slice(0, 6)}`, text }],
  });
  const handle = client.workflow.getHandle(workflowId, undefined, { firstExecutionRunId: started.signaledRunId });
  return { flavor, handle: Object.assign(handle, { firstExecutionRunId: started.signaledRunId }), sent: 1 };
}

export async function send(d: Driven, text: string): Promise<number> {
  const seq = ++d.sent;
  await d.handle.signal('message', { messageId: `m${seq}-${randomUUID().slice(0, 6)}`, text });
  return seq;
}

export function close(d: Driven): Promise<void> {
  return d.handle.signal('command', { commandId: `close-${randomUUID().slice(0, 6)}`, name: 'close' });
}

export interface SeenDecision {
  seq: number;
  decision: string;
}

/** Polls the `decisions` query until the record for `seq` (or a later one) is visible. */
export async function decided(d: Driven, seq: number, timeoutMs = 120_000, pollMs = 2): Promise<SeenDecision> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [last] = await d.handle.query<SeenDecision[], [{ limit: number }]>('decisions', { limit: 1 });
    if (last && last.seq >= seq) return last;
    if (Date.now() > deadline) throw new Error(`${d.flavor.name}: no decision for seq ${seq} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

const { temporal } = proto;
const EventType = temporal.api.enums.v1.EventType;
export type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

/** The events of one run, oldest first. */
export async function runEvents(client: Client, workflowId: string, runId?: string): Promise<HistoryEvent[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return history.events ?? [];
}

const IN_FLIGHT = new Set([
  EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
  EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
  EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
]);

/** Waits until the run's history stops growing: nothing in flight and no new event for 150 ms. */
export async function settledEvents(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  let events = await runEvents(client, workflowId);
  for (;;) {
    await new Promise((r) => setTimeout(r, 150));
    const again = await runEvents(client, workflowId);
    const last = again.at(-1)?.eventType ?? EventType.EVENT_TYPE_UNSPECIFIED;
    if (again.length === events.length && !IN_FLIGHT.has(last)) return again;
    events = again;
  }
}

export function eventName(event: HistoryEvent): string {
  return (EventType[event.eventType ?? 0] ?? 'UNKNOWN').replace(/^EVENT_TYPE_/, '');
}

export function countByType(events: HistoryEvent[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const e of events) counts[eventName(e)] = (counts[eventName(e)] ?? 0) + 1;
  return counts;
}

/**
 * Billable actions in a slice of history, by the Temporal Cloud Actions page
 * (https://docs.temporal.io/cloud/actions, its "History Event Type" columns):
 * - workflow started: WORKFLOW_EXECUTION_STARTED (client start, and the new run of a continue-as-new);
 * - child workflow: START_CHILD_WORKFLOW_EXECUTION_INITIATED counts 2 (the intent and the start);
 * - signal: WORKFLOW_EXECUTION_SIGNALED (a signal sent by a workflow counts in the signalled history only);
 * - update: WORKFLOW_EXECUTION_UPDATE_ACCEPTED (rejected updates count too but leave no event);
 * - activity: ACTIVITY_TASK_SCHEDULED, plus `attempt - 1` retries read from ACTIVITY_TASK_STARTED;
 * - local activities: every workflow task whose commands record local-activity markers counts once,
 *   plus the retries its WORKFLOW_TASK_COMPLETED's metering metadata reports;
 * - timer: TIMER_STARTED (SDK timers such as `condition` with a timeout too);
 * - search attributes: UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, except an upsert of `TemporalChangeVersion`
 *   alone, which the page exempts (the SDK writes it for `patched()`);
 * - WORKFLOW_EXECUTION_OPTIONS_UPDATED.
 * Not counted: queries (an action each, but not in history; the bench's own polling is not the
 * Session's cost), activity heartbeats (none here), workflow tasks, markers other than local
 * activities, and memo changes (WORKFLOW_PROPERTIES_MODIFIED: not on the page).
 */
export function billableActions(events: HistoryEvent[]): number {
  return Object.values(actionsByCategory(events)).reduce((a, b) => a + b, 0);
}

/** billableActions, split by the Actions page's categories (keys only for categories that occurred). */
export function actionsByCategory(events: HistoryEvent[]): Record<string, number> {
  const counts: Record<string, number> = {};
  const add = (category: string, n = 1) => {
    if (n > 0) counts[category] = (counts[category] ?? 0) + n;
  };
  let localActivityInTask = false;
  for (const e of events) {
    switch (e.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        add('workflow started');
        break;
      case EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
        add('child workflow', 2);
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
        add('signal');
        break;
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        add('update');
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        add('activity');
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        add('activity retry', (e.activityTaskStartedEventAttributes?.attempt ?? 1) - 1);
        break;
      case EventType.EVENT_TYPE_TIMER_STARTED:
        add('timer');
        break;
      case EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: {
        const fields = Object.keys(
          e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {},
        );
        if (!(fields.length === 1 && fields[0] === 'TemporalChangeVersion')) add('search attributes');
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
        add('workflow options');
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        localActivityInTask = false;
        add(
          'local activity retry',
          Number(e.workflowTaskCompletedEventAttributes?.meteringMetadata?.nonfirstLocalActivityExecutionAttempts ?? 0),
        );
        break;
      case EventType.EVENT_TYPE_MARKER_RECORDED:
        if (e.markerRecordedEventAttributes?.markerName === 'core_local_activity' && !localActivityInTask) {
          localActivityInTask = true;
          add('local activities');
        }
        break;
      default:
    }
  }
  return counts;
}

/** Upserts of `TemporalChangeVersion` alone in a slice of history: history events, but no billable action. */
export function changeVersionUpserts(events: HistoryEvent[]): number {
  return events.filter((e) => {
    const fields = Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {});
    return fields.length === 1 && fields[0] === 'TemporalChangeVersion';
  }).length;
}

/** Every run of a workflow id, first to last, following continue-as-new. */
export async function allRuns(client: Client, workflowId: string, firstRunId: string): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  let runId: string | undefined = firstRunId;
  while (runId) {
    const events = await runEvents(client, workflowId, runId);
    runs.push(events);
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return runs;
}

/** An event's encoded size, as the server stores it. */
export function eventBytes(e: HistoryEvent): number {
  return proto.temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
}

/** Bytes of the start argument of a run: for a continued Session, the state it carried. */
export function startInputBytes(events: HistoryEvent[]): number {
  const payloads = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
  return payloads.reduce((sum, p) => sum + (p.data?.length ?? 0), 0);
}
