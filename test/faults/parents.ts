/**
 * What the sub-session fault scenarios share: parents started with their goal decided and then each
 * handed its question, and workers spawned on one task queue and remembered, so the scenario can
 * kill them one by one and afterAll can kill whatever is left.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { decided, send, uniqueId } from '../support/harness.js';
import type { ScriptedModelServer } from '../support/model-server.js';
import { spawnWorker, type WorkerProcess } from '../support/spawn-worker.js';

/** Starts `count` Sessions on `taskQueue`; once each has decided `goal`, sends it `question(i)`. */
export function startParents(
  client: Client,
  taskQueue: string,
  options: { count: number; prefix: string; goal: string; question: (i: number) => string; settings: object },
): Promise<WorkflowHandle[]> {
  return Promise.all(
    Array.from({ length: options.count }, async (_, i) => {
      const sessionId = uniqueId(`${options.prefix}-${i}`);
      const handle = await client.workflow.start('session', {
        workflowId: `session:${sessionId}`,
        taskQueue,
        args: [{ sessionId, settings: options.settings }],
      });
      await send(handle, options.goal);
      await decided(handle, 1, 60_000);
      await send(handle, options.question(i));
      return handle;
    }),
  );
}

/** Spawns workers on `taskQueue` against `models`, each added to `workers`. */
export function workerSpawner(taskQueue: string, models: ScriptedModelServer, workers: WorkerProcess[]) {
  return async (env: Record<string, string> = {}): Promise<WorkerProcess> => {
    const worker = await spawnWorker({ taskQueue, models, env });
    workers.push(worker);
    return worker;
  };
}
