/**
 * kill -9 of the worker process inside MCP tool calls, and while every Session waits for approval.
 * 12 Sessions × 9 inputs side by side; some inputs' turns call the fixture's `journal` tool (a side
 * effect that must happen once, kept by the call's idempotency key), one calls `add` (needs approval),
 * the rest are plain replies. The scripted model reuses the call id `call_1` in every turn, as real
 * models do. Half the Sessions load the fixture as a stdio server of the worker, which dies with it
 * (a call caught by a kill is started again by the retry), half as a streamable-HTTP server in this
 * process, which finishes the call after the worker is gone (the retry must be answered from the
 * record). The worker is killed twice while journal calls of both kinds run (a lost call is retried on
 * the next worker after the 30 s heartbeat timeout), then once while all Sessions wait for approval;
 * the approvals go to the new worker.
 *
 * Besides the suite's counts: every journal key is `done` exactly once (at-least-once attempts,
 * effectively-once effect), every approved `add` ran exactly once, and every turn ended `replied` with
 * each tool call `ok`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tsToMs } from '@temporalio/common/lib/time.js';
import { afterAll, expect, it } from 'vitest';
import { approvalSignal, snapshotQuery } from '../../contract/api.js';
import { MODEL, uniqueId, userJson } from '../support/harness.js';
import { fixtureMcpEntry } from '../support/mcp-fixture.js';
import { JOURNAL_WORK_MS, readJournal, startHttpFixture, type HttpFixture } from '../support/mcp-fixture-server.js';
import type { RecordedRequest, Reply } from '../support/model-server.js';
import { until } from './audit.js';
import { scriptFaultRoles } from './roles.js';
import {
  auditSessions,
  expectAuditClean,
  sendInputs,
  settled,
  startSessions,
  useKillableWorker,
  writeAuditRow,
  type FaultSession,
} from './sessions.js';

const SESSIONS = 12;
/** What each input's turn does, in order; the first sets the phase, whose orchestration loads the fixture. */
const PLAN = ['reply', 'journal', 'reply', 'journal', 'journal', 'reply', 'journal', 'add', 'reply'] as const;
const INPUTS = PLAN.length;
/** Where a Session's fixture runs: `local` as the worker's stdio child, `remote` over HTTP in this process. */
type Kind = 'local' | 'remote';
const TOOLSETS: Record<Kind, string> = { local: 'mcp-fixture', remote: 'mcp-remote' };
const kindOf = (s: number): Kind => (s % 2 === 0 ? 'local' : 'remote');
/** Every turn's call id, as models reuse theirs; only the idempotency key tells the calls apart. */
const CALL_ID = 'call_1';
/** A tool-call kill waits for this many `journal` calls in flight, of both kinds. */
const IN_FLIGHT = 3;
const TOOL_KILLS = 2;
/** Small model timeouts so a model step a kill orphans is retried within seconds; tool calls keep theirs. */
const settings = { modelTimeoutMs: 3_000, agentTimeoutMs: 5_000, modelAttempts: 3 };

const stack = useKillableWorker();
const dir = mkdtempSync(join(tmpdir(), 'harness-faults-agent-'));
const journal = join(dir, 'journal.log');
let remote: HttpFixture | undefined;

afterAll(async () => {
  await remote?.close();
  rmSync(dir, { recursive: true, force: true });
});

function inputText(s: number, k: number): string {
  if (k === 0) return `s${s} set up the ${kindOf(s)} fixture tools for notes and sums`;
  if (PLAN[k] === 'journal') return `s${s} step ${k}: journal note n${s}-${k}`;
  if (PLAN[k] === 'add') return `s${s} step ${k}: add ${s} and ${k}`;
  return `s${s} step ${k}: carry on`;
}

/** The agent by content: a planned tool input calls its tool as `call_1`, then replies with the result. */
function agent(req: RecordedRequest): Reply {
  const input = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const last = req.messages.at(-1);
  if (last?.role === 'tool' && last.toolCallId === CALL_ID) return { content: `Done: ${last.content}` };
  const note = /journal note (\S+)$/.exec(input);
  if (note) return { toolCalls: [{ id: CALL_ID, name: 'journal', arguments: { note: note[1] } }] };
  const sum = /add (\d+) and (\d+)$/.exec(input);
  if (sum) return { toolCalls: [{ id: CALL_ID, name: 'add', arguments: { a: Number(sum[1]), b: Number(sum[2]) } }] };
  return { content: `Noted: ${input}` };
}

