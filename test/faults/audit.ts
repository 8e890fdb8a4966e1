/**
 * How the fault suite counts what happened to a Session's inputs, from Temporal's own records: every
 * run's event history, replayed to rebuild each input's binding (BindingLog), read for failed workflow
 * tasks and the carried-state size at each continue-as-new; and, where a scenario binds fewer inputs
 * than a Session keeps, its decision records.
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type { SessionEvent } from '../../contract/events.js';
import { decisionsQuery } from '../../contract/api.js';
import type { DecisionRecord } from '../../contract/state.js';

type History = temporal.api.history.v1.IHistory;

/**
 * Causes with which the server itself fails a workflow task, none of them a fault of workflow code:
 * UNHANDLED_COMMAND (1: a signal or update arrived while the task was completing, e.g. during
 * continue-as-new; the SDK retries with the new events), RESET_STICKY_TASK_QUEUE (13: the sticky
 * worker is gone, here because the test killed it) and FORCE_CLOSE_COMMAND (17: more buffered events
 * than the server lets one task take, during a signal burst).
 */
export const SERVER_FLOW_CONTROL_CAUSES = new Set([1, 13, 17]);

/** Every run's history of one workflow, first to last, following continue-as-new. */
export async function runHistories(client: Client, workflowId: string, firstRunId: string): Promise<History[]> {
  const histories: History[] = [];
  let runId: string | undefined = firstRunId;
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    histories.push(history);
    const last = history.events?.at(-1);
    runId = last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return histories;
}

export interface TaskFailures {
  /** `cause: message` of each workflow task our code failed. */
  ours: string[];
  /** How many the server failed for flow control (SERVER_FLOW_CONTROL_CAUSES). */
  server: number;
}

export function workflowTaskFailures(histories: History[]): TaskFailures {
  const result: TaskFailures = { ours: [], server: 0 };
  for (const history of histories) {
    for (const event of history.events ?? []) {
      const failed = event.workflowTaskFailedEventAttributes;
      if (!failed) continue;
      if (SERVER_FLOW_CONTROL_CAUSES.has(Number(failed.cause))) result.server++;
      else result.ours.push(`${String(failed.cause)}: ${failed.failure?.message ?? ''}`);
    }
  }
  return result;
}

/** Bytes of the carried input of each continue-as-new, in run order. */
export function carriedBytes(histories: History[]): number[] {
  return histories.flatMap((history) => {
    const attrs = history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes;
    if (!attrs) return [];
    return [(attrs.input?.payloads ?? []).reduce((sum, p) => sum + (p.data?.length ?? 0), 0)];
  });
}

/**
 * Every durable event the runs emitted, rebuilt from their histories: a replay worker runs today's
 * workflow code (`bundlePath`, the suite's bundle) over each run's event history and collects what it
 * publishes through the `events` sink. Unlike the bounded `decisions` and `events` queries, which
 * keep only the newest records and trim them at continue-as-new, the history holds everything, so an
 * audit built on it cannot miss a record that rotated out while the machine was slow.
 */
export async function replayEvents(
  workflowId: string,
  histories: History[],
  bundlePath: string,
): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  const replays = Worker.runReplayHistories(
    {
      workflowBundle: { codePath: bundlePath },
      sinks: {
        events: {
          publish: {
            fn: (_info, ...args: unknown[]) => {
              events.push(args[1] as SessionEvent);
            },
            callDuringReplay: true,
          },
        },
      },
    },
    histories.map((history) => ({ workflowId, history })),
  );
  for await (const result of replays) {
    if (result.error) throw new Error(`replay of ${workflowId} failed: ${String(result.error)}`);
  }
  return events;
}

/**
 * What a Session bound, from its replayed events: each `input.bound` by seq (a seq bound twice with
 * two messageIds is a conflict) and how many turns finished (`turn.finished`, one per bound input).
 */
export class BindingLog {
  readonly bySeq = new Map<number, { seq: number; messageId: string }>();
  conflicts = 0;
  finishedTurns = 0;

  constructor(events: SessionEvent[]) {
    for (const event of events) {
      if (event.kind === 'turn.finished') this.finishedTurns++;
      if (event.kind !== 'input.bound') continue;
      const seen = this.bySeq.get(event.seq);
      if (seen && seen.messageId !== event.messageId) this.conflicts++;
      if (!seen) this.bySeq.set(event.seq, { seq: event.seq, messageId: event.messageId });
    }
  }
}

/**
 * Decision records merged by seq from repeated `decisions` queries, so a Session that keeps fewer
 * records than it binds is still counted whole. A seq seen with two messageIds is a conflict. Polling
 * misses records that rotate out between two polls; scenarios that bind more than a Session keeps
 * audit with BindingLog instead.
 */
export class DecisionLog {
  readonly bySeq = new Map<number, DecisionRecord>();
  conflicts = 0;

  add(records: DecisionRecord[]): void {
    for (const record of records) {
      const seen = this.bySeq.get(record.seq);
      if (seen && seen.messageId !== record.messageId) this.conflicts++;
      if (!seen) this.bySeq.set(record.seq, record);
    }
  }

  async poll(handle: WorkflowHandle): Promise<void> {
    this.add(await handle.query(decisionsQuery, { limit: 1_000 }));
  }
}

