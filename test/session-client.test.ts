/**
 * SessionClient on the real dev server with a real worker: task input by signal-with-start and
 * update-with-start, the non-task signals, the queries, watch, list, the Web UI metadata set at
 * start, and the typed errors (invalid input naming the field, unknown session, unreachable server,
 * closed session, no worker answering).
 */
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ApprovalRefusedError,
  ClientClosedError,
  InvalidInputError,
  ToolResultRefusedError,
  ServerUnreachableError,
  SessionClient,
  SessionClosedError,
  SessionNotFoundError,
  SessionTimeoutError,
  visibilityQuery,
  type WatchEvent,
} from '../client/index.js';
import { MODEL, scriptedModels, startWorker, uniqueId, userJson, waitFor, type TestWorker } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';
import { freePorts } from './support/ports.js';

let models: ScriptedModelServer;
let w: TestWorker;
let client: SessionClient;

beforeAll(async () => {
  models = await ScriptedModelServer.start();
  models.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.85 } });
  models.on(MODEL.extraction, { json: { terms: ['comfyui', 'guide'] } });
  models.on(MODEL.orchestration, (req) => {
    const { candidates } = userJson<{ candidates: { skills: Array<{ id: string }> } }>(req);
    return { json: { skills: candidates.skills.slice(0, 1).map((c) => c.id), toolsets: [], memories: [] } };
  });
  models.on(MODEL.compaction, { json: { summary: 'done' } });
  models.on(MODEL.agent, { content: 'Here is the plan.' });
  w = await startWorker({ models: scriptedModels(models) });
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue: w.taskQueue });
});

afterAll(async () => {
  await client?.close();
  await w?.stop();
  await models?.close();
});

async function expectError<T extends Error>(promise: Promise<unknown>, type: new (...args: never[]) => T): Promise<T> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as T;
}

describe('SessionClient: task input', () => {
  it('send creates the Session by signal-with-start with the start argument and the Web UI summary and details', async () => {
    const sessionId = uniqueId('send');
    const sent = await client.send(
      sessionId,
      { text: 'Research ComfyUI and deliver a Markdown guide', resources: [{ uri: 'https://comfy.org' }] },
      { profile: 'research', goals: { session: 'Deliver a ComfyUI guide' } },
    );
    expect(sent).toMatchObject({
      sessionId,
      workflowId: `session:${sessionId}`,
      messageId: expect.stringMatching(/^m-/),
    });

    const view = await waitFor(
      () => client.snapshot(sessionId),
      (v) => v.seq.lastBound === 1 && v.stage === 'Idle',
    );
    expect(view.profile).toBe('research');
    expect(view.goals.session?.text).toBe('Deliver a ComfyUI guide');
    expect(view.lastDecision?.messageId).toBe(sent.messageId);

    const description = await w.client.workflow.getHandle(`session:${sessionId}`).describe();
    expect(await description.staticSummary()).toBe(`Session ${sessionId}: Deliver a ComfyUI guide`);
    const details = await description.staticDetails();
    expect(details).toContain(`**First message** \`${sent.messageId}\`: Research ComfyUI and deliver a Markdown guide`);
    expect(details).toContain('**Resources:** https://comfy.org');
    expect(description.taskQueue).toBe(w.taskQueue);
  });

  it('validates before sending and names the offending field; nothing reaches the server', async () => {
    const sessionId = uniqueId('invalid');
    const blank = await expectError(client.send(sessionId, { text: '   ' }), InvalidInputError);
    expect(blank.field).toBe('text');
    expect(blank.message).toBe('invalid message: text: text must not be empty');
    const resource = await expectError(
      client.send(sessionId, { text: 'ok', resources: [{ uri: '' }] }),
      InvalidInputError,
    );
    expect(resource.field).toBe('resources.0.uri');
    const id = await expectError(client.send('no spaces allowed', { text: 'ok' }), InvalidInputError);
    expect(id.field).toBe('sessionId');
    const start = await expectError(
      client.submit(sessionId, { text: 'ok' }, { start: { parentSessionId: '' } }),
      InvalidInputError,
    );
    expect(start.field).toBe('parentSessionId');
    await expectError(client.snapshot(sessionId), SessionNotFoundError);
  });

  it('submit returns the seq, recognises a duplicate, and with wait returns the decision record of that input', async () => {
    const sessionId = uniqueId('submit');
    const first = await client.submit(
      sessionId,
      { messageId: 'plan-1', text: 'Plan the offsite agenda' },
      { wait: true },
    );
    expect(first).toMatchObject({ seq: 1, duplicate: false, messageId: 'plan-1' });
    expect(first.decision).toMatchObject({ seq: 1, messageId: 'plan-1', decision: 'initialize' });
    expect(first.decision?.diff?.added.length).toBe(1);

    const again = await client.submit(sessionId, { messageId: 'plan-1', text: 'Plan the offsite agenda' });
    expect(again).toMatchObject({ seq: 1, duplicate: true });
    expect(again.decision).toBeUndefined();

    const progress: string[] = [];
    const second = await client.submit(
      sessionId,
      { text: 'Book the venue too' },
      { wait: { onProgress: (p) => progress.push(`${p.seq}:${p.status}`) } },
    );
    expect(second).toMatchObject({ seq: 2, duplicate: false });
    expect(second.decision).toMatchObject({ seq: 2, decision: 'continue', scores: { phase: 0.9, session: 0.85 } });
    expect(progress.at(-1)).toBe('2:done');

    const history = await client.history(sessionId);
    expect(history.map((h) => [h.seq, h.reply])).toEqual([
      [1, 'Here is the plan.'],
      [2, 'Here is the plan.'],
    ]);
    expect((await client.decisions(sessionId, { limit: 1 })).map((d) => d.seq)).toEqual([2]);
  });

  it('refuses task input to a closed Session instead of starting a new one under its id', async () => {
    const sessionId = uniqueId('closed');
    await client.submit(sessionId, { text: 'Write release notes' }, { wait: true });
    await client.command(sessionId, { name: 'close' });
    await waitFor(
      () => client.describe(sessionId),
      (d) => d.executionStatus === 'COMPLETED',
    );
    const bySignal = await expectError(client.send(sessionId, { text: 'one more thing' }), SessionClosedError);
    expect(bySignal.message).toBe(`session ${sessionId} is closed and accepts no new messages`);
    await expectError(client.submit(sessionId, { text: 'one more thing' }), SessionClosedError);
    // Queries still answer from the closed Session's state.
    expect((await client.snapshot(sessionId)).stage).toBe('Closed');
  });
});

