/**
 * A bad-input matrix through every way in: the `message` signal, the `submit` update, Temporal's HTTP
 * API (start-dev --http-port) and the `harness` CLI as a subprocess. Each bad payload is a clear
 * refusal (an update or CLI error, or a recorded rejection with its messageId and cause), never a
 * failed workflow task, and valid inputs sent after them are still processed. Payloads that are odd
 * but valid (4-byte characters, null bytes, text at the limit) are accepted and processed.
 */
import { spawn } from 'node:child_process';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { decisionsQuery, messageSignal, snapshotQuery, submitUpdate } from '../../contract/api.js';
import { MAX_RESOURCES, MAX_TEXT_CHARS } from '../../contract/messages.js';
import { MODEL, startSession, uniqueId } from '../support/harness.js';
import { DecisionLog, auditInputs, historyClient, runHistories, until, workflowTaskFailures } from './audit.js';
import { writeRow } from './rows.js';
import { useKillableWorker } from './sessions.js';

interface Case {
  label: string;
  payload: unknown;
  /** Valid payloads are accepted and must be processed; the rest must be refused. */
  valid: boolean;
}

const EMOJI = '😀';
const manyKeys = (id: string) => ({
  messageId: id,
  text: 'a client spread a large object into the payload',
  ...Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`field${i}`, i])),
});

/** The matrix; ids are prefixed per channel so every Session sees its own. */
function matrix(p: string): Case[] {
  return [
    { label: 'messageId is a number', payload: { messageId: 42, text: 'hello' }, valid: false },
    { label: 'text is a number', payload: { messageId: `${p}-t`, text: 123 }, valid: false },
    { label: 'payload is a string', payload: 'not an object', valid: false },
    { label: 'payload is an array', payload: [1, 2, 3], valid: false },
    { label: 'resources is a string', payload: { messageId: `${p}-r`, text: 'x', resources: 'none' }, valid: false },
    {
      label: 'text over 16,000 chars',
      payload: { messageId: `${p}-h`, text: 'a'.repeat(MAX_TEXT_CHARS + 1) },
      valid: false,
    },
    {
      label: '4-byte text over the limit',
      payload: { messageId: `${p}-h4`, text: EMOJI.repeat(MAX_TEXT_CHARS / 2 + 1) },
      valid: false,
    },
    { label: 'one unknown field', payload: { messageId: `${p}-u`, text: 'x', priority: 'high' }, valid: false },
    { label: '10,000 unknown keys', payload: manyKeys(`${p}-k`), valid: false },
    {
      label: '10,000 resources',
      payload: {
        messageId: `${p}-res`,
        text: 'x',
        resources: Array.from({ length: 10_000 }, (_, i) => ({ uri: `https://example.com/${i}` })),
      },
      valid: false,
    },
    { label: 'messageId over 200 chars', payload: { messageId: 'i'.repeat(201), text: 'x' }, valid: false },
    // The limit counts characters (code points), so 4-byte ids refuse past 200 of them.
    { label: '4-byte messageId over the limit', payload: { messageId: EMOJI.repeat(201), text: 'x' }, valid: false },
    { label: 'empty text', payload: { messageId: `${p}-e`, text: '   ' }, valid: false },
    // Odd but valid: accepted, processed once.
    {
      label: '4-byte text at the limit',
      payload: { messageId: `${p}-ok4`, text: EMOJI.repeat(MAX_TEXT_CHARS / 2) },
      valid: true,
    },
    { label: 'null bytes in text', payload: { messageId: `${p}-nul`, text: 'before\u0000after\u0000' }, valid: true },
    {
      label: 'null byte in messageId',
      payload: { messageId: `${p}-\u0000-id`, text: 'id with a null byte' },
      valid: true,
    },
    { label: '4-byte messageId', payload: { messageId: `${p}-${EMOJI.repeat(50)}`, text: 'emoji id' }, valid: true },
    {
      label: `${MAX_RESOURCES} resources`,
      payload: {
        messageId: `${p}-res32`,
        text: 'x',
        resources: Array.from({ length: MAX_RESOURCES }, (_, i) => ({ uri: `https://example.com/${i}` })),
      },
      valid: true,
    },
  ];
}

const w = useKillableWorker();
/** 25 signals of 10,000 keys make a history over gRPC's default 4 MB receive limit; this client reads it. */
let reader: Awaited<ReturnType<typeof historyClient>>;
const started = Date.now();
const results: Array<{ channel: string; expected: string[]; handle: WorkflowHandle; firstRunId: string }> = [];
/** Every payload sent through any channel, valid or not. */
let payloads = 0;

beforeAll(async () => {
  w.models.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 } });
  w.models.on(MODEL.extraction, { json: { terms: ['report'] } });
  w.models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  w.models.on(MODEL.agent, { content: 'Done.' });
  await w.start(uniqueId('faults-bad'));
  reader = await historyClient(inject('temporalAddress'));
});

