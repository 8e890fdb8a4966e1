/**
 * What the cluster scenarios share: several worker processes on one task queue with the shared
 * PostgreSQL memory store, which worker ran a Session's workflow tasks (from its history), and the
 * exactly-once check over the decision records of many Sessions.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { inject } from 'vitest';
import { decisionsQuery } from '../../contract/api.js';
import type { MessageInput } from '../../contract/messages.js';
import type { ScriptedModelServer } from './model-server.js';
import { spawnWorker, type WorkerProcess } from './spawn-worker.js';

/** `count` worker processes polling `taskQueue`, all on the cluster's shared memory store. */
export async function startClusterWorkers(
  count: number,
  options: { taskQueue: string; models: ScriptedModelServer },
): Promise<WorkerProcess[]> {
  return Promise.all(
    Array.from({ length: count }, () =>
      spawnWorker({ ...options, env: { HARNESS_MEMORY_URL: inject('clusterMemoryUrl') } }),
    ),
  );
}

/**
 * The worker pids that completed the Session's workflow tasks, in history order (workers identify
 * as `<pid>@<host>`), read from the history of its current run.
 */
export async function workflowTaskWorkers(handle: WorkflowHandle): Promise<number[]> {
  const pids: number[] = [];
  const history = await handle.fetchHistory();
  for (const event of history.events ?? []) {
    const identity = event.workflowTaskCompletedEventAttributes?.identity;
    const pid = identity ? Number(identity.split('@')[0]) : NaN;
    if (Number.isInteger(pid)) pids.push(pid);
  }
  return pids;
}

/** What happened to the inputs sent to a set of Sessions. */
export interface Ledger {
  sessions: number;
  inputs: number;
  decisions: number;
  /** Inputs sent without a decision record. */
  lost: number;
  /** Decision records beyond one per input: a messageId or a seq recorded twice. */
  duplicated: number;
  /** Sessions whose seqs are not exactly 1..n. */
  gapped: number;
}

/** Compares what each Session recorded with what was sent to it. */
export async function ledger(sent: Map<WorkflowHandle, MessageInput[]>): Promise<Ledger> {
  const result: Ledger = { sessions: sent.size, inputs: 0, decisions: 0, lost: 0, duplicated: 0, gapped: 0 };
  for (const [handle, messages] of sent) {
    const decisions = await handle.query(decisionsQuery);
    const ids = decisions.map((d) => d.messageId);
    result.inputs += messages.length;
    result.decisions += decisions.length;
    result.lost += messages.filter((m) => !ids.includes(m.messageId)).length;
    const seqs = decisions.map((d) => d.seq);
    result.duplicated += Math.max(ids.length - new Set(ids).size, seqs.length - new Set(seqs).size);
    if (seqs.some((seq, i) => seq !== i + 1)) result.gapped++;
  }
  return result;
}
