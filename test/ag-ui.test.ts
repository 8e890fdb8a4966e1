/**
 * A Session as an AG-UI agent, driven by `@ag-ui/client`'s HttpAgent against the gateway on a real
 * Temporal server with a real worker, the MCP fixture tools (`add` needs approval) and the scripted
 * model: a first turn that replies; a turn with a tool call that ends its run with an approval
 * interrupt, resumed with the answer and finished with the tool's result and the agent's reply; the
 * Session's events followed as AG-UI; and refused inputs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { EventType, HttpAgent, type BaseEvent } from '@ag-ui/client';
import { createParser } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import { SessionClient } from '../client/index.js';
import { startGateway, type Gateway } from '../gateway/server.js';
import { MODEL, scriptedModels, startWorker, uniqueId, type TestWorker } from './support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from './support/mcp-fixture.js';
import { ScriptedModelServer } from './support/model-server.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

const TOKEN = 'ag-ui-test-token';
const GOAL = 'Exercise the fixture tools: echo and add numbers';

let dir: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let worker: TestWorker;
let client: SessionClient;
let gateway: Gateway;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ag-ui-'));
  const connected = await connectedCatalog({ fixture: fixtureMcpEntry(dir, ['echo', 'add']) });
  mcp = connected.mcp;
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  script.selection.set(GOAL, { skills: [], toolsets: ['mcp-fixture'] });
  worker = await startWorker({ models: scriptedModels(server), catalog: connected.catalog, mcp });
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue: worker.taskQueue });
  gateway = await startGateway({ client, feed: worker.events, token: TOKEN });
});

afterAll(async () => {
  await gateway?.close();
  await client?.close();
  await worker?.stop();
  await mcp?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

function agent(sessionId: string): HttpAgent {
  return new HttpAgent({
    url: `${gateway.url}/ag-ui`,
    headers: { authorization: `Bearer ${TOKEN}` },
    threadId: sessionId,
  });
}

/** Runs the agent once; every event the client applied, in order. */
async function run(a: HttpAgent, parameters: Parameters<HttpAgent['runAgent']>[0] = {}): Promise<BaseEvent[]> {
  const events: BaseEvent[] = [];
  await a.runAgent(parameters, {
    onEvent: ({ event }) => {
      events.push(event);
    },
  });
  return events;
}

const say = (a: HttpAgent, content: string) => a.addMessage({ id: randomUUID(), role: 'user', content });
const types = (events: BaseEvent[]) => events.map((e) => e.type);
/** The event types without state deltas, whose number depends on how the reads fall. */
const shape = (events: BaseEvent[]) => types(events).filter((t) => t !== EventType.STATE_DELTA);
const customs = (events: BaseEvent[]) =>
  events.flatMap((e) => (e.type === EventType.CUSTOM ? [(e as unknown as { name: string }).name] : []));

