/**
 * Sub-sessions that collaborate, on a real server with a scripted model that knows only its
 * requests: a parent's agent can use a sub-session's answer only if that answer is in the parent's
 * request, so a final answer that quotes it proves the follow-up turn saw the reply.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { decisionsQuery, historyQuery, resultUpdate, snapshotQuery } from '../contract/api.js';
import { SessionClient } from '../client/index.js';
import { MODEL, uniqueId, waitFor } from './support/harness.js';
import type { RecordedRequest, Reply } from './support/model-server.js';
import { agentSessionOf as sessionOf, useScriptedWorker } from './support/scripted-roles.js';

const f = useScriptedWorker();

const GOAL = 'Write the ComfyUI installation guide';
const ASK = 'Ask a specialist: which port does ComfyUI listen on?';
const TELL = 'Tell a specialist: the guide is due on Friday';
const SLOW = 'Ask a slow specialist: which Python version does ComfyUI need?';
const NEXT = 'Add a troubleshooting section';
const CHAIN = 'Ask a chain: which GPU does ComfyUI need at least?';
const REPLY_PREFIX = '[Reply from sub-session';

/** How deep the Session is, from its id: a sub-session's id is its parent's with `.sub-<hash>`. */
const depthOf = (sessionId: string) => sessionId.split('.sub-').length - 1;

/** The reply a `[Reply from sub-session ...]` message carries (the lines after its header). */
const replyBody = (content: string) => content.split('\n').slice(1).join(' ');

/**
 * The honest agent: everything it says comes from its request.
 * - Its newest user message is a sub-session's reply: it continues with it ("Final: <reply>", or
 *   "Relayed: <reply>" in a sub-session).
 * - After a tool result: says it handed the request over.
 * - "Ask a specialist" / "Ask a slow specialist" at the top: delegates (collaborate, the default);
 *   "Tell a specialist": delegates with mode notify; "Ask a chain" delegates at depths 0 and 1.
 * - A specialist (a sub-session asked a question) answers from what it knows, quoting the question.
 */
function honestAgent(req: RecordedRequest): Reply {
  const session = sessionOf(req);
  const depth = depthOf(session);
  const users = req.messages.filter((m) => m.role === 'user');
  const newest = users.at(-1)?.content ?? '';
  const last = req.messages.at(-1);
  if (newest.startsWith(REPLY_PREFIX) && last?.role === 'user') {
    return { content: `${depth === 0 ? 'Final' : 'Relayed'}: ${replyBody(newest)}` };
  }
  if (last?.role === 'tool') return { content: 'Asked a sub-session; its answer follows.' };
  const question = newest.replace(/^Ask a (slow |)specialist: |^Ask a chain: |^Tell a specialist: /, '');
  const delegate = (mode?: 'notify'): Reply => ({
    toolCalls: [{ id: 'call_1', name: 'session_create_sub', arguments: { text: question, ...(mode ? { mode } : {}) } }],
  });
  if (newest.startsWith('Ask a chain: ')) {
    if (depth < 2) return delegate();
    return { content: `Deep answer to "${question}": 8 GB of VRAM` };
  }
  if (newest.startsWith('Ask a specialist: ') || newest.startsWith('Ask a slow specialist: ')) {
    if (depth === 0) return delegate();
    const answer: Reply = { content: `Specialist answer to "${question}": 8188 and Python 3.12` };
    return newest.startsWith('Ask a slow') ? { delayMs: 4_000, then: answer } : answer;
  }
  if (newest.startsWith('Tell a specialist: ')) {
    if (depth === 0) return delegate('notify');
    return { content: `Noted: ${question}` };
  }
  return { content: `Working on: ${newest}` };
}

beforeAll(() => {
  f.server.on(MODEL.agent, honestAgent);
  f.script.selection.set(GOAL, { skills: [] });
  for (const text of [ASK, TELL, SLOW, NEXT, CHAIN]) {
    f.script.relevance.set(`${text}|${GOAL}`, [0.9, 0.9]);
    f.script.selection.set(text, { skills: [] });
  }
});

const client = () => new SessionClient(f.worker.client, { taskQueue: f.worker.taskQueue });
const handleOf = (sessionId: string) => f.worker.client.workflow.getHandle(`session:${sessionId}`);

/** The agent requests of one Session whose newest message is a sub-session's reply (its follow-ups). */
const followUps = (sessionId: string) =>
  f.server
    .requests(MODEL.agent)
    .filter((r) => sessionOf(r) === sessionId && r.messages.at(-1)?.content.startsWith(REPLY_PREFIX));

async function opened(settings: Record<string, unknown> = {}): Promise<string> {
  const sessionId = uniqueId('collab');
  await client().submit(sessionId, { text: GOAL }, { start: { settings }, wait: { timeoutMs: 30_000 } });
  return sessionId;
}

