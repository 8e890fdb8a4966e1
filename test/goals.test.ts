/**
 * Goals with a lifecycle, on the real server with honest scripted models (each answer derived only
 * from its request): a greeting sets no goals and the task after it becomes the first task, stated
 * by the extraction call; a `continue` that refines updates the phase goal, not the session goal; and
 * after a conflict, the user's confirmation lets the agent (test/support/honest-agent.ts `goalAgent`)
 * propose a new session goal with `propose_goal_change`, committed once a person approves it.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalSignal, eventsQuery, goalsQuery, resultUpdate, snapshotQuery } from '../contract/api.js';
import type { TurnResult } from '../contract/queries.js';
import { MODEL, decided, scriptedModels, send, startSession, startWorker, type TestWorker } from './support/harness.js';
import { goalAgent } from './support/honest-agent.js';
import type { ScriptedModelServer, RecordedRequest } from './support/model-server.js';
import { useScriptedWorker, type RoleScript } from './support/scripted-roles.js';

const fixture = useScriptedWorker();
let server: ScriptedModelServer;
let script: RoleScript;
let worker: TestWorker;

/** A worker that judges relevance and extracts terms in two calls (`HARNESS_UNDERSTANDING=separate`). */
let separate: TestWorker;

beforeAll(async () => {
  ({ server, script, worker } = fixture);
  server.on(MODEL.agent, goalAgent);
  separate = await startWorker({ models: scriptedModels(server), understanding: 'separate' });
});

afterAll(async () => {
  await separate?.stop();
});

const GREETING = 'Hi, can you help me?';
const TASK = 'Please research ComfyUI and write a complete guide, thanks!';
const STATEMENT = 'Research ComfyUI and write a complete guide';

/** A Session whose first task (after a greeting) is TASK, stated as STATEMENT. */
async function sessionWithTask(on: TestWorker = worker): Promise<WorkflowHandle> {
  script.selection.set(STATEMENT, { skills: [], toolsets: [] });
  script.statement.set(TASK, STATEMENT);
  const handle = await startSession(on);
  await send(handle, GREETING);
  await send(handle, TASK);
  await decided(handle, 2);
  return handle;
}

/** Sends an input with scripted scores and waits until its turn ends or waits for someone. */
async function turn(handle: WorkflowHandle, seq: number, text: string, scores: [number, number]): Promise<TurnResult> {
  script.relevance.set(text, scores);
  await send(handle, text);
  return handle.executeUpdate(resultUpdate, { args: [{ seq, timeoutMs: 60_000 }] });
}

/** The agent model requests of the turn for `text`, in order. */
const requestsFor = (text: string): RecordedRequest[] =>
  server
    .requests(MODEL.agent)
    .filter((r) => [...r.messages].reverse().find((m) => m.role === 'user')?.content === text);
const offered = (r: RecordedRequest | undefined) => r?.tools.some((t) => t.name === 'propose_goal_change') ?? false;