describe('AG-UI', () => {
  it('runs a turn with a tool call and an approval: interrupt, resume, result, reply', async () => {
    const sessionId = uniqueId('agui');
    const a = agent(sessionId);
    say(a, GOAL);
    const first = await run(a);
    expect(shape(first)).toEqual([
      EventType.RUN_STARTED,
      EventType.STATE_SNAPSHOT,
      EventType.CUSTOM,
      EventType.TEXT_MESSAGE_START,
      ...shape(first).filter((t) => t === EventType.TEXT_MESSAGE_CONTENT),
      EventType.TEXT_MESSAGE_END,
      EventType.RUN_FINISHED,
    ]);
    expect(customs(first)).toEqual(['decision']);
    expect(a.messages.at(-1)).toMatchObject({ role: 'assistant', content: `Working on: ${GOAL}` });
    // The state: goals and the capabilities the first input loaded.
    expect(a.state).toMatchObject({ sessionId, goals: { session: GOAL }, capabilities: { toolsets: ['mcp-fixture'] } });

    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_1', name: 'add', arguments: { a: 19, b: 23 } }] },
      { content: 'The sum is 42.' },
    );
    const ask = `add 19 and 23 (${sessionId})`;
    script.relevance.set(ask, [0.9, 0.9]);
    say(a, ask);
    const second = await run(a);
    expect(shape(second)).toEqual([
      EventType.RUN_STARTED,
      EventType.STATE_SNAPSHOT,
      EventType.CUSTOM,
      EventType.TOOL_CALL_START,
      EventType.TOOL_CALL_ARGS,
      EventType.TOOL_CALL_END,
      EventType.CUSTOM,
      EventType.RUN_FINISHED,
    ]);
    expect(customs(second)).toEqual(['decision', 'approval.waiting']);
    const start = second.find((e) => e.type === EventType.TOOL_CALL_START) as unknown as {
      toolCallId: string;
      toolCallName: string;
    };
    expect(start.toolCallName).toBe('add');
    const finished = second.at(-1) as unknown as { outcome: { type: string; interrupts: Array<{ id: string }> } };
    expect(finished.outcome.type).toBe('interrupt');
    const approvalId = finished.outcome.interrupts[0]!.id;
    expect(approvalId).toBe(start.toolCallId);
    expect(a.pendingInterrupts.map((i) => i.id)).toEqual([approvalId]);
    expect((a.state as { pendingApprovals: Array<{ approvalId: string }> }).pendingApprovals).toEqual([
      expect.objectContaining({ approvalId, tool: 'add' }),
    ]);

    const third = await run(a, {
      resume: [{ interruptId: approvalId, status: 'resolved', payload: { approved: true } }],
    });
    expect(shape(third)).toEqual([
      EventType.RUN_STARTED,
      EventType.STATE_SNAPSHOT,
      EventType.CUSTOM,
      EventType.TOOL_CALL_RESULT,
      EventType.TEXT_MESSAGE_START,
      ...shape(third).filter((t) => t === EventType.TEXT_MESSAGE_CONTENT),
      EventType.TEXT_MESSAGE_END,
      EventType.RUN_FINISHED,
    ]);
    expect(customs(third)).toEqual(['tool.approved']);
    expect(third.find((e) => e.type === EventType.CUSTOM)).toMatchObject({
      value: { approvalId, by: 'operator' },
    });
    expect(third.find((e) => e.type === EventType.TOOL_CALL_RESULT)).toMatchObject({ toolCallId: approvalId });
    expect(a.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'The sum is 42.' });
    expect(a.pendingInterrupts).toEqual([]);
    expect((a.state as { pendingApprovals: unknown[] }).pendingApprovals).toEqual([]);
    // The client's messages hold the call and its result, paired.
    const call = a.messages.find((m) => m.role === 'assistant' && m.toolCalls?.some((c) => c.id === approvalId));
    expect(call).toBeDefined();
    expect(a.messages.find((m) => m.role === 'tool' && m.toolCallId === approvalId)).toBeDefined();
  });

  it('follows a Session as AG-UI runs, one per input, with the user messages', async () => {
    const sessionId = uniqueId('agui-follow');
    // Opened before the Session exists: the stream waits for it and starts at its first event.
    const events: BaseEvent[] = [];
    const reading = readAgUi(`/sessions/${sessionId}/ag-ui`, events, (e) => e.type === EventType.RUN_FINISHED);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await client.submit(sessionId, { text: GOAL });
    await reading;
    expect(types(events)[0]).toBe(EventType.RUN_STARTED);
    const user = events.find((e) => e.type === EventType.TEXT_MESSAGE_START && e.role === 'user');
    expect(user).toBeDefined();
    const text = events
      .filter((e) => e.type === EventType.TEXT_MESSAGE_CONTENT)
      .map((e) => (e as unknown as { delta: string }).delta)
      .join('');
    expect(text).toBe(`${GOAL}Working on: ${GOAL}`);
    expect(events.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, threadId: sessionId, runId: `${sessionId}#1` });
  });

  it('refuses what is not a RunAgentInput, a bad threadId, and a run without a user message', async () => {
    const post = (body: unknown) =>
      fetch(`${gateway.url}/ag-ui`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const notInput = await post({ threadId: 'x' });
    expect(notInput.status).toBe(400);
    expect(((await notInput.json()) as { error: string }).error).toMatch(/not an AG-UI RunAgentInput: .*runId/);
    const badThread = await post({
      threadId: 'has spaces',
      runId: 'r',
      messages: [{ id: 'm', role: 'user', content: 'hi' }],
    });
    expect(badThread.status).toBe(400);
    expect(((await badThread.json()) as { error: string }).error).toMatch(/^threadId: /);
    const noUser = await post({ threadId: uniqueId('agui-none'), runId: 'r', messages: [] });
    expect(noUser.status).toBe(400);
    expect(((await noUser.json()) as { error: string }).error).toBe('messages: no user message to send');
    const anonymous = await fetch(`${gateway.url}/ag-ui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(anonymous.status).toBe(401);
  });
});

/** Reads an AG-UI SSE stream into `events` until `done` says so (or 60 s pass). */
async function readAgUi(path: string, events: BaseEvent[], done: (event: BaseEvent) => boolean): Promise<void> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 60_000);
  try {
    const response = await fetch(`${gateway.url}${path}`, {
      headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' },
      signal: stop.signal,
    });
    expect(response.status).toBe(200);
    let finished = false;
    const parser = createParser({
      onEvent(message) {
        if (finished) return;
        const event = JSON.parse(message.data) as BaseEvent;
        events.push(event);
        if (done(event)) finished = true;
      },
    });
    const decoder = new TextDecoder();
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    while (!finished) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
}
