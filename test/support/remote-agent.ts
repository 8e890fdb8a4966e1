/**
 * A remote A2A agent for tests, served by `@a2a-js/sdk`'s own server classes (DefaultRequestHandler,
 * an InMemoryTaskStore, the SDK's JSON-RPC transport handler) on 127.0.0.1. Its executor answers
 * only from the request's text ({@link forecast}), after working for a while so callers poll the task.
 * It records each message id it ran, counts GetTask requests, and can answer the next GetTask 500.
 * A request whose text ends in `(until cancelled)` works until a CancelTask ends it as canceled.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER, AGENT_CARD_PATH, AgentCard, Role, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  ServerCallContext,
  type AgentExecutor,
} from '@a2a-js/sdk/server';

/** The remote agent's answer: made from the request's text alone. */
export const forecast = (text: string) =>
  `Forecast for "${text}": ${text.split(' ').length} words, ${text.length} characters`;

export interface RemoteAgentServer {
  url: string;
  /** The message ids of the SendMessage requests it ran, in order. */
  received: string[];
  /** GetTask requests it answered (a 500 included). */
  getTasks: number;
  /** When set, the next GetTask is answered 500 and this is cleared. */
  failNextGetTask: boolean;
  /** The message ids of the tasks a CancelTask canceled, in order. */
  cancelled: string[];
  close(): Promise<void>;
}

export async function startRemoteAgent(options: { workMs?: number } = {}): Promise<RemoteAgentServer> {
  const state = { received: [] as string[], getTasks: 0, failNextGetTask: false, cancelled: [] as string[] };
  /** Tasks working until cancelled: their message id, and what ends their wait. */
  const held = new Map<string, { messageId: string; contextId: string; release: () => void }>();
  const executor: AgentExecutor = {
    execute: async (request, bus) => {
      const { taskId, contextId } = request;
      const message = request.userMessage;
      state.received.push(message.messageId);
      const text = message.parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n');
      const status = (state: TaskState, answer?: string) => ({
        state,
        timestamp: new Date().toISOString(),
        message:
          answer === undefined
            ? undefined
            : {
                messageId: `${taskId}:answer`,
                contextId,
                taskId,
                role: Role.ROLE_AGENT,
                parts: [
                  {
                    content: { $case: 'text' as const, value: answer },
                    mediaType: 'text/plain',
                    filename: '',
                    metadata: {},
                  },
                ],
                metadata: {},
                extensions: [],
                referenceTaskIds: [],
              },
      });
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: status(TaskState.TASK_STATE_WORKING),
          history: [message],
          artifacts: [],
          metadata: {},
        }),
      );
      if (text.endsWith('(until cancelled)')) {
        // cancelTask publishes the canceled status and finishes the task.
        return new Promise<void>((release) => held.set(taskId, { messageId: message.messageId, contextId, release }));
      }
      await new Promise((resolve) => setTimeout(resolve, options.workMs ?? 600));
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: status(TaskState.TASK_STATE_COMPLETED, forecast(text)),
          metadata: {},
        }),
      );
      bus.finished();
    },
    cancelTask: (taskId, bus) => {
      const task = held.get(taskId);
      if (!task) return Promise.reject(new Error(`task ${taskId} is not working`));
      held.delete(taskId);
      state.cancelled.push(task.messageId);
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: task.contextId,
          status: { state: TaskState.TASK_STATE_CANCELED, timestamp: new Date().toISOString(), message: undefined },
          metadata: {},
        }),
      );
      bus.finished();
      task.release();
      return Promise.resolve();
    },
  };
  // Both made once the server listens (the card names its URL).
  const served: { card?: AgentCard; transport?: JsonRpcTransportHandler } = {};
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      void (async () => {
        if (req.method === 'GET' && req.url === `/${AGENT_CARD_PATH}`) {
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify(AgentCard.toJSON(served.card!)));
          return;
        }
        const call = JSON.parse(body) as Record<string, unknown>;
        if (call.method === 'GetTask') {
          state.getTasks++;
          if (state.failNextGetTask) {
            state.failNextGetTask = false;
            res.writeHead(500).end('the remote is briefly down');
            return;
          }
        }
        const version = req.headers[A2A_VERSION_HEADER.toLowerCase()];
        const context = new ServerCallContext(typeof version === 'string' ? { requestedVersion: version } : {});
        const answer = await served.transport!.handle(call, context);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card: AgentCard = {
    name: 'Weather',
    description: 'Answers weather questions.',
    version: '1',
    provider: undefined,
    supportedInterfaces: [
      { url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION, tenant: '' },
    ],
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
  served.card = card;
  served.transport = new JsonRpcTransportHandler(new DefaultRequestHandler(card, new InMemoryTaskStore(), executor));
  return Object.assign(state, {
    url,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
