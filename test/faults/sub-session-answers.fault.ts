/**
 * kill -9 of the worker during sub-sessions' agent turns, and again while their replies are being
 * handed back. Three parents each route an out-of-scope question to a new sub-session whose model
 * step is slow; the first worker is killed while those steps run. The next worker finishes the turns
 * and delivers each reply to its parent, then hangs before the answerParent activity completes and
 * is killed too, so every reply is delivered again by the retry on a third worker.
 *
 * Each parent must end with exactly one reply per sub-session: in the routed input's record, in its
 * `children` entry, and as one `subSessionReply` control event, and a caller waiting on the routed
 * input gets the reply.
 */
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { resultUpdate, snapshotQuery } from '../../contract/api.js';
import type { TurnResult } from '../../contract/queries.js';
import { MODEL, decided, uniqueId, waitFor } from '../support/harness.js';
import { ScriptedModelServer, type RecordedRequest, type Reply } from '../support/model-server.js';
import { agentSessionOf, scriptRoles } from '../support/scripted-roles.js';
import type { WorkerProcess } from '../support/spawn-worker.js';
import { startParents, workerSpawner } from './parents.js';
import { activityTypeOf, runHistories, type HistoryEvent as Event } from './audit.js';

const PARENTS = 3;
const GOAL = 'Research ComfyUI and deliver a Markdown guide';
const question = (i: number) => `Will it rain in city ${i} on Friday?`;
const answerTo = (text: string) => `Forecast for "${text}": light rain.`;
/** Small timeouts so a model step the kill orphans is retried within seconds. */
const settings = { modelTimeoutMs: 5_000, agentTimeoutMs: 12_000, modelAttempts: 4 };

let models: ScriptedModelServer;
let connection: Connection;
let client: Client;
const workers: WorkerProcess[] = [];

/** A sub-session answers the newest user message after a slow step; a parent just acknowledges. */
function agent(req: RecordedRequest): Reply {
  const session = agentSessionOf(req);
  const newest = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  if (session.includes('.sub-')) return { delayMs: 4_000, then: { content: answerTo(newest) } };
  return { content: `Working on: ${newest}` };
}

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  const script = scriptRoles(models);
  models.on(MODEL.agent, agent);
  script.selection.set(GOAL, { skills: ['technical-research'] });
  for (let i = 0; i < PARENTS; i++) {
    script.relevance.set(`${question(i)}|${GOAL}`, [0.05, 0.05]);
    script.selection.set(question(i), { skills: [] });
  }
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection, namespace: inject('temporalNamespace') });
});

afterAll(async () => {
  for (const worker of workers) await worker.kill();
  await connection?.close();
  await models?.close();
});

it('delivers every sub-session reply exactly once across kills during the turn and during the hand-back', async () => {
  const taskQueue = uniqueId('answers-kill');
  const spawn = workerSpawner(taskQueue, models, workers);
  const first = await spawn();
  const parents = await startParents(client, taskQueue, {
    count: PARENTS,
    prefix: 'answers',
    goal: GOAL,
    question,
    settings,
  });
  const childAgentSteps = () =>
    models.requests(MODEL.agent).filter((r) => /Session \S+\.sub-/.test(r.messages[0]?.content ?? ''));
  // Every sub-session's slow model step is in flight: kill the worker in the middle of the turns.
  await waitFor(
    () => Promise.resolve(childAgentSteps().length),
    (n) => n >= PARENTS,
    60_000,
  );
  await first.kill();
  const second = await spawn({ HARNESS_TEST_HANG_AFTER_ANSWER: '1' });

  const children = await Promise.all(parents.map(async (p) => (await decided(p, 2, 60_000)).route!.to!));
  // Each reply reached its parent, and the activity that carried it hangs: kill it there.
  await Promise.all(children.map((child) => second.line(new RegExp(`^parent answered ${child}:1$`))));
  await second.kill();
  await spawn();

  // A caller waiting on the routed input gets the reply.
  const results = await Promise.all(
    parents.map((p): Promise<TurnResult> => p.executeUpdate(resultUpdate, { args: [{ seq: 2, timeoutMs: 60_000 }] })),
  );
  results.forEach((result, i) => {
    expect(result.status).toBe('done');
    expect(result.record?.route?.reply).toMatchObject({ sessionId: children[i], text: answerTo(question(i)) });
  });

  for (const [i, parent] of parents.entries()) {
    // The retried hand-back has run on the third worker by the time the child's activity completes.
    const childHandle = client.workflow.getHandle(`session:${children[i]}`);
    const childHistories = await waitFor(
      async () => runHistories(client, childHandle.workflowId, (await childHandle.describe()).runId),
      (histories) =>
        histories.some((h) => (h.events ?? []).some((e) => e.activityTaskCompletedEventAttributes && isAnswer(h, e))),
      60_000,
    );
    const events = childHistories.flatMap((h) => h.events ?? []);
    const scheduled = events.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'answerParent',
    );
    expect(scheduled).toHaveLength(1);
    const started = events.filter((e) => e.activityTaskStartedEventAttributes && isAnswerEvent(events, e));
    // The kill landed during the hand-back: the activity ran a second time.
    expect(started.at(-1)?.activityTaskStartedEventAttributes?.attempt).toBeGreaterThanOrEqual(2);
    const agentStarts = events.filter((e) => e.activityTaskStartedEventAttributes && isAgentStep(events, e));
    // The kill landed during the turn: the model step ran a second time.
    expect(
      Math.max(...agentStarts.map((e) => e.activityTaskStartedEventAttributes?.attempt ?? 0)),
    ).toBeGreaterThanOrEqual(2);

    const view = await parent.query(snapshotQuery);
    expect(view.children).toEqual([
      expect.objectContaining({
        sessionId: children[i],
        status: 'idle',
        awaiting: 0,
        lastReply: expect.objectContaining({ seq: 1, text: answerTo(question(i)) }),
      }),
    ]);
    expect(view.recentControlEvents.filter((e) => e.kind === 'subSessionReply')).toHaveLength(1);
  }
});

const isAnswerEvent = (events: Event[], event: Event) => activityTypeOf(events, event) === 'answerParent';
const isAgentStep = (events: Event[], event: Event) => activityTypeOf(events, event) === 'agentStep';
function isAnswer(history: { events?: Event[] | null }, event: Event): boolean {
  return isAnswerEvent(history.events ?? [], event);
}
