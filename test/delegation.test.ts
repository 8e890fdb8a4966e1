/**
 * Sub-sessions answer back, on a real server with a scripted model that knows only its requests: a
 * sub-session answers the request it finds in its own request, and the parent's agent can repeat a
 * sub-session's answer only if that answer is in the parent's request.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { decisionsQuery, historyQuery, snapshotQuery } from '../contract/api.js';
import { SessionClient } from '../client/index.js';
import type { DecisionRecord } from '../contract/state.js';
import { MODEL, decided, send, startSession, waitFor } from './support/harness.js';
import type { RecordedRequest, Reply } from './support/model-server.js';
import { agentSessionOf as sessionOf, useScriptedWorker } from './support/scripted-roles.js';

const f = useScriptedWorker();

const GUIDE = 'Research ComfyUI and deliver a Markdown guide';
const WEATHER = 'Will it rain in Hangzhou on Friday?';
const ASK_BACK = 'What did you find out about the weather?';
const README = 'Translate the README into French';
const CHANGELOG = 'Translate the CHANGELOG into German';
const TWICE = 'Split the translation work in two';
/** What the parent's agent writes beside each delegated request (its own words, not the user's). */
const NOTE: Record<string, string> = {
  [README]: 'Translation job: keep the Markdown headings as they are.',
  [CHANGELOG]: 'Translation job: one bullet per release.',
  [TWICE]: 'Part of a split job.',
};

/**
 * The honest agent: everything it says comes from its request. A sub-session answers the newest
 * user message (and says whether a parent's note came with it); a parent delegates the requests it
 * is scripted to delegate (always with call id `call_1`, as models do), and repeats a sub-session's
 * reply only when it finds one in its request.
 */
function honestAgent(req: RecordedRequest): Reply {
  const session = sessionOf(req);
  const users = req.messages.filter((m) => m.role === 'user');
  const newest = users.at(-1)?.content ?? '';
  if (session.includes('.sub-')) {
    const note = users.find((m) => m.content.startsWith('[Note from Session'));
    const seen = note ? ` (parent's note: ${note.content.split('\n').slice(1).join(' ')})` : '';
    return { content: `Sub-session answer to "${newest}"${seen}` };
  }
  const last = req.messages.at(-1);
  if (last?.role === 'tool' || newest.startsWith('[Reply from sub-session')) {
    return { content: 'Handed over to a sub-session.' };
  }
  if (newest === TWICE) {
    const call = { name: 'session_create_sub', arguments: { text: NOTE[TWICE]! } };
    return {
      toolCalls: [
        { ...call, id: 'call_1' },
        { ...call, id: 'call_2' },
      ],
    };
  }
  if (NOTE[newest])
    return { toolCalls: [{ id: 'call_1', name: 'session_create_sub', arguments: { text: NOTE[newest] } }] };
  if (newest === ASK_BACK) {
    const reply = users.find((m) => m.content.startsWith('[Reply from sub-session'));
    return {
      content: reply ? `The sub-session said: ${reply.content.split('\n').slice(1).join(' ')}` : 'I do not know.',
    };
  }
  return { content: `Working on: ${newest}` };
}

beforeAll(() => {
  f.server.on(MODEL.agent, honestAgent);
  f.script.terms.set(GUIDE, ['comfyui', 'research', 'markdown', 'guide']);
  f.script.selection.set(GUIDE, { skills: ['technical-research', 'markdown-guide'], toolsets: ['web-search'] });
  f.script.relevance.set(`${WEATHER}|${GUIDE}`, [0.05, 0.05]);
  for (const text of [ASK_BACK, README, CHANGELOG, TWICE]) f.script.relevance.set(`${text}|${GUIDE}`, [0.9, 0.9]);
  for (const text of [WEATHER, README, CHANGELOG, TWICE]) f.script.selection.set(text, { skills: [] });
});

const idOf = (workflowId: string) => workflowId.replace('session:', '');

describe('an out-of-scope request routed to a sub-session', () => {
  it('comes back to the waiting caller, the record, the children view and the parent’s agent', async () => {
    const client = new SessionClient(f.worker.client, { taskQueue: f.worker.taskQueue });
    const sessionId = `answers-${Date.now().toString(36)}`;
    await client.submit(sessionId, { text: GUIDE }, { wait: { timeoutMs: 30_000 } });

    const started = Date.now();
    const submitted = await client.submit(sessionId, { text: WEATHER }, { wait: { timeoutMs: 30_000 } });
    const waited = Date.now() - started;
    const record = submitted.decision!;
    expect(record).toMatchObject({ decision: 'out-of-scope', route: { via: 'new-sub' } });
    const childId = record.route!.to!;
    const answer = `Sub-session answer to "${WEATHER}"`;
    // The caller's wait ended with the sub-session's reply in the record, not before it came.
    expect(record.route!.reply).toMatchObject({ sessionId: childId, seq: 1, outcome: 'replied', text: answer });
    expect(waited).toBeLessThan(15_000);

    const parent = f.worker.client.workflow.getHandle(`session:${sessionId}`);
    const history = await parent.query(historyQuery);
    expect(history.find((h) => h.seq === submitted.seq)?.reply).toBe(answer);
    const view = await parent.query(snapshotQuery);
    expect(view.children).toEqual([
      expect.objectContaining({
        sessionId: childId,
        status: 'idle',
        awaiting: 0,
        lastReply: expect.objectContaining({ text: answer }),
      }),
    ]);
    expect(view.recentControlEvents.at(-1)).toMatchObject({
      kind: 'subSessionReply',
      id: `subSessionReply:${childId}:1`,
    });

    // The sub-session got the user's text verbatim, no note (routing adds none).
    const child = f.worker.client.workflow.getHandle(`session:${childId}`);
    const [bound] = await child.query(historyQuery);
    expect(bound).toMatchObject({
      text: WEATHER,
      note: null,
      routed: { fromSessionId: sessionId, seq: submitted.seq },
    });

    // The parent's agent finds the answer in its own request.
    const asked = await client.submit(sessionId, { text: ASK_BACK }, { wait: { timeoutMs: 30_000 } });
    expect(asked.decision?.agent?.reply).toBe(`The sub-session said: ${answer}`);
  });
});

