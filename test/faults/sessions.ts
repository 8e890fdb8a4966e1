/**
 * What the worker-kill scenarios share: a scripted model server with a worker process that can be
 * SIGKILLed and replaced, many Sessions started side by side, and the count of what happened to each
 * one's inputs once they have all settled.
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { decisionsQuery, messageSignal, snapshotQuery } from '../../contract/api.js';
import type { DecisionRecord } from '../../contract/state.js';
import type { SessionView } from '../../contract/queries.js';
import { message, uniqueId } from '../support/harness.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { spawnWorker, type WorkerProcess } from '../support/spawn-worker.js';
import { BindingLog, auditInputs, replayEvents, runHistories, until, workflowTaskFailures } from './audit.js';
import { writeRow } from './rows.js';

export interface FaultSession {
  sessionId: string;
  handle: WorkflowHandle;
  firstRunId: string;
  /** messageIds the Session accepted, in the order sent. */
  sent: string[];
}

export interface KillableStack {
  models: ScriptedModelServer;
  client: Client;
  /** The task queue of the last `start`. */
  taskQueue: string;
  /** Starts the worker process for `taskQueue` (with `env` added to its environment). */
  start(taskQueue: string, env?: Record<string, string>): Promise<void>;
  /**
   * `wait`, unless the worker process dies first (not by killAndReplace): then rejects at once
   * with its exit code or signal, instead of leaving the wait to run into its timeout.
   */
  alive<T>(wait: Promise<T>): Promise<T>;
  /** SIGKILLs the worker process and starts a new one like it; resolves with the time the old one had exited. */
  killAndReplace(): Promise<number>;
}

/**
 * Registers beforeAll/afterAll hooks for a scripted model server, a client of the fault suite's dev
 * server, and one worker process at a time. The returned object is filled in once the hooks have run.
 * Every scenario's worker is its own OS process: in the test's process it would share one event
 * loop (and two loaded cores) with the test's own sending and polling.
 */
export function useKillableWorker(): KillableStack {
  let connection: Connection | undefined;
  let worker: WorkerProcess | undefined;
  let spawnNext: (() => Promise<WorkerProcess>) | undefined;
  const stack = {
    async start(taskQueue: string, env: Record<string, string> = {}) {
      stack.taskQueue = taskQueue;
      spawnNext = () => spawnWorker({ taskQueue, models: stack.models, env });
      worker = await spawnNext();
    },
    async killAndReplace() {
      if (!worker || !spawnNext) throw new Error('no worker process to kill');
      await worker.kill();
      const killedAt = Date.now();
      worker = await spawnNext();
      return killedAt;
    },
    alive<T>(wait: Promise<T>): Promise<T> {
      if (!worker) throw new Error('no worker process running');
      return Promise.race([wait, worker.died]);
    },
  } as KillableStack;
  beforeAll(async () => {
    stack.models = await ScriptedModelServer.start();
    connection = await Connection.connect({ address: inject('temporalAddress') });
    stack.client = new Client({ connection, namespace: inject('temporalNamespace') });
  });
  afterAll(async () => {
    await worker?.kill();
    await connection?.close();
    await stack.models?.close();
  });
  return stack;
}

/** Starts `count` Sessions on `taskQueue`, their ids `<prefix>-<i>-<random>`. */
export async function startSessions(
  client: Client,
  options: { count: number; prefix: string; taskQueue: string; settings: Record<string, unknown> },
): Promise<FaultSession[]> {
  return Promise.all(
    Array.from({ length: options.count }, async (_, i) => {
      const sessionId = uniqueId(`${options.prefix}-${i}`);
      const handle = await client.workflow.start('session', {
        workflowId: `session:${sessionId}`,
        taskQueue: options.taskQueue,
        args: [{ sessionId, settings: options.settings }],
      });
      return { sessionId, handle, firstRunId: handle.firstExecutionRunId, sent: [] };
    }),
  );
}

