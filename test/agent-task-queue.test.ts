/**
 * settings.agentTaskQueue on a real server: model steps and tool calls go to their own task queue,
 * served by a separate worker pool, while relevance and preparation stay on the Session's queue.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decisionsQuery } from '../contract/api.js';
import {
  decided,
  scriptedModels,
  send,
  startSession,
  startWorker,
  uniqueId,
  type TestWorker,
} from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

let server: ScriptedModelServer;
let script: RoleScript;
let sessions: TestWorker;
let agents: TestWorker | undefined;
const agentQueue = uniqueId('agents');

beforeAll(async () => {
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  // The Session's worker allows the agent queue; without it the start is refused (setting-caps.test.ts).
  sessions = await startWorker({ models: scriptedModels(server), policy: { allowedAgentTaskQueues: [agentQueue] } });
});

afterAll(async () => {
  await agents?.stop();
  await sessions?.stop();
  await server?.close();
});

/** Task queue of each activity the Session scheduled, by activity type. */
async function queuesByActivity(handle: WorkflowHandle): Promise<Record<string, string[]>> {
  const { events } = await handle.fetchHistory();
  const byType: Record<string, string[]> = {};
  for (const e of events ?? []) {
    const a = e.activityTaskScheduledEventAttributes;
    if (!a?.activityType?.name) continue;
    (byType[a.activityType.name] ??= []).push(a.taskQueue?.name ?? '');
  }
  return byType;
}

it('runs agent steps on the agent task queue and everything else on the Session queue', async () => {
  const goal = 'Draft the incident summary for the storage outage';
  script.selection.set(goal, { skills: [], toolsets: [] });
  script.reply.set(goal, 'Here is the summary.');
  const handle = await startSession(sessions, { settings: { agentTaskQueue: agentQueue, agentTimeoutMs: 60_000 } });
  await send(handle, goal);

  // No worker polls the agent queue yet: the Session is aligned, and its agent step waits there.
  await expect
    .poll(async () => (await queuesByActivity(handle)).agentStep ?? [], { timeout: 30_000 })
    .toEqual([agentQueue]);
  expect(await handle.query(decisionsQuery)).toEqual([]);

  // A second pool on the agent queue takes it; the turn completes.
  agents = await startWorker({ models: scriptedModels(server), taskQueue: agentQueue });
  const record = await decided(handle, 1, 60_000);
  expect(record.agent).toMatchObject({ outcome: 'replied', reply: 'Here is the summary.' });

  const queues = await queuesByActivity(handle);
  expect(queues.agentStep).toEqual([agentQueue]);
  for (const type of ['extractTerms', 'orchestrate']) expect(queues[type]).toEqual([sessions.taskQueue]);
});
