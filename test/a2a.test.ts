/**
 * A Session kind as an A2A agent, driven by `@a2a-js/sdk`'s own client against the gateway on a real
 * Temporal server with a real worker, the MCP fixture tools (`add` needs approval) and the scripted
 * model: the agent card (catalog skills, bearer scheme), a turn by SendMessage, a streamed turn that
 * goes working → input-required on an approval, answered through the gateway's approve endpoint and
 * then resumed to completed with the agent's answer; an approval answered by A2A input; push
 * notifications to a real webhook on 127.0.0.1 (let through with the allow list) and the guard's
 * -32602 refusals of private addresses; and CancelTask interrupting a waiting turn.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import {
  Role,
  StreamResponse,
  TaskState,
  type Message,
  type Part,
  type Task,
  type TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadCatalogDir } from '../capabilities/catalog-files.js';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import { SessionClient } from '../client/index.js';
import { startGateway, type Gateway } from '../gateway/server.js';
import { MODEL, scriptedModels, startWorker, uniqueId, type TestWorker } from './support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from './support/mcp-fixture.js';
import { ScriptedModelServer } from './support/model-server.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

const TOKEN = 'a2a-test-token';
const GOAL = 'Exercise the fixture tools: echo and add numbers';

let dir: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let worker: TestWorker;
let client: SessionClient;
let gateway: Gateway;
/** A second gateway with push notifications off (HARNESS_A2A_PUSH=off). */
let pushless: Gateway;
let webhook: Server;
let webhookUrl: string;
/** What the webhook received: each body, as the SDK's StreamResponse, with its headers. */
const pushed: Array<{ path: string; response: StreamResponse; headers: IncomingHttpHeaders }> = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'a2a-'));
  const connected = await connectedCatalog({ fixture: fixtureMcpEntry(dir, ['echo', 'add']) });
  mcp = connected.mcp;
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  script.selection.set(GOAL, { skills: [], toolsets: ['mcp-fixture'] });
  worker = await startWorker({ models: scriptedModels(server), catalog: connected.catalog, mcp });
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue: worker.taskQueue });
  const skills = loadCatalogDir('catalog').entries.flatMap((e) =>
    e.kind === 'skill' ? [{ id: e.id, name: e.name, description: e.description, tags: e.tags }] : [],
  );
  const agents = [{ id: 'fixture', name: 'Fixture agent', description: 'Adds numbers with approval.' }];
  gateway = await startGateway({
    client,
    feed: worker.events,
    token: TOKEN,
    a2a: { agents, skills, push: { enabled: true, allowHosts: ['127.0.0.1'] } },
  });
  pushless = await startGateway({
    client,
    token: TOKEN,
    a2a: { agents, skills, push: { enabled: false, allowHosts: [] } },
  });
  webhook = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      pushed.push({ path: req.url ?? '', response: StreamResponse.fromJSON(JSON.parse(body)), headers: req.headers });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
  webhookUrl = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => (webhook ? webhook.close(resolve) : resolve(undefined)));
  await pushless?.close();
  await gateway?.close();
  await client?.close();
  await worker?.stop();
  await mcp?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The SDK's fetch with the gateway's bearer token on every request (card and JSON-RPC alike). */
const authed: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${TOKEN}`);
  return fetch(input, { ...init, headers });
};

async function a2aClient() {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed }),
    }),
  );
  return factory.createFromUrl(gateway.url);
}

const text = (value: string): Part => ({
  content: { $case: 'text', value },
  mediaType: 'text/plain',
  filename: '',
  metadata: {},
});

function message(contextId: string, parts: Part[], taskId = ''): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts,
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
}

const pushConfig = (url: string, token = ''): TaskPushNotificationConfig => ({
  tenant: '',
  id: '',
  taskId: '',
  url,
  token,
  authentication: undefined,
});

const request = (msg: Message, push?: TaskPushNotificationConfig) => ({
  tenant: '',
  message: msg,
  configuration: push
    ? { acceptedOutputModes: [], taskPushNotificationConfig: push, returnImmediately: false }
    : undefined,
  metadata: {},
});

/** The task states the webhook received for `taskId`, in order. */
function pushedStates(taskId: string): TaskState[] {
  return pushed.flatMap(({ response: { payload } }) => {
    if (payload?.$case === 'task' && payload.value.id === taskId && payload.value.status) {
      return [payload.value.status.state];
    }
    if (payload?.$case === 'statusUpdate' && payload.value.taskId === taskId && payload.value.status) {
      return [payload.value.status.state];
    }
    return [];
  });
}

/** Waits (notifications go beside the stream) until the webhook received `state` for `taskId`. */
async function pushedUntil(taskId: string, state: TaskState) {
  const deadline = Date.now() + 20_000;
  while (!pushedStates(taskId).includes(state)) {
    if (Date.now() > deadline)
      throw new Error(
        `no ${TaskState[state]} pushed for ${taskId}: ${pushedStates(taskId)
          .map((s) => TaskState[s])
          .join(', ')}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A raw JSON-RPC call to the gateway (to see the wire error codes). */