/** Sends each Session's inputs in order, the Sessions side by side; `text(s, k)` is input k of Session s. */
export async function sendInputs(
  sessions: FaultSession[],
  inputs: number,
  text: (s: number, k: number) => string,
): Promise<void> {
  await Promise.all(
    sessions.map(async (session, s) => {
      for (let k = 0; k < inputs; k++) {
        const m = message(text(s, k));
        await session.handle.signal(messageSignal, m);
        session.sent.push(m.messageId);
      }
    }),
  );
}

/**
 * Waits until every Session has bound `inputs` inputs and is idle with no turn; returns their
 * snapshots. Fails when a Session binds nothing for `stallMs` (until), however long the whole takes.
 */
export function settled(sessions: FaultSession[], inputs: number, stallMs = 300_000): Promise<SessionView[]> {
  return Promise.all(
    sessions.map(({ handle }) =>
      until(
        () => handle.query(snapshotQuery),
        (v) => v.seq.lastBound === inputs && v.stage === 'Idle' && v.turn === null,
        stallMs,
        (v) => v.seq.lastBound,
      ),
    ),
  );
}

export interface SessionsAudit {
  lost: number;
  duplicated: number;
  /** Sessions whose seqs have a gap or are out of order. */
  problems: string[];
  /** Workflow tasks our code failed (`cause: message`), and how many the server failed for flow control. */
  ours: string[];
  server: number;
  /** Each Session's decision records, in the order of `sessions`. */
  records: DecisionRecord[][];
}

/** Counts lost, duplicated and out-of-order inputs and failed workflow tasks over all `sessions`. */
export async function auditSessions(client: Client, sessions: FaultSession[]): Promise<SessionsAudit> {
  const result: SessionsAudit = { lost: 0, duplicated: 0, problems: [], ours: [], server: 0, records: [] };
  for (const [i, session] of sessions.entries()) {
    // Counted from the durable history (replayed), not from the bounded decisions window; the records
    // are still read for what scenarios check inside them (few inputs each, all kept).
    const histories = await runHistories(client, session.handle.workflowId, session.firstRunId);
    const log = new BindingLog(await replayEvents(session.handle.workflowId, histories, inject('workflowBundlePath')));
    result.records.push(await session.handle.query(decisionsQuery, { limit: 1_000 }));
    const audit = auditInputs(log, session.sent);
    result.lost += audit.lost;
    result.duplicated += audit.duplicated;
    if (!audit.gapFree || !audit.inOrder) result.problems.push(`session ${i}: ${JSON.stringify(audit)}`);
    if (log.finishedTurns !== log.bySeq.size) {
      result.problems.push(`session ${i}: ${log.bySeq.size} inputs bound, ${log.finishedTurns} turns finished`);
    }
    const failures = workflowTaskFailures(histories);
    result.ours.push(...failures.ours);
    result.server += failures.server;
  }
  return result;
}

/** Writes the scenario's row from its audit; `notes` after the kills made and missed. */
export function writeAuditRow(
  audit: SessionsAudit,
  row: {
    scenario: string;
    sessions: number;
    inputs: number;
    started: number;
    kills: string[];
    missed: string[];
    notes: string;
  },
): void {
  const { kills, missed } = row;
  writeRow({
    scenario: row.scenario,
    sessions: row.sessions,
    inputs: row.inputs,
    lost: audit.lost,
    duplicated: audit.duplicated,
    failedTasks: audit.ours.length,
    serverFailedTasks: audit.server,
    timeMs: Date.now() - row.started,
    notes: `kills ${kills.length} (${kills.join(', ')})${missed.length ? `; missed ${missed.join(', ')}` : ''}; ${row.notes}`,
  });
}

/** What every scenario asserts: nothing lost or duplicated, gap-free and in order, no failed task of ours. */
export function expectAuditClean(audit: SessionsAudit): void {
  expect(audit.problems).toEqual([]);
  expect({ lost: audit.lost, duplicated: audit.duplicated }).toEqual({ lost: 0, duplicated: 0 });
  expect(audit.ours).toEqual([]);
}