describe('SessionClient: non-task signals and queries', () => {
  it('delivers approvals, notifications, tool results and commands, none of them a task input', async () => {
    const sessionId = uniqueId('control');
    await client.submit(sessionId, { text: 'Prepare the quarterly report' }, { wait: true });
    // No call waits: every answer is heard, so each says why it applied nothing (and is still recorded).
    const refused = await expectError(client.approve(sessionId, 'a-1', 'looks right'), ApprovalRefusedError);
    expect(refused.reason).toMatch(/matches no tool call waiting for approval/);
    await expectError(client.reject(sessionId, 'a-2'), ApprovalRefusedError);
    await client.notify(sessionId, { kind: 'deploy', text: 'staging redeployed' });
    const noCall = await expectError(
      client.toolResult(sessionId, { callId: 'call-1', output: { rows: 3 } }),
      ToolResultRefusedError,
    );
    expect(noCall.exitCode).toBe(2);
    await client.command(sessionId, { name: 'set-goals', args: { phase: 'Draft the summary section' } });
    await client.command(sessionId, { name: 'pause' });

    const view = await waitFor(
      () => client.snapshot(sessionId),
      (v) => v.counts.controlEvents === 6,
    );
    expect(view.status).toBe('paused');
    expect(view.stage).toBe('Paused');
    expect(view.seq.lastBound).toBe(1);
    expect((await client.goals(sessionId)).phase?.text).toBe('Draft the summary section');
    expect((await client.capabilities(sessionId)).skills).toHaveLength(1);
    expect(await client.outOfScope(sessionId)).toEqual([]);

    await client.command(sessionId, { name: 'resume', commandId: 'resume-1' });
    await client.command(sessionId, { name: 'resume', commandId: 'resume-1' });
    const resumed = await waitFor(
      () => client.snapshot(sessionId),
      (v) => v.status === 'active',
    );
    expect(resumed.counts.controlEvents).toBe(7);

    const badCommand = await expectError(client.command(sessionId, { name: 'set-goals', args: {} }), InvalidInputError);
    expect(badCommand.message).toContain('give at least one of session, phase');
  });

  it('maps an unknown Session to SessionNotFoundError for queries and signals', async () => {
    const sessionId = uniqueId('nobody');
    const error = await expectError(client.goals(sessionId), SessionNotFoundError);
    expect(error.sessionId).toBe(sessionId);
    expect(error.exitCode).toBe(3);
    await expectError(client.approve(sessionId, 'a-1'), SessionNotFoundError);
    await expectError(client.command(sessionId, { name: 'pause' }), SessionNotFoundError);
  });

  it('times out a query that no worker answers instead of hanging', async () => {
    const orphanQueue = uniqueId('no-worker');
    const orphan = new SessionClient(w.client, { taskQueue: orphanQueue, queryTimeoutMs: 1_500 });
    const sessionId = uniqueId('orphan');
    await orphan.send(sessionId, { text: 'Nobody will process this' });
    const error = await expectError(orphan.snapshot(sessionId), SessionTimeoutError);
    expect(error.exitCode).toBe(5);
    await w.client.workflow.getHandle(`session:${sessionId}`).terminate('test cleanup');
  });
});