afterAll(async () => {
  let lost = 0;
  let duplicated = 0;
  let ours = 0;
  let server = 0;
  for (const r of results) {
    const log = new DecisionLog();
    await log.poll(r.handle);
    const audit = auditInputs(log, r.expected);
    lost += audit.lost;
    duplicated += audit.duplicated;
    const failures = workflowTaskFailures(await runHistories(reader.client, r.handle.workflowId, r.firstRunId));
    ours += failures.ours.length;
    server += failures.server;
  }
  writeRow({
    scenario: '6 bad-input matrix',
    sessions: results.length,
    inputs: payloads,
    lost,
    duplicated,
    failedTasks: ours,
    serverFailedTasks: server,
    timeMs: Date.now() - started,
    notes: `channels: ${results.map((r) => r.channel).join(', ')}; ${matrix('x').filter((c) => !c.valid).length} refused and ${matrix('x').filter((c) => c.valid).length} odd-but-valid payloads each`,
  });
  await reader?.close();
});

/** A Session with one valid input, ready for the matrix. */
async function session(channel: string, settings: Record<string, unknown> = {}) {
  const handle = await startSession(w, { settings: { keepDecisions: 100, ...settings } });
  const firstRunId = (await handle.describe()).runId;
  const entry = { channel, expected: [] as string[], handle, firstRunId };
  results.push(entry);
  return entry;
}

async function settle(entry: (typeof results)[number]) {
  const snapshot = await w.alive(
    until(
      () => entry.handle.query(snapshotQuery),
      (s) => s.seq.lastBound === entry.expected.length && s.stage === 'Idle' && s.turn === null,
      120_000,
    ),
  );
  const log = new DecisionLog();
  await log.poll(entry.handle);
  expect(auditInputs(log, entry.expected)).toEqual({ lost: 0, duplicated: 0, gapFree: true, inOrder: true });
  const failures = workflowTaskFailures(await runHistories(reader.client, entry.handle.workflowId, entry.firstRunId));
  expect(failures.ours).toEqual([]);
  return snapshot;
}

const idOf = (payload: unknown) => (payload as { messageId: string }).messageId;

it('message signal: refusals are recorded with messageId and cause, valid inputs after them are processed', async () => {
  const entry = await session('signal');
  const cases = matrix('sig');
  await entry.handle.signal(messageSignal, { messageId: 'sig-first', text: 'Write the quarterly report' });
  entry.expected.push('sig-first');
  for (const c of cases) {
    await entry.handle.signal(messageSignal, c.payload);
    payloads++;
    if (c.valid) entry.expected.push(idOf(c.payload));
  }
  await entry.handle.signal(messageSignal, { messageId: 'sig-last', text: 'Add the regional numbers' });
  entry.expected.push('sig-last');
  const snapshot = await settle(entry);
  const refused = cases.filter((c) => !c.valid);
  expect(snapshot.counts.rejectedBy).toEqual({ invalid: refused.length });
  // Each refusal names its payload's messageId (clipped) when it had a string one.
  const ids = snapshot.recentRejections.map((r) => r.messageId);
  for (const c of refused.slice(-20)) {
    const id = (c.payload as { messageId?: unknown } | null)?.messageId;
    if (typeof id === 'string' && id.length <= 100) expect(ids).toContain(id);
  }
  expect(snapshot.recentRejections.every((r) => r.reason.startsWith('invalid message:'))).toBe(true);
});

it('25 signals with 10,000 unknown keys each do not wedge the Session', async () => {
  const entry = await session('signal x25 10k keys');
  await entry.handle.signal(messageSignal, { messageId: 'k-first', text: 'Write the quarterly report' });
  entry.expected.push('k-first');
  for (let i = 0; i < 25; i++) await entry.handle.signal(messageSignal, manyKeys(`k-${i}`));
  payloads += 27;
  await entry.handle.signal(messageSignal, { messageId: 'k-last', text: 'Add the regional numbers' });
  entry.expected.push('k-last');
  const snapshot = await settle(entry);
  expect(snapshot.counts.rejectedBy).toEqual({ invalid: 25 });
});

it('submit update: every bad payload fails the update with the reason, valid ones return a seq', async () => {
  const entry = await session('submit');
  const first = await entry.handle.executeUpdate(submitUpdate, {
    args: [{ messageId: 'up-first', text: 'Write the quarterly report' }],
  });
  expect(first).toEqual({ seq: 1, duplicate: false });
  entry.expected.push('up-first');
  for (const c of matrix('up')) {
    payloads++;
    const outcome = await entry.handle.executeUpdate(submitUpdate, { args: [c.payload] }).then(
      (r) => r,
      (e: unknown) => e,
    );
    if (c.valid) {
      expect(outcome, c.label).toEqual({ seq: entry.expected.length + 1, duplicate: false });
      entry.expected.push(idOf(c.payload));
    } else {
      expect(outcome, c.label).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(String((outcome as WorkflowUpdateFailedError).cause?.message), c.label).toMatch(/^invalid message: /);
    }
  }
  await entry.handle.executeUpdate(submitUpdate, { args: [{ messageId: 'up-last', text: 'Add the numbers' }] });
  entry.expected.push('up-last');
  const snapshot = await settle(entry);
  // The validator refuses before history: nothing is recorded as a rejection.
  expect(snapshot.counts.rejected).toBe(0);
});

