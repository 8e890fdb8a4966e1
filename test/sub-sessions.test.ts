/**
 * Sub-sessions and responsibility routing on a real server: the Session that executes a task is the
 * Session that understands it.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  capabilitiesQuery,
  commandSignal,
  decisionsQuery,
  goalsQuery,
  historyQuery,
  outOfScopeQuery,
  snapshotQuery,
} from '../contract/api.js';
import { SessionClient, SessionClosedError } from '../client/index.js';
import { SessionParentKey } from '../contract/search-attributes.js';
import type { DecisionRecord } from '../contract/state.js';
import { send, startSession, uniqueId, waitFor } from './support/harness.js';
import { useScriptedWorker } from './support/scripted-roles.js';
import { spawnWorker, type WorkerProcess } from './support/spawn-worker.js';

const f = useScriptedWorker();

const GUIDE = 'Research ComfyUI and deliver a Markdown guide';
const WEATHER = "Also check tomorrow's weather";
const RAIN = 'Will it rain in Hangzhou on Friday?';

beforeAll(() => {
  f.script.terms.set(GUIDE, ['comfyui', 'research', 'markdown', 'guide']);
  f.script.selection.set(GUIDE, { skills: ['technical-research', 'markdown-guide'], toolsets: ['web-search'] });
  f.script.relevance.set(`${WEATHER}|${GUIDE}`, [0.05, 0.04]);
  f.script.relevance.set(`${RAIN}|${GUIDE}`, [0.05, 0.05]);
  // Routing scores the request against the sub-session's goal; the sub-session then judges it itself.
  f.script.relevance.set(`${RAIN}|${WEATHER}`, [0.3, 0.92]);
  f.script.terms.set(WEATHER, ['weather', 'forecast', 'tomorrow']);
});

async function idleAt(handle: WorkflowHandle, seq: number): Promise<DecisionRecord[]> {
  await waitFor(
    () => handle.query(snapshotQuery),
    (s) => s.stage === 'Idle' && (s.lastDecision?.seq ?? 0) >= seq,
    30_000,
  );
  return handle.query(decisionsQuery);
}

describe('routing out-of-scope requests', () => {
  it('creates a sub-session for the weather request, keeps the research Session, and reuses the sub-session', async () => {
    // The weather sub-session's orchestration fails: it must still exist with the message bound.
    f.script.selection.set(WEATHER, { status: 500 });
    const parent = await startSession(f.worker);
    await send(parent, GUIDE);
    await idleAt(parent, 1);
    const goals = await parent.query(goalsQuery);
    const caps = await parent.query(capabilitiesQuery);

    const weather = await send(parent, WEATHER);
    const [, routed] = await idleAt(parent, 2);
    expect(routed).toMatchObject({ decision: 'out-of-scope', route: { via: 'new-sub' } });
    const childId = routed!.route!.to!;
    expect(childId).toMatch(new RegExp(`^${parent.workflowId.replace('session:', '')}\\.sub-[0-9a-f]{12}$`));
    expect(await parent.query(goalsQuery)).toEqual(goals);
    expect(await parent.query(capabilitiesQuery)).toEqual(caps);
    expect(await parent.query(outOfScopeQuery)).toEqual([
      expect.objectContaining({ messageId: weather.messageId, status: 'routed', routedTo: childId }),
    ]);

    // The receiving Session understood the task itself: goals from the weather request, its own
    // initialize path, and the original messageId and text verbatim.
    const child = f.worker.client.workflow.getHandle(`session:${childId}`);
    const childDecisions = await idleAt(child, 1);
    expect(childDecisions[0]).toMatchObject({ seq: 1, messageId: weather.messageId, decision: 'initialize' });
    expect(childDecisions[0]?.fallbacks).toEqual([expect.stringMatching(/^orchestration: .*capabilities kept$/)]);
    expect((await child.query(goalsQuery)).session?.text).toBe(WEATHER);
    const [bound] = await child.query(historyQuery);
    expect(bound).toMatchObject({
      text: WEATHER,
      from: { kind: 'session', id: parent.workflowId.replace('session:', '') },
    });
    const childSnapshot = await child.query(snapshotQuery);
    expect(childSnapshot.parentSessionId).toBe(parent.workflowId.replace('session:', ''));
    expect(childSnapshot.profile).toBe('sub-session');
    const description = await waitFor(
      () => child.describe(),
      (d) => d.typedSearchAttributes.get(SessionParentKey) !== undefined,
    );
    expect(description.typedSearchAttributes.get(SessionParentKey)).toBe(childSnapshot.parentSessionId);

    // A second weather question goes to the same sub-session.
    f.script.relevance.set(`${RAIN}|${WEATHER}`, [0.3, 0.92]);
    await send(parent, RAIN);
    const [, , second] = await idleAt(parent, 3);
    expect(second?.route).toMatchObject({ via: 'existing-sub', to: childId });
    const childAfter = await idleAt(child, 2);
    expect(childAfter.map((d) => d.messageId)).toEqual([weather.messageId, second!.messageId]);
    const parentSnapshot = await parent.query(snapshotQuery);
    expect(parentSnapshot.children).toEqual([
      expect.objectContaining({ sessionId: childId, goal: WEATHER, routed: 2 }),
    ]);
  });

  it('forwards an out-of-scope request of a sub-session to its parent, with the original messageId', async () => {
    const parent = await startSession(f.worker);
    const goal = 'Plan the product launch event';
    f.script.selection.set(goal, { skills: ['task-planning'] });
    await send(parent, goal);
    await idleAt(parent, 1);
    const subId = uniqueId('child');
    const sub = await startSession(f.worker, {
      sessionId: subId,
      parentSessionId: parent.workflowId.replace('session:', ''),
    });
    const subGoal = 'Draft the launch invitation email';
    const stray = 'Also renew the office lease';
    f.script.selection.set(subGoal, { skills: ['email-drafting'] });
    f.script.relevance.set(`${stray}|${subGoal}`, [0.1, 0.1]);
    f.script.relevance.set(`${stray}|${goal}`, [0.9, 0.9]);
    await send(sub, subGoal);
    await idleAt(sub, 1);
    const forwarded = await send(sub, stray);
    const [, record] = await idleAt(sub, 2);
    expect(record?.route).toMatchObject({ via: 'parent', to: parent.workflowId.replace('session:', '') });

    const parentDecisions = await idleAt(parent, 2);
    expect(parentDecisions[1]).toMatchObject({ messageId: forwarded.messageId, decision: 'continue' });
    const [, received] = await parent.query(historyQuery);
    expect(received).toMatchObject({
      text: stray,
      from: { kind: 'session', id: subId },
      routed: { fromSessionId: subId },
    });
  });
});

describe('a sub-session that has finished', () => {
  it('is forgotten as a routing target, and the request goes to a new sub-session', async () => {
    const parent = await startSession(f.worker);
    await send(parent, GUIDE);
    await idleAt(parent, 1);
    await send(parent, WEATHER);
    const [, first] = await idleAt(parent, 2);
    const closedChild = first!.route!.to!;
    const child = f.worker.client.workflow.getHandle(`session:${closedChild}`);
    await idleAt(child, 1);
    await child.signal(commandSignal, { commandId: 'done', name: 'close' });
    await child.result();

    await send(parent, RAIN);
    const [, , second] = await idleAt(parent, 3);
    expect(second?.route).toMatchObject({ via: 'new-sub' });
    expect(second?.route?.to).not.toBe(closedChild);
    expect(second?.fallbacks).toEqual([expect.stringContaining(`routing: ${closedChild} did not take the request`)]);
    const children = (await parent.query(snapshotQuery)).children.map((c) => c.sessionId);
    expect(children).toEqual([second!.route!.to]);
  });
});

describe('a worker killed between creating the sub-session and finishing the hand-over', () => {
  const workers: WorkerProcess[] = [];
  afterAll(async () => {
    for (const worker of workers) await worker.kill();
  });

  it('still yields exactly one sub-session with the message bound once', async () => {
    const taskQueue = uniqueId('route');
    const first = await spawnWorker({ taskQueue, models: f.server, env: { HARNESS_TEST_HANG_AFTER_CREATE: '1' } });
    workers.push(first);
    const parentId = uniqueId('parent');
    const parent = await f.worker.client.workflow.start('session', {
      workflowId: `session:${parentId}`,
      taskQueue,
      args: [{ sessionId: parentId }],
    });
    await send(parent, GUIDE);
    await idleAt(parent, 1);
    const weather = await send(parent, WEATHER);
    const started = await first.line(/^sub-session started /);
    const childId = started.replace('sub-session started ', '');
    await first.kill();
    workers.push(await spawnWorker({ taskQueue, models: f.server }));

    const decisions = await idleAt(parent, 2);
    expect(decisions[1]?.route).toMatchObject({ via: 'new-sub', to: childId });
    const child = f.worker.client.workflow.getHandle(`session:${childId}`);
    const childDecisions = await idleAt(child, 1);
    expect(childDecisions.map((d) => d.messageId)).toEqual([weather.messageId]);
    const childSnapshot = await child.query(snapshotQuery);
    // The retried creation re-delivered the message: recognised as a duplicate, bound once.
    expect(childSnapshot.counts).toMatchObject({ accepted: 1, bound: 1, duplicates: 1 });
    expect((await parent.query(snapshotQuery)).children.map((c) => c.sessionId)).toEqual([childId]);
    const subs = await waitFor(
      async () => {
        const found: string[] = [];
        for await (const execution of f.worker.client.workflow.list({ query: `SessionParent = '${parentId}'` })) {
          found.push(execution.workflowId);
        }
        return found;
      },
      (found) => found.length >= 1,
    );
    expect(subs).toEqual([`session:${childId}`]);
  });
});

describe('idle timeout', () => {
  /** Durations of the timers a Session's history started, in seconds. */
  async function timers(handle: WorkflowHandle): Promise<number[]> {
    const history = await handle.fetchHistory();
    return (history.events ?? [])
      .map((e) => e.timerStartedEventAttributes?.startToFireTimeout?.seconds)
      .filter((s) => s !== undefined && s !== null)
      .map(Number);
  }

  it('closes a Session that had no input for its timeout; later input is refused, and the Session is not restarted', async () => {
    const client = new SessionClient(f.worker.client, { taskQueue: f.worker.taskQueue });
    const sessionId = uniqueId('idle');
    await client.send(sessionId, { text: GUIDE }, { settings: { idleTimeoutMs: 2_000 } });
    const handle = f.worker.client.workflow.getHandle(`session:${sessionId}`);
    const { runId } = await handle.describe();
    expect(await handle.result()).toMatchObject({ status: 'closed', lastSeq: 1 });

    const snapshot = await handle.query(snapshotQuery);
    // The input was processed first; the clock started when its processing ended.
    expect(snapshot.lastDecision).toMatchObject({ seq: 1, decision: 'initialize' });
    expect(snapshot.stage).toBe('Closed');
    const closed = snapshot.recentControlEvents.at(-1)!;
    expect(closed).toMatchObject({
      kind: 'command',
      id: 'idle-timeout',
      summary: 'close: no input for 2 seconds (idle timeout)',
    });
    expect(await timers(handle)).toEqual([2]);

    await expect(client.send(sessionId, { text: 'Continue' })).rejects.toBeInstanceOf(SessionClosedError);
    await expect(client.submit(sessionId, { text: 'Continue' })).rejects.toBeInstanceOf(SessionClosedError);
    expect((await handle.describe()).runId).toBe(runId);
  });

  it('arms a one-day idle timer in sub-sessions by default and none in top-level Sessions', async () => {
    const parent = await startSession(f.worker);
    await send(parent, GUIDE);
    await idleAt(parent, 1);
    await send(parent, WEATHER);
    const [, routed] = await idleAt(parent, 2);
    const child = f.worker.client.workflow.getHandle(`session:${routed!.route!.to!}`);
    await idleAt(child, 1);
    expect((await child.query(snapshotQuery)).status).toBe('active');
    expect(await timers(child)).toContain(86_400);
    expect(await timers(parent)).toEqual([]);
  });
});