/** Each journal key's `start` times, `done` results and `replay` count, and each `ran add` key's count. */
function journalState() {
  const keys = new Map<string, { starts: number[]; done: string[]; replays: number }>();
  const ranAdd = new Map<string, number>();
  for (const line of readJournal(journal)) {
    if (line.kind === 'ran') {
      ranAdd.set(line.key, (ranAdd.get(line.key) ?? 0) + 1);
      continue;
    }
    const key = keys.get(line.key) ?? { starts: [], done: [], replays: 0 };
    if (line.kind === 'start') key.starts.push(line.at);
    else if (line.kind === 'done') key.done.push(line.result);
    else key.replays++;
    keys.set(line.key, key);
  }
  return { keys, ranAdd };
}

/**
 * Whether a kill now costs no tool call both its attempts (runTool makes two): every pending activity
 * is a first attempt that started on the live worker, none a retry or an attempt orphaned by the last kill.
 */
async function onlyFirstAttempts(sessions: FaultSession[], lastKillAt: number): Promise<boolean> {
  const described = await Promise.all(sessions.map((s) => s.handle.describe()));
  return described
    .flatMap((d) => d.raw.pendingActivities ?? [])
    .every((a) => (a.attempt ?? 1) <= 1 && (!a.lastStartedTime || tsToMs(a.lastStartedTime) > lastKillAt));
}

/** `journal` calls the fixture started under half its work time ago and has not finished. */
function freshInFlight(): string[] {
  const now = Date.now();
  return [...journalState().keys]
    .filter(([, k]) => k.done.length === 0 && k.starts.length === 1 && now - k.starts[0]! < JOURNAL_WORK_MS / 2)
    .map(([key]) => key);
}

/**
 * The journal calls a kill would land in now (enough, of both kinds), or none while it is not yet time
 * (too few, one kind only, or a call would lose its second attempt).
 */
async function killTargets(sessions: FaultSession[], lastKillAt: number): Promise<string[]> {
  const kinds = new Map(sessions.map((session, s) => [session.sessionId, kindOf(s)]));
  const enough = (keys: string[]) =>
    keys.length >= IN_FLIGHT && new Set(keys.map((key) => kinds.get(key.split(':')[0]!))).size === 2;
  if (!enough(freshInFlight()) || !(await onlyFirstAttempts(sessions, lastKillAt))) return [];
  // Read again right before the kill: the describes took a moment.
  const keys = freshInFlight();
  return enough(keys) ? keys : [];
}