describe('goals with a lifecycle', () => {
  it('a greeting sets no goals; the task after it is the first task, its statement the session goal', async () => {
    const handle = await sessionWithTask();
    const greeting = await decided(handle, 1);
    const task = await decided(handle, 2);

    expect(greeting?.decision).toBe('initialize');
    expect(greeting?.goals).toBeUndefined();
    expect(greeting?.stages.filter((s) => s.outcome === 'skipped: no task stated').map((s) => s.stage)).toEqual([
      'Discovering task capabilities',
      'Orchestrating the task',
      'Applying the task environment',
    ]);
    expect(greeting?.agent).toMatchObject({ outcome: 'skipped', reason: 'no task stated' });

    expect(task?.decision).toBe('initialize');
    const goals = await handle.query(goalsQuery);
    expect(goals.session).toMatchObject({ text: STATEMENT, source: TASK, setAtSeq: 2 });
    expect(goals.phase).toMatchObject({ text: STATEMENT, source: TASK, setAtSeq: 2 });
    expect(task?.goals?.map((g) => [g.level, g.reason, g.old, g.new])).toEqual([
      ['session', 'initialize', null, STATEMENT],
      ['phase', 'initialize', null, STATEMENT],
    ]);
    // The statement came from the extraction call, which saw the message itself.
    const extraction = server
      .requests(MODEL.extraction)
      .filter((r) => r.messages.some((m) => m.content.includes(TASK)));
    expect(extraction).toHaveLength(1);
    expect(server.requests(MODEL.extraction).some((r) => r.messages.some((m) => m.content.includes(GREETING)))).toBe(
      true,
    );
    // Orchestration and the agent work on the statement, not on the raw message.
    expect((await decided(handle, 2)).agent?.reply).toBe(`Working on: ${STATEMENT}`);
  });

  it("a new phase's goal is the understanding call's statement, or the extraction call's with separate understanding; an invalid one gives way to the deterministic statement", async () => {
    const opens = 'Could you now draft the announcement blog post?';
    const stated = 'Draft the announcement blog post';
    script.statement.set(opens, stated);
    script.selection.set(stated, { skills: [], toolsets: [] });
    const combined = await sessionWithTask();
    const extractions = () =>
      server.requests(MODEL.extraction).filter((r) => r.messages.some((m) => m.content.includes(opens))).length;
    expect((await turn(combined, 3, opens, [0.1, 0.9])).record?.goals).toEqual([
      expect.objectContaining({ level: 'phase', reason: 'new-phase', old: STATEMENT, new: stated }),
    ]);
    expect(extractions()).toBe(0);
    expect((await combined.query(goalsQuery)).phase).toMatchObject({ text: stated, source: opens, setAtSeq: 3 });

    const split = await sessionWithTask(separate);
    const done = await turn(split, 3, opens, [0.1, 0.9]);
    expect(done.record?.stages.find((s) => s.stage === 'Extracting task terms')?.outcome).toBe('ok');
    expect(extractions()).toBe(1);
    expect((await split.query(goalsQuery)).phase).toMatchObject({ text: stated, source: opens });

    // Two lines are not a statement: the Session commits the deterministic one instead.
    const sloppy = 'Please summarise the launch feedback for the team, thanks';
    script.statement.set(sloppy, 'Summarise\nthe feedback');
    script.selection.set('Summarise the launch feedback for the team', { skills: [], toolsets: [] });
    await turn(split, 4, sloppy, [0.1, 0.9]);
    expect((await split.query(goalsQuery)).phase?.text).toBe('Summarise the launch feedback for the team');
  });

  it('a refinement updates the phase goal, records old and new, and leaves the session goal', async () => {
    const handle = await sessionWithTask();
    const refinement = 'Also cover installing custom nodes';
    script.refines.add(refinement);
    const done = await turn(handle, 3, refinement, [0.9, 0.9]);

    const refined = `${STATEMENT}; cover installing custom nodes`;
    expect(done.record?.decision).toBe('continue');
    expect(done.record?.goals?.map((g) => [g.level, g.reason, g.old, g.new])).toEqual([
      ['phase', 'refine', STATEMENT, refined],
    ]);
    const goals = await handle.query(goalsQuery);
    expect(goals.session?.text).toBe(STATEMENT);
    expect(goals.phase).toMatchObject({ text: refined, source: refinement, setAtSeq: 3 });
    const view = await handle.query(snapshotQuery);
    expect(view.phase?.index).toBe(0);
    expect(view.goalHistory.map((g) => [g.level, g.reason])).toEqual([
      ['session', 'initialize'],
      ['phase', 'initialize'],
      ['phase', 'refine'],
    ]);
    // A plain continue is not offered a goal change.
    expect(offered(requestsFor(refinement).at(0))).toBe(false);
    expect(done.record?.agent?.reply).toBe(`Working on: ${refined}`);
  });

  it('after a conflict, the confirmed change is proposed with propose_goal_change and committed once approved', async () => {
    const handle = await sessionWithTask();
    const conflicting = 'Make it a Word document for the sales team instead';
    const asked = await turn(handle, 3, conflicting, [0.9, 0.1]);
    expect(asked.record?.decision).toBe('conflict');
    // Offered in the conflict turn, the agent asks: nothing is proposed without the user's confirmation.
    expect(offered(requestsFor(conflicting).at(0))).toBe(true);
    expect(asked.record?.agent?.toolCalls).toEqual([]);
    expect(asked.record?.agent?.reply).toBe(
      `That differs from this Session's goal "${STATEMENT}". Should I switch this Session to it?`,
    );
    expect((await handle.query(goalsQuery)).session?.text).toBe(STATEMENT);

    const confirmation = 'Yes, switch this Session to: Write the ComfyUI guide as a Word document for sales';
    const waiting = await turn(handle, 4, confirmation, [0.9, 0.9]);
    expect(waiting).toMatchObject({ status: 'waiting', outcome: 'waiting-approval' });
    const pending = (await handle.query(snapshotQuery)).pendingApprovals;
    expect(pending.map((p) => [p.tool, JSON.parse(p.arguments) as unknown])).toEqual([
      ['propose_goal_change', { goal: 'Write the ComfyUI guide as a Word document for sales', confirmation }],
    ]);
    // Nothing changes before the approval.
    expect((await handle.query(goalsQuery)).session?.text).toBe(STATEMENT);

    await handle.signal(approvalSignal, {
      approvalId: pending[0]?.approvalId,
      argumentsHash: pending[0]?.argumentsHash,
      approved: true,
      approver: 'ops-alice',
    });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 4, timeoutMs: 60_000 }] });
    const newGoal = 'Write the ComfyUI guide as a Word document for sales';
    expect(done.record?.agent).toMatchObject({
      outcome: 'replied',
      reply: `Noted: session goal changed to "${newGoal}"`,
    });
    const call = done.record?.agent?.toolCalls[0];
    expect(call).toMatchObject({ tool: 'propose_goal_change', status: 'ok' });
    expect(done.record?.goals).toEqual([
      expect.objectContaining({
        level: 'session',
        reason: 'proposal',
        old: STATEMENT,
        new: newGoal,
        callId: call?.callId,
      }),
    ]);
    const goals = await handle.query(goalsQuery);
    expect(goals.session).toMatchObject({ text: newGoal, source: confirmation, setAtSeq: 4 });
    expect(goals.phase?.text).toBe(STATEMENT);
    expect(goals.history?.at(-1)).toMatchObject({ level: 'session', reason: 'proposal', new: newGoal });
    const events = (await handle.query(eventsQuery, {})).events.filter((e) => e.kind === 'goal.changed');
    expect(events.at(-1)).toMatchObject({ level: 'session', reason: 'proposal', old: STATEMENT, new: newGoal });

    // The turn after that is a plain continue: no goal change on offer any more.
    const later = 'Start with the installation chapter';
    await turn(handle, 5, later, [0.9, 0.9]);
    expect(offered(requestsFor(later).at(0))).toBe(false);
  });
});