describe('SessionClient: watch and list', () => {
  it('watch yields stage and decision changes and ends when the Session closes', async () => {
    const sessionId = uniqueId('watch');
    await client.submit(sessionId, { text: 'Collect the vendor quotes' }, { wait: true });
    const events: WatchEvent[] = [];
    const watching = (async () => {
      for await (const event of client.watch(sessionId, { intervalMs: 100 })) events.push(event);
    })();
    await waitFor(
      () => Promise.resolve(events.length),
      (n) => n > 0,
    );
    await client.submit(sessionId, { text: 'Compare the two cheapest vendors' }, { wait: true });
    await client.command(sessionId, { name: 'close' });
    await watching;

    expect(events[0]).toMatchObject({ type: 'stage', stage: 'Idle', seq: 1 });
    const decisions = events.flatMap((e) => (e.type === 'decision' ? [e.record.seq] : []));
    expect(decisions).toEqual([2]);
    expect(events.at(-1)).toMatchObject({ type: 'stage', stage: 'Closed' });
  });

  it('watch ends when its AbortSignal fires', async () => {
    const sessionId = uniqueId('abort');
    await client.send(sessionId, { text: 'Draft the newsletter' });
    const stop = new AbortController();
    const seen: string[] = [];
    setTimeout(() => stop.abort(), 800);
    for await (const event of client.watch(sessionId, { signal: stop.signal, sinceSeq: 0 })) seen.push(event.type);
    expect(stop.signal.aborted).toBe(true);
    expect(seen).toContain('stage');
  });

  it('list finds Sessions by SessionStage and SessionStatus, with goal, parent and start time', async () => {
    const sessionId = uniqueId('listed');
    const child = uniqueId('child');
    await client.submit(sessionId, { text: 'Organise the team retreat' }, { wait: true });
    await client.submit(
      child,
      { text: 'Book the retreat venue' },
      { wait: true, start: { parentSessionId: sessionId } },
    );

    const idle = await waitFor(
      () => client.list({ stage: 'idle', status: 'active', limit: 1000 }),
      (rows) => rows.some((r) => r.sessionId === sessionId),
    );
    const row = idle.find((r) => r.sessionId === sessionId);
    expect(row).toMatchObject({
      workflowId: `session:${sessionId}`,
      executionStatus: 'RUNNING',
      status: 'active',
      stage: 'Idle',
      goal: 'Organise the team retreat',
      parent: null,
      taskQueue: w.taskQueue,
    });
    expect(row?.startTime).toBeInstanceOf(Date);

    const children = await waitFor(
      () => client.list({ parent: sessionId }),
      (rows) => rows.length === 1,
    );
    expect(children[0]).toMatchObject({ sessionId: child, parent: sessionId });

    expect(visibilityQuery({ stage: 'idle', status: 'ACTIVE' })).toBe(
      `WorkflowType = 'session' AND SessionStage = 'Idle' AND SessionStatus = 'active'`,
    );
    const bad = await expectError(client.list({ stage: "Idle' OR 1=1" }), InvalidInputError);
    expect(bad.field).toBe('stage');
  });
});