it('HTTP API: signals are recorded as rejections, updates answer with the reason', async () => {
  const entry = await session('http');
  const base = `http://127.0.0.1:${inject('faultsHttpPort')}/api/v1/namespaces/default/workflows/${entry.handle.workflowId}`;
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${base}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, text: await response.text() };
  };
  expect((await post('signal/message', { input: [{ messageId: 'h-first', text: 'Write the report' }] })).status).toBe(
    200,
  );
  entry.expected.push('h-first');
  const cases = matrix('http');
  for (const c of cases) {
    payloads++;
    expect((await post('signal/message', { input: [c.payload] })).status, c.label).toBe(200);
    if (c.valid) entry.expected.push(idOf(c.payload));
  }
  let n = 0;
  for (const c of cases.filter((x) => !x.valid)) {
    payloads++;
    const answer = await post('update/submit', {
      waitPolicy: { lifecycleStage: 'UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED' },
      request: { meta: { updateId: `bad-${n++}` }, input: { args: [c.payload] } },
    });
    expect(answer.text, c.label).toContain('invalid message:');
  }
  expect((await post('signal/message', { input: [{ messageId: 'h-last', text: 'Add the numbers' }] })).status).toBe(
    200,
  );
  entry.expected.push('h-last');
  const snapshot = await settle(entry);
  expect(snapshot.counts.rejectedBy).toEqual({ invalid: cases.filter((c) => !c.valid).length });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `harness send` as a subprocess against the fault suite's server and this worker's task queue. */
function harness(args: string[], stdin = ''): Promise<Run> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('HARNESS_')),
  );
  const child = spawn(
    process.execPath,
    ['bin/harness.js', '--address', inject('temporalAddress'), '--task-queue', w.taskQueue, ...args],
    { env, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(stdin);
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

it('harness CLI: bad input exits 2 with the reason, odd-but-valid input is sent and processed', async () => {
  const sessionId = uniqueId('cli');
  const ok = await harness(['send', sessionId, 'Write the quarterly report', '--message-id', 'c-first']);
  expect(ok.stderr).toBe('');
  expect(ok.code).toBe(0);
  const handle = w.client.workflow.getHandle(`session:${sessionId}`);
  const entry = { channel: 'cli', expected: ['c-first'], handle, firstRunId: (await handle.describe()).runId };
  results.push(entry);
  const refused: Array<[string, string[], string]> = [
    ['text over 16,000 chars', ['-', '--message-id', 'c-h'], 'a'.repeat(MAX_TEXT_CHARS + 1)],
    ['4-byte text over the limit', ['-', '--message-id', 'c-h4'], EMOJI.repeat(MAX_TEXT_CHARS / 2 + 1)],
    ['messageId over 200 chars', ['x', '--message-id', 'i'.repeat(201)], ''],
    ['empty text', ['-', '--message-id', 'c-e'], '   '],
    [
      '10,000 resources',
      [
        'x',
        '--message-id',
        'c-res',
        ...Array.from({ length: 10_000 }, (_, i) => ['--resource', `https://e.com/${i}`]).flat(),
      ],
      '',
    ],
  ];
  for (const [label, args, stdin] of refused) {
    payloads++;
    const run = await harness(['send', sessionId, ...args], stdin);
    expect(run.code, label).toBe(2);
    expect(run.stderr, label).toMatch(/invalid/i);
  }
  const accepted: Array<[string, string[], string]> = [
    ['4-byte text at the limit', ['-', '--message-id', 'c-ok4'], EMOJI.repeat(MAX_TEXT_CHARS / 2)],
    ['null bytes in text (stdin)', ['-', '--message-id', 'c-nul'], 'before\u0000after'],
  ];
  for (const [label, args, stdin] of accepted) {
    payloads++;
    const run = await harness(['send', sessionId, ...args], stdin);
    expect(run.code, `${label}: ${run.stderr}`).toBe(0);
    entry.expected.push(args[2]!);
  }
  expect((await harness(['send', sessionId, 'Add the numbers', '--message-id', 'c-last'])).code).toBe(0);
  entry.expected.push('c-last');
  await settle(entry);
  const records = await handle.query(decisionsQuery);
  expect(records.map((r) => r.messageId)).toEqual(entry.expected);
});
