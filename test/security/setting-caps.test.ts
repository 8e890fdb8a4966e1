/**
 * Trust boundary: server-side limits win. Whoever starts a Session used to set its server-side knobs
 * (task queue, step and attempt limits, timeouts up to an hour), and sub-sessions inherited them.
 * Now the worker's caps bound every setting, the Session says which it clamped, and an agent task
 * queue off the worker's allow-list is refused before anything is scheduled.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snapshotQuery } from '../../contract/api.js';
import { FAILURE } from '../../contract/failures.js';
import { workflowIdFor } from '../../contract/ids.js';
import {
  MODEL,
  decided,
  scriptedModels,
  send,
  startSession,
  startWorker,
  uniqueId,
  waitFor,
  type TestWorker,
} from '../support/harness.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { scriptRoles, type RoleScript } from '../support/scripted-roles.js';

let server: ScriptedModelServer;
let script: RoleScript;
let worker: TestWorker;
const allowedQueue = uniqueId('allowed-agents');

beforeAll(async () => {
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  worker = await startWorker({
    models: scriptedModels(server),
    policy: {
      caps: { maxAgentSteps: 3, agentTimeoutMs: 300_000, modelAttempts: 4 },
      allowedAgentTaskQueues: [allowedQueue],
    },
  });
});

afterAll(async () => {
  await worker?.stop();
  await server?.close();
});

describe('settings above the worker caps', () => {
  it('are clamped, and the Session says which in snapshot() and a control event', async () => {
    const handle = await startSession(worker, {
      settings: { maxAgentSteps: 150, agentTimeoutMs: 3_600_000, modelAttempts: 10, maxRepeatedFailures: 2 },
    });
    const view = await waitFor(
      () => handle.query(snapshotQuery),
      (v) => v.settingsClamped.length > 0,
    );
    expect(view.settings).toMatchObject({ maxAgentSteps: 3, agentTimeoutMs: 300_000, modelAttempts: 4 });
    // Within the caps: untouched.
    expect(view.settings.maxRepeatedFailures).toBe(2);
    expect(view.settingsClamped).toEqual([
      { field: 'maxAgentSteps', asked: 150, used: 3, run: 1 },
      { field: 'modelAttempts', asked: 10, used: 4, run: 1 },
      { field: 'agentTimeoutMs', asked: 3_600_000, used: 300_000, run: 1 },
    ]);
    const event = view.recentControlEvents.find((e) => e.id === 'worker-caps');
    expect(event?.summary).toBe(
      'settings capped by the worker: maxAgentSteps 150 → 3, modelAttempts 10 → 4, agentTimeoutMs 3600000 → 300000',
    );
  });

  it('bind the agent loop: the capped step limit guards the turn, not the asked one', async () => {
    const goal = 'Keep echoing until told to stop, capped run';
    script.selection.set(goal, { skills: [], toolsets: [] });
    // The model asks for a tool every step; only the step limit ends the turn.
    const looping = { toolCalls: [{ name: 'memory_save', arguments: { text: 'note', scope: 'session' } }] };
    for (let i = 0; i < 3; i++) server.enqueue(MODEL.agent, looping);
    const handle = await startSession(worker, { settings: { maxAgentSteps: 100, maxRepeatedFailures: 20 } });
    await send(handle, goal);
    const record = await decided(handle, 1);
    expect(record.agent).toMatchObject({ outcome: 'guarded', steps: 3 });
    expect(record.agent?.reason).toContain('step limit of 3');
  });

  it('reach sub-sessions: a sub-session inherits the clamped settings, not the asked ones', async () => {
    const goal = 'Plan the offsite and delegate the venue research';
    const subText = 'Research venues for a 40-person offsite';
    script.selection.set(goal, { skills: [], toolsets: [] });
    script.selection.set(subText, { skills: [], toolsets: [] });
    server.enqueue(MODEL.agent, {
      toolCalls: [{ id: 'call_sub', name: 'session_create_sub', arguments: { text: subText } }],
    });
    const handle = await startSession(worker, { settings: { maxAgentSteps: 150, agentTimeoutMs: 3_600_000 } });
    await send(handle, goal);
    const record = await decided(handle, 1);
    const call = record.agent?.toolCalls.find((c) => c.tool === 'session_create_sub');
    expect(call?.status).toBe('ok');
    const { sessionId } = JSON.parse(call?.result ?? '{}') as { sessionId: string };
    const child = worker.client.workflow.getHandle(workflowIdFor(sessionId));
    await decided(child, 1);
    const childView = await child.query(snapshotQuery);
    expect(childView.parentSessionId).toBe(handle.workflowId.slice('session:'.length));
    expect(childView.settings).toMatchObject({ maxAgentSteps: 3, agentTimeoutMs: 300_000 });
    // Nothing was above the caps when the child started: the parent had already clamped them.
    expect(childView.settingsClamped).toEqual([]);
  });
});

describe('an agent task queue off the allow-list', () => {
  it('refuses the start at once, and no work is ever scheduled on that queue', async () => {
    const foreign = uniqueId('someone-elses-queue');
    const handle = await startSession(worker, { settings: { agentTaskQueue: foreign } });
    await send(handle, 'Summarise the quarterly numbers');
    const failure = await handle.result().then(
      () => null,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe(FAILURE.SettingNotAllowed);
    expect((cause as ApplicationFailure).nonRetryable).toBe(true);
    expect(cause?.message).toContain(`settings.agentTaskQueue "${foreign}" is not allowed`);

    const { events } = await handle.fetchHistory();
    const scheduled = (events ?? []).flatMap((e) => {
      const a = e.activityTaskScheduledEventAttributes;
      return a ? [a.taskQueue?.name ?? ''] : [];
    });
    expect(scheduled).not.toContain(foreign);
    expect(scheduled).toEqual([]);
    // No model was asked anything for this Session.
    expect(server.requests(MODEL.relevance).filter((r) => JSON.stringify(r).includes('quarterly numbers'))).toEqual([]);
  });

  it('accepts a queue the worker allows', async () => {
    const handle = await startSession(worker, { settings: { agentTaskQueue: allowedQueue } });
    // A query may be answered before the run has its policy (a local activity): wait for the caps.
    const view = await waitFor(
      () => handle.query(snapshotQuery),
      (v) => v.stage === 'Idle' && v.settingsClamped.length > 0,
    );
    expect(view.settings.agentTaskQueue).toBe(allowedQueue);
    // A default above a cap is clamped too: the Session uses the cap and says so.
    expect(view.settingsClamped).toEqual([{ field: 'maxAgentSteps', asked: 16, used: 3, run: 1 }]);
  });
});
