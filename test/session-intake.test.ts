/**
 * The Session's intake on a real Temporal server: ordering, de-duplication, rejections, the
 * `submit` update, and continue-as-new.
 */
import { WorkflowFailedError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter, type ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  approveUpdate,
  commandSignal,
  decisionsQuery,
  goalsQuery,
  messageSignal,
  notificationSignal,
  resultUpdate,
  snapshotQuery,
  submitUpdate,
} from '../contract/api.js';
import { SessionGoalKey } from '../contract/search-attributes.js';
import { ScriptedModelServer } from './support/model-server.js';
import {
  MODEL,
  message,
  scriptedModels,
  send,
  startSession,
  startWorker,
  uniqueId,
  waitFor,
  type TestWorker,
} from './support/harness.js';

let models: ScriptedModelServer;
let w: TestWorker;

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  models.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.9 } });
  models.on(MODEL.extraction, { json: { terms: ['research'] } });
  models.on(MODEL.orchestration, { json: { skills: [], toolsets: [], memories: [] } });
  w = await startWorker({ models: scriptedModels(models) });
});

afterAll(async () => {
  await w?.stop();
  await models?.close();
});

async function signalledMessageIds(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((event) => {
    const attrs = event.workflowExecutionSignaledEventAttributes;
    if (attrs?.signalName !== 'message' || !attrs.input?.payloads?.[0]) return [];
    const payload = defaultPayloadConverter.fromPayload<{ messageId: string }>(attrs.input.payloads[0]);
    return [payload.messageId];
  });
}

const FORCE_CLOSE_COMMAND = 17;

/**
 * Causes of workflow tasks our code failed. A burst of signals larger than the server's buffered-event
 * batch makes the server itself fail the in-flight task to flush them (FORCE_CLOSE_COMMAND); that is
 * the server's flow control, not a failure of workflow code, and is left out.
 */
async function failedWorkflowTasks(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const failed = e.workflowTaskFailedEventAttributes;
    if (!failed || Number(failed.cause) === FORCE_CLOSE_COMMAND) return [];
    return [`${String(failed.cause)}: ${failed.failure?.message ?? ''}`];
  });
}

