/**
 * kill -9 of the worker during a collaborating delegation, and again while the reply is handed back.
 * Two parents each delegate a question to a sub-session (`session_create_sub`, collaborate) whose
 * model step is slow, and a caller waits on each delegating input (`waitForDecision`, the `result`
 * update). The first worker is killed while the sub-sessions' steps run; the next one finishes them
 * and hands each reply to its parent, then hangs before the answerParent activity completes and is
 * killed too, so every reply is delivered again by the retry on a third worker.
 *
 * Each caller must get the parent's final answer, which quotes the sub-session's reply (the scripted
 * model can only quote what its request holds), and each parent must have taken the reply once and
 * run one follow-up turn for it.
 */
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { SessionClient } from '../../client/index.js';
import { decisionsQuery, snapshotQuery } from '../../contract/api.js';
import { MODEL, uniqueId, waitFor } from '../support/harness.js';
import { ScriptedModelServer, type RecordedRequest, type Reply } from '../support/model-server.js';
import { agentSessionOf, scriptRoles } from '../support/scripted-roles.js';
import type { WorkerProcess } from '../support/spawn-worker.js';
import { startParents, workerSpawner } from './parents.js';
import { activityTypeOf, runHistories } from './audit.js';

const PARENTS = 2;
const GOAL = 'Write the ComfyUI installation guide';
const question = (i: number) => `Ask a specialist: which port does install ${i} use?`;
const answerTo = (text: string) => `Specialist: "${text}" uses port 8188.`;
const REPLY_PREFIX = '[Reply from sub-session';
/** Small timeouts so a model step the kill orphans is retried within seconds. */
const settings = { modelTimeoutMs: 5_000, agentTimeoutMs: 12_000, modelAttempts: 4 };

let models: ScriptedModelServer;
let connection: Connection;
let client: Client;
const workers: WorkerProcess[] = [];

/**
 * A sub-session answers the newest user message after a slow step. A parent delegates a question,
 * says so after the tool result, and quotes a sub-session's reply when its request ends with one.
 */
function agent(req: RecordedRequest): Reply {
  const session = agentSessionOf(req);
  const newest = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const last = req.messages.at(-1);
  if (session.includes('.sub-')) return { delayMs: 4_000, then: { content: answerTo(newest) } };
  if (last?.role === 'user' && newest.startsWith(REPLY_PREFIX)) {
    return { content: `Final: ${newest.split('\n').slice(1).join(' ')}` };
  }
  if (last?.role === 'tool') return { content: 'Asked a specialist.' };
  if (newest.startsWith('Ask a specialist:')) {
    return { toolCalls: [{ id: 'call_1', name: 'session_create_sub', arguments: { text: newest } }] };
  }
  return { content: `Working on: ${newest}` };
}

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  const script = scriptRoles(models);
  models.on(MODEL.agent, agent);
  script.selection.set(GOAL, { skills: [] });
  for (let i = 0; i < PARENTS; i++) {
    script.relevance.set(`${question(i)}|${GOAL}`, [0.9, 0.9]);
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

it('delivers the final answer that used the sub-session reply exactly once across kills', async () => {
  const taskQueue = uniqueId('collab-kill');
  const spawn = workerSpawner(taskQueue, models, workers);
  const first = await spawn();
  const parents = await startParents(client, taskQueue, {
    count: PARENTS,
    prefix: 'collab',
    goal: GOAL,
    question,
    settings,
  });
  // The callers wait on the delegating inputs from before the first kill, as `submit` with `wait` does.
  const sessions = new SessionClient(client, { taskQueue });
  const waiting = parents.map((p) =>
    sessions.waitForDecision(p.workflowId.slice('session:'.length), 2, { timeoutMs: 180_000 }),
  );
  const childAgentSteps = () =>
    models.requests(MODEL.agent).filter((r) => /Session \S+\.sub-/.test(r.messages[0]?.content ?? ''));
  // Every sub-session's slow model step is in flight: kill the worker in the middle of the delegation.
  await waitFor(
    () => Promise.resolve(childAgentSteps().length),
    (n) => n >= PARENTS,
    60_000,
  );
  await first.kill();
  const second = await spawn({ HARNESS_TEST_HANG_AFTER_ANSWER: '1' });

  const children = await Promise.all(
    parents.map(async (p) => {
      const found = await waitFor(
        () => p.query(decisionsQuery),
        (ds) => ds.some((d) => d.seq === 2 && (d.delegations?.length ?? 0) > 0),
        60_000,
      );
      return found.find((d) => d.seq === 2)!.delegations![0]!.sessionId;
    }),
  );
  // Each reply reached its parent, and the activity that carried it hangs: kill it there.
  await Promise.all(children.map((child) => second.line(new RegExp(`^parent answered ${child}:1$`))));
  await second.kill();
  await spawn();

  const records = await Promise.all(waiting);
  records.forEach((record, i) => {
    const answer = answerTo(question(i));
    expect(record?.agent).toMatchObject({
      outcome: 'replied',
      reply: `Final: ${answer}`,
      earlierReply: 'Asked a specialist.',
      steps: 3,
    });
    expect(record?.delegations).toEqual([
      expect.objectContaining({
        sessionId: children[i],
        status: 'followed-up',
        reply: expect.objectContaining({ text: answer }),
      }),
    ]);
  });

  for (const [i, parent] of parents.entries()) {
    // The retried hand-back has run on the third worker by the time the child's activity completes.
    const childHandle = client.workflow.getHandle(`session:${children[i]}`);
    const childHistories = await waitFor(
      async () => runHistories(client, childHandle.workflowId, (await childHandle.describe()).runId),
      (histories) =>
        histories.some((h) =>
          (h.events ?? []).some(
            (e) => e.activityTaskCompletedEventAttributes && activityTypeOf(h.events ?? [], e) === 'answerParent',
          ),
        ),
      60_000,
    );
    const childEvents = childHistories.flatMap((h) => h.events ?? []);
    const answers = childEvents.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'answerParent',
    );
    expect(answers).toHaveLength(1);
    const answerStarts = childEvents.filter(
      (e) => e.activityTaskStartedEventAttributes && activityTypeOf(childEvents, e) === 'answerParent',
    );
    // The kill landed during the hand-back: the activity ran a second time.
    expect(answerStarts.at(-1)?.activityTaskStartedEventAttributes?.attempt).toBeGreaterThanOrEqual(2);

    // The parent took the reply once and ran one follow-up turn for it: one record, one reply event,
    // and the follow-up's agent step scheduled once in its history.
    const records = (await parent.query(decisionsQuery)).filter((d) => d.seq === 2);
    expect(records).toHaveLength(1);
    const view = await parent.query(snapshotQuery);
    expect(view.recentControlEvents.filter((e) => e.kind === 'subSessionReply')).toHaveLength(1);
    const parentHistories = await runHistories(client, parent.workflowId, (await parent.describe()).runId);
    const parentEvents = parentHistories.flatMap((h) => h.events ?? []);
    const replyAt = parentEvents.findIndex(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'subSessionReply',
    );
    expect(replyAt).toBeGreaterThan(0);
    const stepsAfterReply = parentEvents
      .slice(replyAt)
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'agentStep');
    expect(stepsAfterReply).toHaveLength(1);
  }
});