describe('a collaborating sub-session', () => {
  it("answers back, and the waiting caller gets the parent's final answer that uses the reply, once", async () => {
    const sessionId = await opened();
    const submitted = await client().submit(sessionId, { text: ASK }, { wait: { timeoutMs: 60_000 } });
    const record = submitted.decision!;
    const [delegation] = record.delegations ?? [];
    const childId = delegation!.sessionId;
    const answer = `Specialist answer to "which port does ComfyUI listen on?": 8188 and Python 3.12`;
    // The caller's wait ended with the follow-up turn's answer, which quotes the sub-session's reply.
    expect(record.agent).toMatchObject({
      outcome: 'replied',
      reply: `Final: ${answer}`,
      earlierReply: 'Asked a sub-session; its answer follows.',
      steps: 3,
    });
    expect(record.agent!.toolCalls).toEqual([expect.objectContaining({ callId: 'call_1', status: 'ok' })]);
    expect(delegation).toMatchObject({
      callId: 'call_1',
      mode: 'collaborate',
      status: 'followed-up',
      reply: { sessionId: childId, outcome: 'replied', text: answer },
      note: null,
    });

    const parent = handleOf(sessionId);
    const history = await parent.query(historyQuery);
    expect(history.find((h) => h.seq === submitted.seq)?.reply).toBe(`Final: ${answer}`);
    // Exactly one record for the input, one reply taken, one follow-up step asked.
    const records = (await parent.query(decisionsQuery)).filter((d) => d.seq === submitted.seq);
    expect(records).toHaveLength(1);
    const view = await parent.query(snapshotQuery);
    expect(view.recentControlEvents.filter((e) => e.kind === 'subSessionReply')).toHaveLength(1);
    expect(followUps(sessionId)).toHaveLength(1);
    expect(view.stage).toBe('Idle');
  });

  it('in notify mode is only recorded: the caller is answered when the turn ends, and no follow-up runs', async () => {
    const sessionId = await opened();
    const submitted = await client().submit(sessionId, { text: TELL }, { wait: { timeoutMs: 30_000 } });
    expect(submitted.decision?.agent).toMatchObject({ reply: 'Asked a sub-session; its answer follows.' });
    expect(submitted.decision?.agent?.earlierReply).toBeUndefined();
    const parent = handleOf(sessionId);
    const records = await waitFor(
      () => parent.query(decisionsQuery),
      (ds) => ds.find((d) => d.seq === submitted.seq)?.delegations?.[0]?.status === 'recorded',
    );
    const record = records.find((d) => d.seq === submitted.seq)!;
    expect(record.delegations![0]).toMatchObject({
      mode: 'notify',
      reply: { outcome: 'replied', text: 'Noted: the guide is due on Friday' },
    });
    expect(record.agent?.reply).toBe('Asked a sub-session; its answer follows.');
    expect(followUps(sessionId)).toHaveLength(0);
  });

  it('that answers after the parent moved on is recorded with a note and not acted on', async () => {
    const sessionId = await opened();
    const c = client();
    const { seq } = await c.submit(sessionId, { text: SLOW });
    const parent = handleOf(sessionId);
    // The parent's turn ends while the sub-session still thinks; the user moves on.
    await waitFor(
      () => parent.query(decisionsQuery),
      (ds) => ds.some((d) => d.seq === seq),
    );
    const next = await c.submit(sessionId, { text: NEXT }, { wait: { timeoutMs: 30_000 } });
    expect(next.decision?.agent?.reply).toBe(`Working on: ${NEXT}`);
    // The caller of the earlier input is no longer kept waiting for a follow-up that cannot run.
    const earlier = await parent.executeUpdate(resultUpdate, { args: [{ seq, timeoutMs: 1_000 }] });
    expect(earlier.status).toBe('done');
    const records = await waitFor(
      () => parent.query(decisionsQuery),
      (ds) => ds.find((d) => d.seq === seq)?.delegations?.[0]?.status === 'moved-on',
      30_000,
    );
    const record = records.find((d) => d.seq === seq)!;
    expect(record.delegations![0]!.note).toMatch(/moved on to input #3: recorded, not acted on/);
    expect(record.delegations![0]!.reply?.text).toMatch(/^Specialist answer/);
    expect(record.agent).toMatchObject({ reply: 'Asked a sub-session; its answer follows.' });
    expect(record.agent?.earlierReply).toBeUndefined();
    expect(followUps(sessionId)).toHaveLength(0);
  });

  it('that itself delegates holds its answer until its own follow-up (nested)', async () => {
    const sessionId = await opened();
    const submitted = await client().submit(sessionId, { text: CHAIN }, { wait: { timeoutMs: 60_000 } });
    const deep = 'Deep answer to "which GPU does ComfyUI need at least?": 8 GB of VRAM';
    // The middle sub-session relayed the deepest answer, and the parent used the relayed one.
    expect(submitted.decision?.agent?.reply).toBe(`Final: Relayed: ${deep}`);
    const middleId = submitted.decision!.delegations![0]!.sessionId;
    const middle = handleOf(middleId);
    const [middleRecord] = await middle.query(decisionsQuery);
    expect(middleRecord!.agent).toMatchObject({
      reply: `Relayed: ${deep}`,
      earlierReply: 'Asked a sub-session; its answer follows.',
    });
    expect(middleRecord!.delegations![0]).toMatchObject({ status: 'followed-up', reply: { text: deep } });
    expect(middleRecord!.answerHeld).toBeUndefined();
    // The parent took one reply from the middle sub-session: the relayed answer, never the interim one.
    const view = await handleOf(sessionId).query(snapshotQuery);
    const replies = view.recentControlEvents.filter((e) => e.kind === 'subSessionReply');
    expect(replies).toHaveLength(1);
    expect(replies[0]!.summary).toContain('Relayed:');
    expect(followUps(sessionId)).toHaveLength(1);
    expect(followUps(middleId)).toHaveLength(1);
  });

  it('counts its follow-up toward the step limit', async () => {
    const sessionId = await opened({ maxAgentSteps: 2 });
    const submitted = await client().submit(sessionId, { text: ASK }, { wait: { timeoutMs: 60_000 } });
    // Two steps delegated and replied; the follow-up had none left.
    expect(submitted.decision?.agent).toMatchObject({
      outcome: 'guarded',
      reason: 'step limit of 2 reached without a reply',
      reply: null,
      earlierReply: 'Asked a sub-session; its answer follows.',
      steps: 2,
    });
    expect(submitted.decision?.delegations?.[0]?.status).toBe('followed-up');
    expect(followUps(sessionId)).toHaveLength(0);
  });
});