describe('Session intake on a real server', () => {
  it('binds 200 concurrently signalled messages in the order the server received them, with no gaps', async () => {
    const handle = await startSession(w, { settings: { keepDecisions: 300, agentTurn: false } });
    const messages = Array.from({ length: 200 }, (_, i) => message(`note number ${i}`));
    await Promise.all(messages.map((m) => handle.signal(messageSignal, m)));

    const decisions = await waitFor(
      () => handle.query(decisionsQuery),
      (d) => d.length === 200,
      120_000,
    );
    const receivedOrder = await signalledMessageIds(handle);
    expect(receivedOrder).toHaveLength(200);
    expect(decisions.map((d) => d.messageId)).toEqual(receivedOrder);
    expect(decisions.map((d) => d.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(new Set(receivedOrder)).toEqual(new Set(messages.map((m) => m.messageId)));
    expect(decisions[0]?.decision).toBe('initialize');
    expect(decisions.slice(1).every((d) => d.decision === 'continue')).toBe(true);
    expect(await failedWorkflowTasks(handle)).toEqual([]);
  });

  it('records invalid payloads as rejections without failing a workflow task, and keeps binding valid ones', async () => {
    const handle = await startSession(w, { settings: { agentTurn: false } });
    const bad: unknown[] = [
      { text: 'no message id' },
      { messageId: 'x1', text: '' },
      'not even an object',
      { messageId: 'x2', text: 'fine', resources: [{ uri: '' }] },
      { messageId: 'x3', text: 'fine', unexpected: true },
    ];
    for (const payload of bad) await handle.signal(messageSignal, payload);
    const valid = await send(handle, 'Draft the onboarding checklist');

    const snapshot = await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.seq.lastBound === 1 && s.stage === 'Idle',
    );
    expect(snapshot.counts.rejected).toBe(5);
    expect(snapshot.recentRejections.map((r) => r.reason)).toEqual([
      expect.stringContaining('messageId'),
      expect.stringContaining('text must not be empty'),
      expect.stringContaining('expected object'),
      expect.stringContaining('resources.0.uri'),
      expect.stringContaining('unexpected'),
    ]);
    expect(snapshot.recentRejections.map((r) => r.messageId)).toEqual([null, 'x1', null, 'x2', 'x3']);
    const decisions = await handle.query(decisionsQuery);
    expect(decisions.map((d) => d.messageId)).toEqual([valid.messageId]);
    expect((await handle.query(goalsQuery)).session?.text).toBe('Draft the onboarding checklist');
    expect(await failedWorkflowTasks(handle)).toEqual([]);
  });

  it('submit returns the seq once recorded, reports duplicates, and rejects bad input without a history event', async () => {
    const handle = await startSession(w, { settings: { agentTurn: false } });
    const first = message('Plan the offsite agenda');
    expect(await handle.executeUpdate(submitUpdate, { args: [first] })).toEqual({ seq: 1, duplicate: false });
    expect(await handle.executeUpdate(submitUpdate, { args: [first] })).toEqual({ seq: 1, duplicate: true });
    await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.stage === 'Idle' && s.seq.lastBound === 1,
    );

    const eventsBefore = (await handle.fetchHistory()).events?.length ?? 0;
    const rejected = await handle.executeUpdate(submitUpdate, { args: [{ messageId: 'bad', text: '   ' }] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(rejected).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((rejected as WorkflowUpdateFailedError).cause?.message)).toContain('text must not be empty');
    const history = await handle.fetchHistory();
    expect(history.events?.length).toBe(eventsBefore);

    expect(await handle.executeUpdate(submitUpdate, { args: [message('Then book the venue')] })).toEqual({
      seq: 2,
      duplicate: false,
    });
  });

  it('approve: a malformed approval is refused by the validator before history; a valid one is decided by its handler', async () => {
    const handle = await startSession(w, { settings: { agentTurn: false } });
    await handle.executeUpdate(submitUpdate, { args: [message('Plan the stock count')] });
    // The input's processing is over before the history is measured, so only the approvals could add to it.
    await handle.executeUpdate(resultUpdate, { args: [{ seq: 1, timeoutMs: 30_000 }] });
    const eventsBefore = (await handle.fetchHistory()).events?.length ?? 0;
    const malformed = await handle.executeUpdate(approveUpdate, { args: [{ approved: 'yes' }] }).then(
      () => undefined,
      (e: unknown) => e as WorkflowUpdateFailedError,
    );
    expect(malformed?.cause?.message).toMatch(/^invalid approval: .*approvalId/);
    expect((await handle.fetchHistory()).events?.length).toBe(eventsBefore);
    // Accepted (it passed the validator), then refused by the handler: no call waits for it.
    const unmatched = await handle
      .executeUpdate(approveUpdate, { args: [{ approvalId: '1:1:call_1', approved: true }] })
      .then(
        () => undefined,
        (e: unknown) => e as WorkflowUpdateFailedError,
      );
    expect(unmatched?.cause?.message).toMatch(/approval 1:1:call_1 matches no tool call waiting for approval/);
    expect((await handle.query(snapshotQuery)).recentRejections.at(-1)?.messageId).toBe('1:1:call_1');
  });

  it('keeps goals, queue, seq and duplicate protection through three continue-as-new runs', async () => {
    const handle = await startSession(w, { settings: { continueAsNewAfter: 2, agentTurn: false } });
    const firstRunId = (await handle.describe()).runId;
    const messages = Array.from({ length: 7 }, (_, i) =>
      message(i === 0 ? 'Compile the vendor comparison' : `vendor detail ${i}`),
    );
    // Queue all seven while paused, so each run hands the rest of the queue to the next one.
    await handle.signal(commandSignal, { commandId: 'pause-1', name: 'pause' });
    for (const m of messages) await handle.signal(messageSignal, m);
    // The pause is applied once the worker checked it (a local activity); the messages queue behind it.
    await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.queueLength === 7 && s.status === 'paused',
    );
    await handle.signal(commandSignal, { commandId: 'resume-1', name: 'resume' });

    const snapshot = await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.seq.lastBound === 7 && s.stage === 'Idle',
      60_000,
    );
    expect(snapshot.run).toBeGreaterThanOrEqual(4);
    expect((await handle.describe()).runId).not.toBe(firstRunId);
    const decisions = await handle.query(decisionsQuery);
    expect(decisions.map((d) => d.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(decisions.map((d) => d.messageId)).toEqual(messages.map((m) => m.messageId));
    expect((await handle.query(goalsQuery)).session?.text).toBe('Compile the vendor comparison');

    // Re-deliver the first and a middle message after three hand-overs: both are recognised.
    await handle.signal(messageSignal, messages[0]!);
    expect(await handle.executeUpdate(submitUpdate, { args: [messages[3]!] })).toEqual({ seq: 4, duplicate: true });
    const after = await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.counts.duplicates === 2,
    );
    expect(after.seq).toEqual({ lastAccepted: 7, lastBound: 7 });
    expect(await handle.executeUpdate(submitUpdate, { args: [message('one more detail')] })).toEqual({
      seq: 8,
      duplicate: false,
    });
  });

  it("a pause sent before messages holds them when all arrive in the run's first task, while the worker policy is asked", async () => {
    // No worker polls this task queue until every signal is in history, so the first workflow task
    // hands the pause and the messages to the handlers before the worker policy is known: the pause
    // waits for it, and the messages must wait behind the pause rather than be bound first.
    const taskQueue = uniqueId('tq-late');
    const sessionId = uniqueId('s');
    const handle = await w.client.workflow.start('session', {
      workflowId: `session:${sessionId}`,
      taskQueue,
      args: [{ sessionId, settings: { agentTurn: false } }],
    });
    const messages = [message('Sort the archive boxes'), message('then label the shelves'), message('and the bins')];
    await handle.signal(commandSignal, { commandId: 'pause-first', name: 'pause' });
    for (const m of messages) await handle.signal(messageSignal, m);
    const late = await startWorker({ models: scriptedModels(models), taskQueue });
    try {
      const paused = await waitFor(
        () => handle.query(snapshotQuery),
        (s) => s.status === 'paused' && s.seq.lastAccepted === 3,
      );
      expect(paused.queueLength).toBe(3);
      expect(paused.seq.lastBound).toBe(0);
      await handle.signal(commandSignal, { commandId: 'resume-first', name: 'resume' });
      await waitFor(
        () => handle.query(snapshotQuery),
        (s) => s.seq.lastBound === 3 && s.stage === 'Idle',
      );
      expect((await handle.query(decisionsQuery)).map((d) => d.messageId)).toEqual(messages.map((m) => m.messageId));
      expect(await failedWorkflowTasks(handle)).toEqual([]);
    } finally {
      await late.stop();
    }
  });

  it("signals sent before the run's first task are handled in arrival order: messages, a notification, then a close", async () => {
    // No worker polls this task queue until every signal is in history, so the first workflow task
    // carries them all. The SDK hands buffered signals to each handler as it is set; the close must
    // still apply after the messages sent before it (they are finished, not refused).
    const taskQueue = uniqueId('tq-late');
    const sessionId = uniqueId('s');
    const handle = await startSession({ client: w.client, taskQueue }, { sessionId, settings: { agentTurn: false } });
    const first = message('Plan the team offsite');
    const second = message('and book the venue for it');
    await handle.signal(messageSignal, first);
    await handle.signal(notificationSignal, {
      notificationId: 'n-first',
      kind: 'calendar',
      text: 'venue list updated',
    });
    await handle.signal(messageSignal, second);
    // A name the Session has no handler for stays unhandled, as before, and fails nothing.
    await handle.signal('noSuchSignal', { anything: true });
    await handle.signal('__temporal_probe', { anything: true });
    await handle.signal(commandSignal, { commandId: 'close-first', name: 'close' });
    const late = await startWorker({ models: scriptedModels(models), taskQueue });
    try {
      expect(await handle.result()).toEqual({ sessionId, status: 'closed', lastSeq: 2, runs: 1 });
      const events = (await handle.fetchHistory()).events ?? [];
      const firstTask = events.findIndex((e) => e.workflowTaskStartedEventAttributes);
      const signals = events.flatMap((e, i) => (e.workflowExecutionSignaledEventAttributes ? [i] : []));
      expect(signals).toHaveLength(6);
      expect(signals.every((i) => i < firstTask)).toBe(true);
      const decisions = await handle.query(decisionsQuery);
      expect(decisions.map((d) => [d.seq, d.messageId])).toEqual([
        [1, first.messageId],
        [2, second.messageId],
      ]);
      const snapshot = await handle.query(snapshotQuery);
      expect(snapshot.counts.rejected).toBe(0);
      expect(snapshot.recentRejections).toEqual([]);
      expect(snapshot.recentControlEvents.map((e) => [e.kind, e.summary])).toEqual([
        ['notification', expect.not.stringContaining('refused')],
        ['command', expect.stringMatching(/^close/)],
      ]);
      expect(await failedWorkflowTasks(handle)).toEqual([]);
    } finally {
      await late.stop();
    }
  });

  it('close finishes the queued inputs, refuses new ones with a clear reason, and completes the workflow', async () => {
    const handle = await startSession(w, { settings: { agentTurn: false } });
    // After the run's first task: this test is about a close that arrives while inputs are queued (the
    // test above covers signals buffered before that task).
    await handle.query(snapshotQuery);
    await handle.signal(commandSignal, { commandId: 'p', name: 'pause' });
    const queued = [message('Collect the supplier invoices'), message('and the credit notes')];
    for (const m of queued) await handle.signal(messageSignal, m);
    await handle.signal(commandSignal, { commandId: 'c', name: 'close' });
    const refused = await handle.executeUpdate(submitUpdate, { args: [message('one more thing')] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String((refused as WorkflowUpdateFailedError).cause?.message)).toContain('session is closed');
    const result = await handle.result();
    expect(result).toEqual({ sessionId: expect.any(String), status: 'closed', lastSeq: 2, runs: 1 });
    const decisions = await handle.query(decisionsQuery);
    expect(decisions.map((d) => d.messageId)).toEqual(queued.map((m) => m.messageId));
  });

  it.each([
    ['a bad sessionId', { sessionId: 'has spaces' }, 'sessionId must be 1-128 characters'],
    [
      'thresholds out of order',
      { sessionId: 'x', settings: { thresholds: { high: 0.3, low: 0.6 } } },
      'thresholds.low must be below',
    ],
    ['an id that does not match', { sessionId: 'someone-else' }, 'workflow id must be session:someone-else'],
  ])('fails the workflow (not a workflow task) with a clear error for %s', async (_label, args, message) => {
    const handle = await w.client.workflow.start('session', {
      workflowId: `session:${uniqueId('bad-start')}`,
      taskQueue: w.taskQueue,
      args: [args],
    });
    const failure = await handle.result().then(
      () => undefined,
      (e: unknown) => e as WorkflowFailedError,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = failure?.cause as ApplicationFailure;
    expect(cause.type).toBe('InvalidStartArgument');
    expect(cause.message).toContain(message);
    expect(await failedWorkflowTasks(handle)).toEqual([]);
  });

  it('survives continue-as-new with large Chinese inputs: a full queue refuses, nothing accepted is lost, the run goes on', async () => {
    const handle = await startSession(w, { settings: { continueAsNewAfter: 3, agentTurn: false } });
    await handle.signal(commandSignal, { commandId: 'hold', name: 'pause' });
    const resources = Array.from({ length: 8 }, (_, i) => ({
      uri: `https://example.com/doc/${i}/${'x'.repeat(1_500)}`,
    }));
    const sent = Array.from({ length: 30 }, (_, i) => message(`${'研究报告'.repeat(3_000)} #${i}`, { resources }));
    for (const m of sent) await handle.signal(messageSignal, m);
    const paused = await handle.query(snapshotQuery);
    expect(paused.counts.accepted + paused.counts.rejected).toBe(30);
    expect(paused.counts.rejected).toBeGreaterThan(0);
    expect(paused.recentRejections.at(-1)?.reason).toContain('queue is full');
    await handle.signal(commandSignal, { commandId: 'go', name: 'resume' });

    const done = await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.seq.lastBound === paused.counts.accepted && s.stage === 'Idle',
      90_000,
    );
    expect(done.run).toBeGreaterThan(2);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    // The 1,500-byte cut keeps the SessionGoal search attribute under Temporal's 2 KB limit.
    const goal = (await handle.describe()).typedSearchAttributes.get(SessionGoalKey) ?? '';
    expect(Buffer.byteLength(goal)).toBeLessThanOrEqual(1_500);
    expect(goal.startsWith('研究报告')).toBe(true);
  });
});