async function rpc(method: string, params: Record<string, unknown>, version: string | null = '1.0') {
  const response = await fetch(`${gateway.url}/a2a/fixture`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
      ...(version ? { 'a2a-version': version } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await response.json()) as { result?: unknown; error?: { code: number; message: string } };
}

/** Every stream response until the stream ends; the states seen, in order, and the last status. */
async function collect(stream: AsyncGenerator<StreamResponse>) {
  const states: TaskState[] = [];
  const responses: StreamResponse[] = [];
  let taskId = '';
  let reply = '';
  for await (const response of stream) {
    responses.push(response);
    const payload = response.payload;
    if (payload?.$case === 'task') {
      taskId = payload.value.id;
      if (payload.value.status) states.push(payload.value.status.state);
    } else if (payload?.$case === 'statusUpdate' && payload.value.status) {
      states.push(payload.value.status.state);
    } else if (payload?.$case === 'artifactUpdate') {
      const piece = textOf(payload.value.artifact?.parts ?? []);
      reply = payload.value.append ? reply + piece : piece;
    }
  }
  const last = [...responses].reverse().find((r) => r.payload?.$case === 'statusUpdate')?.payload;
  const status = last?.$case === 'statusUpdate' ? last.value.status : undefined;
  return { states, taskId, reply, status };
}

function textOf(parts: Part[]): string {
  return parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('');
}

function approvalOf(parts: Part[]): { approvalId: string; tool: string } {
  const data = parts.find((p) => p.content?.$case === 'data')?.content;
  if (data?.$case !== 'data') throw new Error('no data part');
  return (data.value as { approval: { approvalId: string; tool: string } }).approval;
}

/** A Session set up by a first A2A message, whose next input `ask` calls add(a, b) and waits. */
async function waitingTurn(
  a2a: Awaited<ReturnType<typeof a2aClient>>,
  prefix: string,
  a: number,
  b: number,
  push?: TaskPushNotificationConfig,
) {
  const contextId = uniqueId(prefix);
  const first = (await a2a.sendMessage(request(message(contextId, [text(GOAL)])))) as Task;
  expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  server.enqueue(
    MODEL.agent,
    { toolCalls: [{ id: 'call_1', name: 'add', arguments: { a, b } }] },
    { content: `The sum is ${a + b}.` },
  );
  const ask = `add ${a} and ${b} (${contextId})`;
  script.relevance.set(ask, [0.9, 0.9]);
  const streamed = await collect(a2a.sendMessageStream(request(message(contextId, [text(ask)]), push)));
  return { contextId, first, streamed };
}

describe('A2A', () => {
  it('serves the agent card with the catalog skills and the bearer scheme, and refuses calls without a token', async () => {
    const card = (await (await fetch(`${gateway.url}/.well-known/agent-card.json`)).json()) as Record<string, unknown>;
    expect(card).toMatchObject({
      name: 'Fixture agent',
      description: 'Adds numbers with approval.',
      capabilities: { streaming: true, pushNotifications: true },
      supportedInterfaces: [
        { url: `${gateway.url}/a2a/fixture`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: `${gateway.url}/a2a/fixture`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
    });
    const skills = (card.skills as Array<{ id: string }>).map((s) => s.id);
    expect(skills).toContain('weather-briefing');
    expect(skills).toContain('markdown-to-docx');
    expect((await fetch(`${gateway.url}/a2a/fixture/.well-known/agent-card.json`)).status).toBe(200);
    expect((await fetch(`${gateway.url}/a2a/nobody/.well-known/agent-card.json`)).status).toBe(404);
    const anonymous = await fetch(`${gateway.url}/a2a/fixture`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
    });
    expect(anonymous.status).toBe(401);
  });

  it('streams working → input-required on an approval; approved through the gateway, the task completes with the answer', async () => {
    const a2a = await a2aClient();
    const { contextId, first, streamed } = await waitingTurn(a2a, 'a2a-stream', 19, 23);
    // contextId is the Session id; the first input's reply is the scripted agent's, from its request.
    expect(first.contextId).toBe(contextId);
    expect(textOf(first.status?.message?.parts ?? [])).toBe(`Working on: ${GOAL}`);
    expect((await client.snapshot(contextId)).sessionId).toBe(contextId);

    expect(streamed.states[0]).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect(streamed.states).toContain(TaskState.TASK_STATE_WORKING);
    expect(streamed.states.at(-1)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const waiting = approvalOf(streamed.status?.message?.parts ?? []);
    expect(waiting.tool).toBe('add');
    const pending = (await client.snapshot(contextId)).pendingApprovals.map((p) => p.approvalId);
    expect(pending).toEqual([waiting.approvalId]);
    const got = await a2a.getTask({ tenant: '', id: streamed.taskId });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

    // The existing approve path, as the token's principal.
    const approved = await fetch(`${gateway.url}/sessions/${contextId}/approvals/${waiting.approvalId}/approve`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(approved.status).toBe(200);
    // Any message on the task resumes it from the Session's events, to the turn's end.
    const resumed = await collect(
      a2a.sendMessageStream(request(message(contextId, [text('I approved it.')], streamed.taskId))),
    );
    expect(resumed.taskId).toBe(streamed.taskId);
    expect(resumed.states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(resumed.status?.message?.parts ?? [])).toBe('The sum is 42.');
    expect(resumed.reply).toBe('The sum is 42.');
    const done = await a2a.getTask({ tenant: '', id: streamed.taskId });
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(done.artifacts.find((a) => a.artifactId === 'reply')?.parts ?? [])).toBe('The sum is 42.');
    // The Session recorded the approval by the principal, and the tool ran with the model's arguments.
    const record = (await client.decisions(contextId)).find((r) => r.seq === 2);
    expect(record?.agent?.outcome).toBe('replied');
    expect(record?.agent?.toolCalls[0]).toMatchObject({ tool: 'add', approval: { approved: true, by: 'operator' } });
  });

  it('answers the approval by A2A input (a data part on the task)', async () => {
    const a2a = await a2aClient();
    const { contextId, streamed } = await waitingTurn(a2a, 'a2a-input', 2, 5);
    expect(streamed.states.at(-1)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const answer: Part = {
      content: { $case: 'data', value: { approval: { approved: true, note: 'fine' } } },
      mediaType: 'application/json',
      filename: '',
      metadata: {},
    };
    const resumed = await collect(a2a.sendMessageStream(request(message(contextId, [answer], streamed.taskId))));
    expect(resumed.states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(resumed.status?.message?.parts ?? [])).toBe('The sum is 7.');
    const record = (await client.decisions(contextId)).find((r) => r.seq === 2);
    expect(record?.agent?.toolCalls[0]).toMatchObject({ approval: { approved: true, by: 'operator', note: 'fine' } });
  });

  it("speaks A2A 0.3 too: the SDK's v0.3 transport (message/send, tasks/get) runs a turn", async () => {
    const legacy = new LegacyJsonRpcTransport({ endpoint: `${gateway.url}/a2a/fixture`, fetchImpl: authed });
    expect(legacy.protocolVersion).toBe('0.3');
    const contextId = uniqueId('a2a-v03');
    const task = (await legacy.sendMessage(request(message(contextId, [text(GOAL)])))) as Task;
    expect(task.contextId).toBe(contextId);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task.status?.message?.parts ?? [])).toBe(`Working on: ${GOAL}`);
    const got = await legacy.getTask({ tenant: '', id: task.id });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('push notifications: a webhook on 127.0.0.1 (allowed) receives the task through input-required to completed', async () => {
    const a2a = await a2aClient();
    const { contextId, streamed } = await waitingTurn(
      a2a,
      'a2a-push',
      3,
      4,
      pushConfig(`${webhookUrl}/hook`, 'hook-token'),
    );
    expect(streamed.states.at(-1)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await pushedUntil(streamed.taskId, TaskState.TASK_STATE_INPUT_REQUIRED);
    const listed = await a2a.listTaskPushNotificationConfig({
      tenant: '',
      taskId: streamed.taskId,
      pageSize: 0,
      pageToken: '',
    });
    expect(listed.configs).toEqual([expect.objectContaining({ url: `${webhookUrl}/hook`, taskId: streamed.taskId })]);

    const answer: Part = {
      content: { $case: 'data', value: { approval: { approved: true } } },
      mediaType: 'application/json',
      filename: '',
      metadata: {},
    };
    const resumed = await collect(a2a.sendMessageStream(request(message(contextId, [answer], streamed.taskId))));
    expect(resumed.states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    await pushedUntil(streamed.taskId, TaskState.TASK_STATE_COMPLETED);

    // The webhook saw what the stream showed, in order: submitted, working, input-required, working, completed.
    const states = pushedStates(streamed.taskId);
    expect(states[0]).toBe(TaskState.TASK_STATE_SUBMITTED);
    const waitingAt = states.indexOf(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(states.slice(1, waitingAt)).toContain(TaskState.TASK_STATE_WORKING);
    expect(states.slice(waitingAt + 1, -1)).toContain(TaskState.TASK_STATE_WORKING);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    const mine = pushed.filter(({ response: { payload } }) =>
      payload?.$case === 'task' ? payload.value.id === streamed.taskId : payload?.value.taskId === streamed.taskId,
    );
    for (const { path, headers } of mine) {
      expect({ path, token: headers['x-a2a-notification-token'], type: headers['content-type'] }).toEqual({
        path: '/hook',
        token: 'hook-token',
        type: 'application/a2a+json',
      });
    }
    const last = mine.at(-1)?.response.payload;
    expect(last?.$case === 'statusUpdate' && textOf(last.value.status?.message?.parts ?? [])).toBe('The sum is 7.');
    const waiting = mine.find(
      ({ response: { payload } }) =>
        payload?.$case === 'statusUpdate' && payload.value.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED,
    )?.response.payload;
    expect(waiting?.$case === 'statusUpdate' && approvalOf(waiting.value.status?.message?.parts ?? []).tool).toBe(
      'add',
    );
  });

  it('push notifications: private and loopback webhooks are refused with -32602, and nothing is sent', async () => {
    const a2a = await a2aClient();
    const contextId = uniqueId('a2a-push-refused');
    const task = (await a2a.sendMessage(request(message(contextId, [text(GOAL)])))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const before = pushed.length;
    // Through the SDK's client: refused, with the reason.
    await expect(
      a2a.createTaskPushNotificationConfig({ ...pushConfig('http://10.0.0.5/hook'), taskId: task.id }),
    ).rejects.toThrow('push notification URL refused: 10.0.0.5 is a private address');
    // On the wire: -32602 (A2A 1.0 and 0.3 alike); 127.0.0.1 is allowed by name, not its other spellings.
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      `http://[::ffff:127.0.0.1]:${new URL(webhookUrl).port}/`,
      'ftp://example.com/x',
    ]) {
      const answer = await rpc('CreateTaskPushNotificationConfig', { taskId: task.id, url });
      expect([url, answer.error]).toEqual([
        url,
        { code: -32602, message: expect.stringContaining('push notification URL refused: '), data: expect.anything() },
      ]);
    }
    const legacy = await rpc(
      'tasks/pushNotificationConfig/set',
      { taskId: task.id, pushNotificationConfig: { url: 'http://192.168.1.10/hook' } },
      null,
    );
    expect(legacy.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('192.168.1.10 is a private address'),
    });
    // A message whose configuration names a private webhook is refused before it becomes an input.
    const fresh = uniqueId('a2a-push-never');
    await expect(
      a2a.sendMessage(request(message(fresh, [text(GOAL)]), pushConfig('http://127.0.0.2/hook'))),
    ).rejects.toThrow('127.0.0.2 is a loopback address');
    await expect(client.snapshot(fresh)).rejects.toThrow();
    expect(
      (await a2a.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs,
    ).toEqual([]);
    expect(pushed.length).toBe(before);
  });

  it('with HARNESS_A2A_PUSH=off the card says no push notifications and configs are refused', async () => {
    const card = (await (await fetch(`${pushless.url}/.well-known/agent-card.json`)).json()) as {
      capabilities: { pushNotifications: boolean };
    };
    expect(card.capabilities.pushNotifications).toBe(false);
    const response = await fetch(`${pushless.url}/a2a/fixture`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'CreateTaskPushNotificationConfig',
        params: { taskId: 'x', url: `${webhookUrl}/hook` },
      }),
    });
    expect(((await response.json()) as { error: { code: number } }).error.code).toBe(-32003);
  });

  it('CancelTask interrupts the waiting turn', async () => {
    const a2a = await a2aClient();
    const { contextId, streamed } = await waitingTurn(a2a, 'a2a-cancel', 1, 1);
    expect(streamed.states.at(-1)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const canceled = await a2a.cancelTask({ tenant: '', id: streamed.taskId, metadata: {} });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const record = await client.waitForDecision(contextId, 2);
    expect(record?.agent?.outcome).toBe('interrupted');
    // Last in the file: the answer enqueued for after the approval was never asked for.
  });
});