export interface InputAudit {
  lost: number;
  duplicated: number;
  /** Seqs are exactly 1..n with no gap. */
  gapFree: boolean;
  /** Bound in the expected order (seq i holds the i-th expected messageId). */
  inOrder: boolean;
}

/** Compares the bound inputs (replayed, or merged decision records) with the messageIds the Session accepted, in order. */
export function auditInputs(
  log: { bySeq: Map<number, { seq: number; messageId: string }>; conflicts: number },
  expected: string[],
): InputAudit {
  const seqsById = new Map<string, number[]>();
  for (const record of log.bySeq.values()) {
    seqsById.set(record.messageId, [...(seqsById.get(record.messageId) ?? []), record.seq]);
  }
  const lost = expected.filter((id) => !seqsById.has(id)).length;
  const duplicated = [...seqsById.values()].reduce((n, seqs) => n + seqs.length - 1, 0) + log.conflicts;
  const seqs = [...log.bySeq.keys()].sort((a, b) => a - b);
  const gapFree = seqs.every((seq, i) => seq === i + 1);
  const inOrder = expected.every((id, i) => log.bySeq.get(i + 1)?.messageId === id);
  return { lost, duplicated, gapFree, inOrder };
}

/** The longest one read of `until` may take before it counts as failed (a query no worker answers yet). */
const READ_TIMEOUT_MS = 30_000;

/**
 * Polls `read` until `done` holds; failed reads (a server being restarted) and reads that take longer
 * than READ_TIMEOUT_MS count as not yet. With `progress`, `timeoutMs` is how long the value may go
 * without advancing rather than a total: on a machine other work loads, a Session that keeps binding
 * is slow, not stuck, and only one that stops fails.
 */
export async function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  progress?: (value: T) => number,
): Promise<T> {
  let deadline = Date.now() + timeoutMs;
  let best = -Infinity;
  let last: T | undefined;
  let error: unknown;
  for (;;) {
    try {
      let timer: NodeJS.Timeout | undefined;
      const slow = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`a read took over ${READ_TIMEOUT_MS} ms`)), READ_TIMEOUT_MS);
      });
      last = await Promise.race([read(), slow]).finally(() => clearTimeout(timer));
      if (done(last)) return last;
      if (progress && progress(last) > best) {
        best = progress(last);
        deadline = Date.now() + timeoutMs;
      }
    } catch (err) {
      error = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `not done within ${timeoutMs} ms${progress ? ' of no progress' : ''}; last value: ${JSON.stringify(last)?.slice(0, 2_000)}; last error: ${describeCauses(error)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * A client that can read histories larger than gRPC's default 4 MB receive limit (signals of up to
 * 2 MB each add up), as the worker itself does.
 */
export async function historyClient(address: string): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await Connection.connect({
    address,
    channelArgs: { 'grpc.max_receive_message_length': 128 * 1024 * 1024 },
  });
  return { client: new Client({ connection }), close: () => connection.close() };
}

/** An error with its causes (`Failed to query Workflow: 14 UNAVAILABLE: ...`), so a timeout says what failed. */
function describeCauses(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    parts.push(e instanceof Error ? e.message : JSON.stringify(e));
  }
  return parts.join(': ');
}

export interface TaskLoad {
  /** The longest workflow task, started to completed (or failed), in ms: the worker's activation time plus its round trip. */
  longestMs: number;
  /** The most signals one workflow task took in (those recorded since the task before it started). */
  mostSignals: number;
}

/**
 * How heavy the runs' workflow tasks were. The SDK runs each activation under a 5 s wall-clock limit
 * (isolateExecutionTimeout); a burst lands hundreds of signals in one task, so this shows how close
 * a loaded machine came to it.
 */
export function workflowTaskLoad(histories: History[]): TaskLoad {
  const result: TaskLoad = { longestMs: 0, mostSignals: 0 };
  const ms = (event: temporal.api.history.v1.IHistoryEvent) =>
    Number(event.eventTime?.seconds ?? 0) * 1_000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
  for (const history of histories) {
    let signals = 0;
    let started: number | undefined;
    for (const event of history.events ?? []) {
      if (event.workflowExecutionSignaledEventAttributes) signals++;
      if (event.workflowTaskStartedEventAttributes) {
        started = ms(event);
        result.mostSignals = Math.max(result.mostSignals, signals);
        signals = 0;
      }
      if ((event.workflowTaskCompletedEventAttributes || event.workflowTaskFailedEventAttributes) && started) {
        result.longestMs = Math.max(result.longestMs, ms(event) - started);
        started = undefined;
      }
    }
  }
  return result;
}

/** One event of a run's history. */
export type HistoryEvent = NonNullable<History['events']>[number];

/** The activity type of the task an ActivityTaskStarted/Completed event belongs to. */
export function activityTypeOf(events: HistoryEvent[], event: HistoryEvent): string | undefined {
  const id = Number(
    event.activityTaskStartedEventAttributes?.scheduledEventId ??
      event.activityTaskCompletedEventAttributes?.scheduledEventId ??
      -1,
  );
  return (
    events.find((e) => Number(e.eventId) === id)?.activityTaskScheduledEventAttributes?.activityType?.name ?? undefined
  );
}
