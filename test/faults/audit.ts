/**
 * How the fault suite counts what happened to a Session's inputs, from Temporal's own records: the
 * decision records (one per bound input) and every run's event history (failed workflow tasks,
 * carried-state size at each continue-as-new).
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
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
 * Decision records merged by seq from repeated `decisions` queries, so a Session that keeps fewer
 * records than it binds is still counted whole. A seq seen with two messageIds is a conflict.
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

/** Compares the merged decision records with the messageIds the Session accepted, in order. */
export function auditInputs(log: DecisionLog, expected: string[]): InputAudit {
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

/** Polls `read` until `done` holds; failed reads (a server being restarted) count as not yet. */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  let error: unknown;
  for (;;) {
    try {
      last = await read();
      if (done(last)) return last;
    } catch (err) {
      error = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `not done within ${timeoutMs} ms; last value: ${JSON.stringify(last)?.slice(0, 2_000)}; last error: ${String(error)}`,
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