it('runs every tool call to one effect and every approved call once when the worker is SIGKILLed in them', async () => {
  const started = Date.now();
  scriptFaultRoles(stack.models);
  stack.models.on(MODEL.orchestration, (req) => {
    type Request = { task: { phaseGoal: string }; candidates: { toolsets: Array<{ id: string }> } };
    const { task, candidates } = userJson<Request>(req);
    const wanted = TOOLSETS[/ remote /.test(task.phaseGoal) ? 'remote' : 'local'];
    const toolsets = candidates.toolsets.map((c) => c.id).filter((id) => id === wanted);
    return { json: { skills: [], toolsets, memories: [] } };
  });
  stack.models.on(MODEL.agent, agent);
  const mcpConfig = join(dir, 'mcp.json');
  const tools = ['journal', 'add'];
  const fixture = fixtureMcpEntry(dir, tools, { MCP_FIXTURE_JOURNAL: journal });
  remote = await startHttpFixture(
    tools.map((name) => ({ name, description: `The remote fixture's ${name} tool.` })),
    { journal },
  );
  const remoteEntry = {
    url: remote.url,
    description: 'Remote fixture tools: journal notes, add numbers (needs approval).',
    tags: ['fixture', 'remote', 'journal', 'add'],
    approvalRequired: ['add'],
    timeoutMs: 60_000,
  };
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { fixture, remote: remoteEntry } }));
  const taskQueue = uniqueId('faults-agent');
  await stack.start(taskQueue, { HARNESS_MCP_CONFIG: mcpConfig });
  const sessions = await startSessions(stack.client, { count: SESSIONS, prefix: 'agent', taskQueue, settings });
  const sending = sendInputs(sessions, INPUTS, inputText);

  // (a) Twice: once journal calls of both kinds are under way, and no call would lose its second attempt.
  const kills: string[] = [];
  const missed: string[] = [];
  let lastKillAt = 0;
  for (let round = 1; round <= TOOL_KILLS; round++) {
    const targets = await until(
      () => killTargets(sessions, lastKillAt),
      (keys) => keys.length >= IN_FLIGHT,
      240_000,
    ).catch(() => null);
    if (!targets) {
      missed.push(`tool#${round}`);
      continue;
    }
    lastKillAt = await stack.killAndReplace();
    kills.push(`tool#${round} (${targets.length} journal calls in flight)`);
  }
  await sending;

  // (b) Once every Session waits for approval of its `add`; then approve them all on the new worker.
  const waiting = () =>
    until(
      () => Promise.all(sessions.map((s) => s.handle.query(snapshotQuery))),
      (views) =>
        views.every((v) => v.stage === 'Waiting for approval' && v.pendingApprovals.some((p) => p.callId === CALL_ID)),
      600_000,
    );
  await waiting();
  await stack.killAndReplace();
  kills.push(`approval (${SESSIONS} waiting)`);
  await waiting();
  const ranBeforeApproval = journalState().ranAdd.size;
  await Promise.all(
    sessions.map(async (s) => {
      const pending = (await s.handle.query(snapshotQuery)).pendingApprovals.find((p) => p.callId === CALL_ID);
      await s.handle.signal(approvalSignal, { approvalId: pending?.approvalId ?? CALL_ID, approved: true });
    }),
  );

  await settled(sessions, INPUTS);
  const audit = await auditSessions(stack.client, sessions);

  // Each turn's tool calls against the journal: one `done` per journal key, one `ran` per approved add.
  const { keys, ranAdd } = journalState();
  const expected = { journal: new Map<string, string>(), add: new Set<string>() };
  const notReplied: string[] = [];
  const notOk: string[] = [];
  for (const [i, session] of sessions.entries()) {
    for (const record of audit.records[i]!) {
      if (record.agent?.outcome !== 'replied') notReplied.push(`${session.sessionId}:${record.seq}`);
      for (const call of record.agent?.toolCalls ?? []) {
        const key = `${session.sessionId}:${record.seq}:${call.callId}`;
        if (call.status !== 'ok') notOk.push(`${key} ${call.tool} ${call.status}: ${call.result}`);
        if (call.tool === 'journal') expected.journal.set(key, call.result ?? '');
        if (call.tool === 'add') expected.add.add(key);
      }
    }
  }
  const plannedJournal = SESSIONS * PLAN.filter((p) => p === 'journal').length;
  const plannedAdd = SESSIONS * PLAN.filter((p) => p === 'add').length;
  const journalNotOnce = [...new Set([...keys.keys(), ...expected.journal.keys()])].filter((key) => {
    const done = keys.get(key)?.done ?? [];
    return !expected.journal.has(key) || done.length !== 1 || done[0] !== expected.journal.get(key);
  });
  const addNotOnce = [...new Set([...ranAdd.keys(), ...expected.add])].filter(
    (key) => !expected.add.has(key) || ranAdd.get(key) !== 1,
  );
  const restarted = [...keys].filter(([, k]) => k.starts.length > 1).map(([key]) => key);
  const replayed = [...keys].filter(([, k]) => k.replays > 0).map(([key]) => key);

  writeAuditRow(audit, {
    scenario: '7 worker kill -9 in tool calls + approval wait',
    sessions: SESSIONS,
    inputs: SESSIONS * INPUTS,
    started,
    kills,
    missed,
    notes:
      `journal calls ${expected.journal.size}, done once ${expected.journal.size - journalNotOnce.length}, ` +
      `started twice ${restarted.length} (${restarted.join(', ')}), answered from the record ${replayed.length} ` +
      `(${replayed.join(', ')}); approved adds ${expected.add.size}, ran once ` +
      `${expected.add.size - addNotOnce.length}; turns not replied ${notReplied.length}, tool calls not ok ${notOk.length}`,
  });

  expect(missed).toEqual([]);
  expect(kills).toHaveLength(TOOL_KILLS + 1);
  expectAuditClean(audit);
  expect(notReplied).toEqual([]);
  expect(notOk).toEqual([]);
  expect({ journal: expected.journal.size, add: expected.add.size }).toEqual({
    journal: plannedJournal,
    add: plannedAdd,
  });
  expect(journalNotOnce).toEqual([]);
  expect(ranBeforeApproval).toBe(0);
  expect(addNotOnce).toEqual([]);
  // Kills landed inside running calls, so retries were real: a stdio server died with its worker and
  // the call started again; an HTTP server finished the call and answered the retry from its record.
  expect(restarted.length).toBeGreaterThan(0);
  expect(replayed.length).toBeGreaterThan(0);
});