describe('SessionClient: connecting', () => {
  it('times out a send on a connection that hangs after a server restart, and the retry with the same messageId succeeds', async () => {
    // The proxy plays the restart: it drops every connection, then accepts new ones without answering
    // (gRPC-JS then waits for HTTP/2 SETTINGS with no timeout of its own, grpc/grpc-node#2785), then
    // forwards again.
    const proxy = await tcpProxy();
    const restarting = await SessionClient.connect({
      address: proxy.address,
      taskQueue: w.taskQueue,
      requestTimeoutMs: 1_500,
    });
    const sessionId = uniqueId('restart');
    try {
      await restarting.send(sessionId, { text: 'Plan the quarterly offsite' });
      proxy.switch('hold');

      const started = Date.now();
      const draft = { text: 'Add a budget line', messageId: uniqueId('m') };
      const error = await expectError(restarting.send(sessionId, draft), SessionTimeoutError);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(error.message).toContain('safe to retry');

      proxy.switch('forward');
      await waitFor(
        () =>
          restarting.send(sessionId, draft).then(
            () => true,
            () => false,
          ),
        (sent) => sent,
      );
      const decided = await waitFor(
        () => client.decisions(sessionId),
        (records) => records.length === 2,
      );
      expect(decided.map((r) => r.messageId)).toContain(draft.messageId);
    } finally {
      await restarting.close();
      await proxy.close();
    }
  });

  it('close() cancels the calls waiting for an answer, lets a call between retries end, and refuses later calls', async () => {
    // A query no worker answers waits at the server: close() cancels it at once.
    const orphanQueue = uniqueId('no-worker');
    const held = await SessionClient.connect({
      address: inject('temporalAddress'),
      taskQueue: orphanQueue,
      queryTimeoutMs: 60_000,
    });
    const orphanId = uniqueId('orphan');
    await held.send(orphanId, { text: 'Nobody will process this' });
    const query = held.snapshot(orphanId).then(
      () => 'answered',
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 500));
    let started = Date.now();
    await held.close();
    expect(await query).toBeInstanceOf(ClientClosedError);
    expect(Date.now() - started).toBeLessThan(5_000);
    await expectError(held.send(orphanId, { text: 'one more' }), ClientClosedError);
    await w.client.workflow.getHandle(`session:${orphanId}`).terminate('test cleanup');

    // A server that refuses connections keeps a send in the SDK's retry backoff, where closing the
    // channel under it would leave it unsettled and throw "Channel has been shut down" from a timer.
    const proxy = await tcpProxy();
    const refused = await SessionClient.connect({ address: proxy.address, requestTimeoutMs: 2_000 });
    try {
      proxy.switch('refuse');
      const send = refused.send(uniqueId('refused'), { text: 'Plan the offsite' }).then(
        () => 'sent',
        (e: unknown) => e,
      );
      await new Promise((r) => setTimeout(r, 300));
      started = Date.now();
      await refused.close();
      expect(await send).toBeInstanceOf(ClientClosedError);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await proxy.close();
    }
  });

  it('keeps nothing per call once it has settled (no abort listener piles up on a shared signal)', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    // A client of its own: Node warns once per signal, so a signal other tests used may have warned already.
    const fresh = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue: w.taskQueue });
    try {
      const sessionId = uniqueId('many-calls');
      await fresh.send(sessionId, { text: 'Plan the quarterly offsite' });
      for (let i = 0; i < 30; i++) await fresh.describe(sessionId);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
      await fresh.close();
    }
    expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
  });

  it('reports an unreachable server with its address', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const error = await expectError(
      SessionClient.connect({ address, connectTimeoutMs: 1_000 }),
      ServerUnreachableError,
    );
    expect(error.message).toContain(address);
    expect(error.exitCode).toBe(4);
  });

  it('validates TLS files before connecting', async () => {
    const missing = await expectError(
      SessionClient.connect({ tls: { certFile: '/nonexistent/client.pem', keyFile: '/nonexistent/client.key' } }),
      InvalidInputError,
    );
    expect(missing.field).toBe('tls.certFile');
    const half = await expectError(SessionClient.connect({ tls: { certFile: '/x.pem' } }), InvalidInputError);
    expect(half.field).toBe('tls.keyFile');
  });
});

/**
 * A TCP proxy on 127.0.0.1 to the test server: `forward` passes bytes both ways, `hold` accepts
 * connections and never answers, `refuse` drops each at once. `switch` drops every open connection.
 */
async function tcpProxy(): Promise<{
  address: string;
  switch(mode: 'forward' | 'hold' | 'refuse'): void;
  close(): Promise<void>;
}> {
  const upstream = inject('temporalAddress');
  const [host, port] = [
    upstream.slice(0, upstream.lastIndexOf(':')),
    Number(upstream.slice(upstream.lastIndexOf(':') + 1)),
  ];
  let mode: 'forward' | 'hold' | 'refuse' = 'forward';
  const sockets = new Set<Socket>();
  const server = createServer((inbound) => {
    if (mode === 'refuse') return void inbound.destroy();
    sockets.add(inbound);
    inbound.on('close', () => sockets.delete(inbound));
    inbound.on('error', () => inbound.destroy());
    if (mode === 'hold') return;
    const outbound = connect(port, host);
    outbound.on('error', () => inbound.destroy());
    inbound.on('close', () => outbound.destroy());
    outbound.on('close', () => inbound.destroy());
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dropAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    switch(next) {
      mode = next;
      dropAll();
    },
    async close() {
      dropAll();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A 127.0.0.1 port that nothing listens on. */
async function closedPort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}
