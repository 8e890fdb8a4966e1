/**
 * `whileBusy` on the real server: a message sent while an agent turn runs (a slow model step, or a
 * slow tool whose side effect is journaled by its idempotency key) is queued behind the turn
 * (`enqueue`), refused (`reject`), ends the turn (`interrupt`) or joins it at its next step boundary
 * (`merge`). Each test asserts the recorded outcome, and that no input is lost and no model step or
 * tool call runs twice. The agent is honest: it answers from its request alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import { InputRefusedError } from '../client/errors.js';
import { SessionClient } from '../client/session-client.js';
import { eventsQuery, historyQuery, resultUpdate, snapshotQuery, submitUpdate } from '../contract/api.js';
import { harnessFailureOf, FAILURE } from '../contract/failures.js';
import type { TurnResult } from '../contract/queries.js';
import {
  MODEL,
  decided,
  message,
  scriptedModels,
  send,
  startSession,
  startWorker,
  waitFor,
  type TestWorker,
} from './support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from './support/mcp-fixture.js';
import { readJournal } from './support/mcp-fixture-server.js';
import { ScriptedModelServer, type RecordedRequest, type Reply } from './support/model-server.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

/** How long a "slowly" step takes: long enough to send a message into it. */
const SLOW_MS = 3_000;

let dir: string;
let journal: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let worker: TestWorker;
let client: SessionClient;

const lastUserIndex = (req: RecordedRequest) => req.messages.map((m) => m.role).lastIndexOf('user');
const lastUser = (req: RecordedRequest) => (req.messages[lastUserIndex(req)]?.content ?? '').split('\n[resource]')[0]!;
const users = (req: RecordedRequest) => req.messages.filter((m) => m.role === 'user').map((m) => m.content);

/**
 * The agent, honest to its request. For the newest user message: "Think slowly about X" takes
 * SLOW_MS, then echoes X through the offered tool; "Journal X" journals X; "Think forever" never
 * answers in time. Once a tool result follows the message it reports it; otherwise it says `Ready`.
 */
function agent(req: RecordedRequest): Reply {
  const text = lastUser(req);
  const result = req.messages.slice(lastUserIndex(req) + 1).find((m) => m.role === 'tool');
  if (result) return { content: `Done: ${text} (${result.content})` };
  const tool = (name: string) => req.tools.find((t) => t.name.endsWith(name))?.name;
  const slowly = /^Think slowly about (.+)$/.exec(text)?.[1];
  const echo = tool('echo');
  if (slowly && echo) return { delayMs: SLOW_MS, then: { toolCalls: [{ name: echo, arguments: { text: slowly } }] } };
  const note = /^Journal (.+)$/.exec(text)?.[1];
  const journalTool = tool('journal');
  if (note && journalTool) return { toolCalls: [{ name: journalTool, arguments: { note } }] };
  if (text === 'Think forever') return { delayMs: 60_000, then: { content: 'too late' } };
  return { content: `Ready: ${text}` };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'while-busy-'));
  journal = join(dir, 'journal.log');
  const connected = await connectedCatalog({
    fixture: fixtureMcpEntry(dir, ['echo', 'add', 'journal'], { MCP_FIXTURE_JOURNAL: journal }),
  });
  mcp = connected.mcp;
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  server.on(MODEL.agent, agent);
  worker = await startWorker({ models: scriptedModels(server), catalog: connected.catalog, mcp });
  client = new SessionClient(worker.client, { taskQueue: worker.taskQueue });
});