describe('two turns that both delegate with call id call_1', () => {
  it('create two sub-sessions, each given the user’s text verbatim with the agent’s note beside it', async () => {
    const parent = await startSession(f.worker);
    const parentId = idOf(parent.workflowId);
    await send(parent, GUIDE);
    await decided(parent, 1);
    await send(parent, README);
    await decided(parent, 2);
    await send(parent, CHANGELOG);
    const third = await decided(parent, 3);
    expect(third.agent?.toolCalls).toEqual([expect.objectContaining({ callId: 'call_1', status: 'ok' })]);

    const view = await waitFor(
      () => parent.query(snapshotQuery),
      (v) => v.children.length === 2 && v.children.every((c) => c.lastReply !== null),
    );
    const [first, second] = view.children;
    expect(first!.sessionId).not.toBe(second!.sessionId);
    for (const [child, text] of [
      [first!, README],
      [second!, CHANGELOG],
    ] as const) {
      const handle = f.worker.client.workflow.getHandle(`session:${child.sessionId}`);
      const [bound] = await handle.query(historyQuery);
      expect(bound).toMatchObject({
        text,
        note: NOTE[text],
        routed: { fromSessionId: parentId, reason: 'delegated', seq: child.createdAtSeq },
      });
      expect(bound!.messageId).toBe(`tool:${child.createdAtSeq}:call_1`);
      // The sub-session's agent saw the user's words as the newest message and the note beside them.
      expect(child.lastReply?.text).toBe(`Sub-session answer to "${text}" (parent's note: ${NOTE[text]})`);
      expect(child).toMatchObject({ status: 'idle', awaiting: 0 });
    }
    const requests = f.server.requests(MODEL.agent).filter((r) => sessionOf(r) === parentId);
    const lastRequest = requests.at(-1)!;
    // Both answers reached the parent's transcript, which its agent sees.
    const replies = lastRequest.messages.filter((m) => m.content.startsWith('[Reply from sub-session'));
    expect(replies.length).toBeGreaterThanOrEqual(1);
  });
});

describe('limits on delegation', () => {
  async function toolCallsOf(handle: Awaited<ReturnType<typeof startSession>>, seq: number) {
    const record = (await handle.query(decisionsQuery)).find((d: DecisionRecord) => d.seq === seq);
    return record?.agent?.toolCalls ?? [];
  }

  it('refuses a sub-session beyond the per-turn limit with a tool error the model sees', async () => {
    const parent = await startSession(f.worker, { settings: { maxSubSessionsPerTurn: 1 } });
    await send(parent, GUIDE);
    await decided(parent, 1);
    await send(parent, TWICE);
    await decided(parent, 2);
    const calls = await toolCallsOf(parent, 2);
    expect(calls.map((c) => [c.callId, c.status])).toEqual([
      ['call_1', 'ok'],
      ['call_2', 'error'],
    ]);
    expect(calls[1]!.result).toMatch(/at most 1 sub-sessions per turn/);
    const seen = f.server
      .requests(MODEL.agent)
      .filter((r) => sessionOf(r) === idOf(parent.workflowId))
      .flatMap((r) => r.messages)
      .find((m) => m.role === 'tool' && m.toolCallId === 'call_2');
    expect(seen?.content).toMatch(/^\[error\] session_create_sub refused: at most 1 sub-sessions per turn/);
    expect((await parent.query(snapshotQuery)).children).toHaveLength(1);
  });

  it('refuses a sub-session beyond the depth limit', async () => {
    const deep = await startSession(f.worker, { depth: 2, settings: { maxSessionDepth: 2 } });
    await send(deep, GUIDE);
    await decided(deep, 1);
    await send(deep, README);
    await decided(deep, 2);
    const calls = await toolCallsOf(deep, 2);
    expect(calls).toEqual([expect.objectContaining({ callId: 'call_1', status: 'error' })]);
    expect(calls[0]!.result).toMatch(/depth 2 and sub-sessions may go at most 2 deep/);
    expect((await deep.query(snapshotQuery)).children).toEqual([]);
  });
});
