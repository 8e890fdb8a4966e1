/**
 * An A2A client calling a Session through the gateway `npm start` runs, with `@a2a-js/sdk`'s own
 * client: it reads the agent card at /.well-known/agent-card.json, sends the text given as a new
 * task (SendStreamingMessage, a new contextId: a new Session) and prints each state of the task. With
 * `--approve`, a task that waits for an approval (input-required) is answered by A2A input: a message
 * on the same task with the data part {"approval": {"approved": true}}; its stream then goes on to the
 * agent's answer.
 *
 *   npx tsx examples/a2a-client/client.ts [--approve] "the task"
 *
 * The gateway: HARNESS_GATEWAY_URL, else http://127.0.0.1:$HARNESS_GATEWAY_PORT (default 7244); its
 * token: HARNESS_GATEWAY_TOKEN, else the one `npm start` keeps in .data/gateway-token.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Role, TaskState, type Message, type Part, type StreamResponse } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';

const args = process.argv.slice(2);
const approve = args.includes('--approve');
const task = args.filter((a) => a !== '--approve').join(' ');
if (!task) {
  process.stderr.write('usage: client.ts [--approve] "the task"\n');
  process.exit(2);
}
const url = process.env.HARNESS_GATEWAY_URL ?? `http://127.0.0.1:${process.env.HARNESS_GATEWAY_PORT ?? 7244}`;
const token = process.env.HARNESS_GATEWAY_TOKEN ?? readFileSync('.data/gateway-token', 'utf8').trim();

// The gateway's bearer token on every request the SDK makes (agent card and JSON-RPC alike).
const authed: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed }),
  }),
);
const client = await factory.createFromUrl(url);

const part = (content: Part['content']): Part => ({ content, mediaType: '', filename: '', metadata: {} });
const send = (contextId: string, parts: Part[], taskId = '') => {
  const message: Message = {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts,
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
  return client.sendMessageStream({ tenant: '', message, configuration: undefined, metadata: {} });
};
const textOf = (parts: Part[] = []) =>
  parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join(' ');
const stateName = (state: TaskState) => TaskState[state].replace('TASK_STATE_', '').toLowerCase().replace('_', '-');

/** Prints each state of the stream; returns the task id and the last state. */
async function follow(stream: AsyncGenerator<StreamResponse>): Promise<{ taskId: string; state?: TaskState }> {
  let taskId = '';
  let state: TaskState | undefined;
  for await (const { payload } of stream) {
    if (payload?.$case === 'task') taskId = payload.value.id;
    if (payload?.$case !== 'statusUpdate' || !payload.value.status) continue;
    state = payload.value.status.state;
    const said = textOf(payload.value.status.message?.parts);
    process.stdout.write(`${stateName(state)}${said ? `: ${said}` : ''}\n`);
  }
  return { taskId, ...(state !== undefined ? { state } : {}) };
}

const contextId = `a2a-${randomUUID().slice(0, 8)}`;
process.stdout.write(`${client.constructor.name} to ${url}: context (Session) ${contextId}\n`);
const first = await follow(send(contextId, [part({ $case: 'text', value: task })]));
let state = first.state;
if (state === TaskState.TASK_STATE_INPUT_REQUIRED && approve) {
  const answer = part({ $case: 'data', value: { approval: { approved: true } } });
  ({ state } = await follow(send(contextId, [answer], first.taskId)));
}
process.exit(state === TaskState.TASK_STATE_COMPLETED || state === TaskState.TASK_STATE_INPUT_REQUIRED ? 0 : 1);