afterAll(async () => {
  await worker?.stop();
  await mcp?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A Session whose goal loads the fixture's tools; the agent's first step waits for the decision. */
async function session(task: string, settings: Record<string, unknown> = {}): Promise<WorkflowHandle> {
  // Recall finds the fixture's toolset by its tags.
  const goal = `${task} with the fixture tools: echo`;
  script.selection.set(goal, { skills: [], toolsets: ['mcp-fixture'] });
  const handle = await startSession(worker, { settings: { speculativeAgentStep: false, ...settings } });
  await send(handle, goal);
  expect((await decided(handle, 1)).agent?.outcome).toBe('replied');
  expect((await handle.query(snapshotQuery)).capabilities.toolsets.map((c) => c.id)).toEqual(['mcp-fixture']);
  return handle;
}

/** Sends `text` (a continue) and returns once its turn's model step is under way. */
async function busyWith(handle: WorkflowHandle, seq: number, text: string): Promise<void> {
  script.relevance.set(text, [0.9, 0.9]);
  await send(handle, text);
  await waitFor(
    () => handle.query(snapshotQuery),
    (s) => s.turn?.seq === seq && s.stage === 'Running the agent',
  );
}

const result = (handle: WorkflowHandle, seq: number): Promise<TurnResult> =>
  handle.executeUpdate(resultUpdate, { args: [{ seq, timeoutMs: 30_000 }] });

/** The agent requests made for the turn whose newest user message is `text`. */
const stepsFor = (text: string) => server.requests(MODEL.agent).filter((r) => lastUser(r) === text);

describe('a message sent while the agent works (whileBusy)', () => {
  it('enqueue (the default): waits behind the turn and gets a turn of its own after it', async () => {
    const handle = await session('Enqueue: write the install guide');
    const first = 'Think slowly about enqueue prerequisites';
    await busyWith(handle, 2, first);
    const later = 'Enqueue: add a troubleshooting section';
    script.relevance.set(later, [0.9, 0.9]);
    await send(handle, later);

    expect((await result(handle, 2)).record?.agent).toMatchObject({
      outcome: 'replied',
      reply: expect.stringContaining('Done: Think slowly about enqueue prerequisites'),
    });
    const second = await result(handle, 3);
    expect(second.record?.agent).toMatchObject({ outcome: 'replied', reply: `Ready: ${later}` });
    // The running turn never saw it; each turn ran its steps once.
    expect(stepsFor(first).flatMap(users)).not.toContain(later);
    expect(stepsFor(first)).toHaveLength(2);
    expect(stepsFor(later)).toHaveLength(1);
    const history = await handle.query(historyQuery);
    expect(history.map((h) => h.seq)).toEqual([1, 2, 3]);
    expect(history.find((h) => h.seq === 3)?.busy).toBeUndefined();
  });

  it('reject: refuses it with cause busy and uses no seq; the same message is accepted once the turn is over', async () => {
    const handle = await session('Reject: write the install guide');
    const sessionId = handle.workflowId.slice('session:'.length);
    const first = 'Think slowly about reject prerequisites';
    await busyWith(handle, 2, first);
    const draft = { messageId: `busy-${sessionId}`, text: 'Reject: add a section on updates' };

    // Per message, through the client: InputRefusedError, marked busy, from a SessionBusy failure.
    const refused = await client.submit(sessionId, { ...draft, whileBusy: 'reject' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InputRefusedError);
    expect((refused as InputRefusedError).busy).toBe(true);
    expect((refused as InputRefusedError).message).toContain('busy with input #2');
    // Through the raw update, the failure's type is SessionBusy.
    const raw = await handle
      .executeUpdate(submitUpdate, { args: [message('Reject: raw update', { whileBusy: 'reject' })] })
      .catch((e: unknown) => e);
    expect(raw).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(harnessFailureOf(raw)?.type).toBe(FAILURE.SessionBusy);
    // A signal is refused the same way, only recorded.
    await send(handle, 'Reject: a signalled message', { whileBusy: 'reject' });

    const during = await waitFor(
      () => handle.query(snapshotQuery),
      (s) => (s.counts.rejectedBy.busy ?? 0) === 3,
    );
    expect(during.seq.lastAccepted).toBe(2);
    expect(during.turn?.seq).toBe(2);
    expect(
      during.recentRejections.filter((r) => r.reason.includes('whileBusy: reject')).map((r) => r.messageId),
    ).toEqual([draft.messageId, expect.stringMatching(/^m-/), expect.stringMatching(/^m-/)]);

    expect((await result(handle, 2)).record?.agent?.outcome).toBe('replied');
    expect(stepsFor(first)).toHaveLength(2);
    // Between turns the refused message is taken, as a new input: it was not remembered as a duplicate.
    script.relevance.set(draft.text, [0.9, 0.9]);
    const again = await client.submit(sessionId, { ...draft, whileBusy: 'reject' }, { wait: true });
    expect(again).toMatchObject({ seq: 3, duplicate: false });
    expect(again.decision?.agent).toMatchObject({ outcome: 'replied', reply: `Ready: ${draft.text}` });
  });

  it('interrupt: a running tool call finishes once, a model step in flight is cancelled, then the message gets its turn', async () => {
    const handle = await session('Interrupt: keep the release log', { whileBusy: 'interrupt' });
    const journaling = 'Journal interrupt release notes';
    script.relevance.set(journaling, [0.9, 0.9]);
    const starts = () => readJournal(journal).filter((l) => l.kind === 'start');
    const before = starts().length;
    await send(handle, journaling);
    await waitFor(
      () => Promise.resolve(starts().length),
      (n) => n === before + 1,
    );
    const stop = 'Interrupt: summarise the log instead';
    script.relevance.set(stop, [0.9, 0.9]);
    const stopping = await send(handle, stop);

    const cut = await result(handle, 2);
    expect(cut.record?.agent).toMatchObject({ outcome: 'interrupted', reply: null, steps: 1 });
    expect(cut.record?.agent?.reason).toContain(stopping.messageId);
    // The tool call that ran when the message came finished, once; the model was not asked again.
    expect(cut.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        tool: expect.stringContaining('journal'),
        status: 'ok',
        result: 'journaled interrupt release notes',
      }),
    ]);
    const key = starts().at(-1)!.key;
    expect(
      readJournal(journal)
        .filter((l) => l.key === key)
        .map((l) => l.kind),
    ).toEqual(['start', 'done']);
    expect(stepsFor(journaling)).toHaveLength(1);
    expect((await result(handle, 3)).record?.agent).toMatchObject({ outcome: 'replied', reply: `Ready: ${stop}` });
    const history = await handle.query(historyQuery);
    expect(history.find((h) => h.seq === 3)?.busy).toEqual({ mode: 'interrupt', turn: 2 });

    // A model step in flight is cancelled: the turn ends long before the step would have answered.
    await busyWith(handle, 4, 'Think forever');
    const sentAt = Date.now();
    const next = 'Interrupt: answer this now';
    script.relevance.set(next, [0.9, 0.9]);
    await send(handle, next);
    expect((await result(handle, 4)).record?.agent).toMatchObject({ outcome: 'interrupted', reply: null });
    expect((await result(handle, 5)).record?.agent).toMatchObject({ outcome: 'replied', reply: `Ready: ${next}` });
    expect(Date.now() - sentAt).toBeLessThan(30_000);
    expect(stepsFor('Think forever')).toHaveLength(1);
    expect(stepsFor(next)).toHaveLength(1);
  });

  it('merge: a continuing message joins the running turn at its next step; one that opens a new phase waits its turn', async () => {
    const handle = await session('Merge: write the install guide', { whileBusy: 'merge' });
    const first = 'Think slowly about merge prerequisites';
    await busyWith(handle, 2, first);
    const also = 'Merge: also cover the GPU drivers';
    script.relevance.set(also, [0.9, 0.9]);
    await send(handle, also);

    const turn = await result(handle, 2);
    // The step after the boundary was asked with both messages and the tool's result; the turn answered it.
    expect(turn.record?.agent).toMatchObject({ outcome: 'replied', reply: `Ready: ${also}`, steps: 2 });
    const [stepOne, stepTwo, ...more] = server.requests(MODEL.agent).filter((r) => users(r).includes(first));
    expect(more).toEqual([]);
    expect(users(stepOne!)).not.toContain(also);
    expect(users(stepTwo!).slice(-2)).toEqual([first, also]);
    expect(stepTwo!.messages.some((m) => m.role === 'tool')).toBe(true);
    const merged = await result(handle, 3);
    expect(merged).toMatchObject({ status: 'done', outcome: 'merged' });
    expect(merged.record).toMatchObject({ decision: 'continue', agent: { outcome: 'merged', steps: 0 } });
    expect(merged.record?.agent?.reason).toContain('input #2');
    const history = await handle.query(historyQuery);
    expect(history.find((h) => h.seq === 3)?.busy).toEqual({ mode: 'merge', turn: 2, merged: true });
    const events = (await handle.query(eventsQuery, { limit: 500 })).events;
    expect(events.filter((e) => e.kind === 'input.merged')).toEqual([
      expect.objectContaining({
        seq: 2,
        mergedSeq: 3,
        into: 2,
        decision: 'continue',
        messageId: history[2]!.messageId,
      }),
    ]);
    // No turn of its own: the one turn.finished of seq 2 is the turn's, and there is none for seq 3.
    expect(events.filter((e) => e.kind === 'turn.finished').map((e) => e.seq)).toEqual([1, 2]);

    // A message that would open a new phase is judged at the boundary, stays queued, and runs after.
    const second = 'Think slowly about merge configuration';
    await busyWith(handle, 4, second);
    const poem = 'Merge: write a poem about autumn';
    script.relevance.set(poem, [0.1, 0.9]);
    script.selection.set(poem, { skills: [], toolsets: ['mcp-fixture'] });
    await send(handle, poem);
    expect((await result(handle, 4)).record?.agent).toMatchObject({
      outcome: 'replied',
      reply: expect.stringContaining(`Done: ${second}`),
    });
    expect(stepsFor(second).flatMap(users)).not.toContain(poem);
    const own = await result(handle, 5);
    expect(own.record).toMatchObject({ decision: 'new-phase', agent: { outcome: 'replied', reply: `Ready: ${poem}` } });
    const later = await handle.query(historyQuery);
    expect(later.find((h) => h.seq === 5)?.busy).toEqual({ mode: 'merge', turn: 4, merged: false });
    expect(later.map((h) => h.seq)).toEqual([1, 2, 3, 4, 5]);
  });
});
