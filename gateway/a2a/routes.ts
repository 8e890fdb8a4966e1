/**
 * The gateway's A2A endpoints, on `@a2a-js/sdk`'s server classes: per configured agent (a kind of
 * Session) a DefaultRequestHandler with an InMemoryTaskStore and the SessionAgentExecutor, reached
 * through the SDK's JSON-RPC transport handler (JsonRpcTransportHandler, the framework-free core of
 * its Express `jsonRpcHandler`; the gateway is Fastify, so this file does what that middleware does:
 * version check, the call context, one JSON answer or Server-Sent Events).
 *
 * - `GET /.well-known/agent-card.json`: the first agent's card; `GET /a2a/<id>/.well-known/agent-card.json`: each agent's.
 * - `POST /a2a/<id>`: JSON-RPC 2.0 (A2A 1.0: SendMessage, SendStreamingMessage, GetTask, ListTasks,
 *   CancelTask, SubscribeToTask; and A2A 0.3's message/send, message/stream, tasks/get, tasks/cancel
 *   through the SDK's LegacyJsonRpcTransportHandler when `A2A-Version` is 0.3 or absent), behind the same guards and authentication as every other route,
 *   with the `send` permission; the call runs as the authenticated principal.
 *
 * Push notifications (`CreateTaskPushNotificationConfig`, a config in `SendMessage`'s configuration,
 * and their 0.3 names) go through push.ts's guard: a webhook must be a public http(s) host, checked
 * again as each notification connects. `push.enabled: false` (HARNESS_A2A_PUSH=off) turns them off and
 * the card says `pushNotifications: false`.
 */
import {
  A2A_PROTOCOL_VERSION,
  A2A_VERSION_HEADER,
  AGENT_CARD_PATH,
  AgentCard,
  type AgentCard as AgentCardType,
} from '@a2a-js/sdk';
import {
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  ServerCallContext,
  validateVersion,
} from '@a2a-js/sdk/server';
import { A2A_LEGACY_PROTOCOL_VERSION, duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SessionClient } from '../../client/index.js';
import type { EventFeed } from '../../contract/events.js';
import type { A2aAgentConfig, A2aSettings } from './config.js';
import { PrincipalUser, SessionAgentExecutor } from './executor.js';
import { GuardedPushSender, GuardedPushStore, WebhookGuard } from './push.js';

export interface A2aRouteOptions {
  client: SessionClient;
  feed?: EventFeed;
  settings: A2aSettings;
  /** How callers authenticate: `bearer` (with `jwt` when JWTs are accepted) or none (no-token mode). */
  auth: { bearer: boolean; jwt: boolean };
  /** The gateway's own URL, known once it listens. */
  baseUrl: () => string;
  log: (line: string) => void;
}

/** The agent card of one agent. */
export function agentCard(
  agent: A2aAgentConfig,
  options: Omit<A2aRouteOptions, 'client' | 'feed' | 'log'>,
): AgentCardType {
  const { settings, auth } = options;
  const base = settings.publicUrl ?? options.baseUrl();
  const wanted = agent.skills ? new Set(agent.skills) : null;
  return {
    name: agent.name,
    description: agent.description,
    version: '1',
    provider: undefined,
    // The 1.0 JSON-RPC interface, and the same URL for 0.3 (message/send, message/stream, tasks/get, tasks/cancel).
    supportedInterfaces: duplicateInterfacesForLegacy(
      [
        {
          url: `${base}/a2a/${agent.id}`,
          protocolBinding: 'JSONRPC',
          protocolVersion: A2A_PROTOCOL_VERSION,
          tenant: '',
        },
      ],
      ['JSONRPC'],
    ),
    capabilities: {
      streaming: true,
      pushNotifications: settings.push?.enabled ?? true,
      extensions: [],
      extendedAgentCard: false,
    },
    securitySchemes: auth.bearer
      ? {
          bearer: {
            scheme: {
              $case: 'httpAuthSecurityScheme',
              value: {
                scheme: 'Bearer',
                bearerFormat: auth.jwt ? 'JWT or opaque token' : 'opaque token',
                description:
                  "The gateway's bearer token (HARNESS_GATEWAY_TOKEN, a token file entry, or a JWT); the principal needs the `send` permission, and `approve` to answer approvals.",
              },
            },
          },
        }
      : {},
    securityRequirements: auth.bearer ? [{ schemes: { bearer: { list: [] } } }] : [],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: settings.skills
      .filter((s) => wanted === null || wanted.has(s.id))
      .map((s) => ({
        id: s.id,
        name: s.name,
        description: s.description,
        tags: s.tags,
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      })),
    signatures: [],
  };
}

/** Adds the A2A routes to the gateway (before it listens). */
export function registerA2a(app: FastifyInstance, options: A2aRouteOptions): void {
  const { settings } = options;
  const guard = new WebhookGuard({ allowHosts: settings.push?.allowHosts ?? [] });
  const handlers = new Map<
    string,
    { handler: DefaultRequestHandler; transport: JsonRpcTransportHandler; legacy: LegacyJsonRpcTransportHandler }
  >();
  // Built on first use: the card names the gateway's URL, known only once it listens.
  const served = (id: string) => {
    const agent = settings.agents.find((a) => a.id === id);
    if (!agent) return null;
    let entry = handlers.get(id);
    if (!entry) {
      const executor = new SessionAgentExecutor({
        client: options.client,
        agent,
        ...(options.feed ? { feed: options.feed } : {}),
      });
      const pushStore = new GuardedPushStore(guard);
      const handler = new DefaultRequestHandler(
        agentCard(agent, options),
        new InMemoryTaskStore(),
        executor,
        undefined,
        pushStore,
        new GuardedPushSender(pushStore, guard, options.log),
      );
      entry = {
        handler,
        transport: new JsonRpcTransportHandler(handler),
        legacy: new LegacyJsonRpcTransportHandler(handler),
      };
      handlers.set(id, entry);
    }
    return entry;
  };
  const card = async (id: string) => AgentCard.toJSON(await served(id)!.handler.getAgentCard());
  const first = settings.agents[0];
  if (first) app.get(`/${AGENT_CARD_PATH}`, { schema: { hide: true } }, () => card(first.id));
  app.get<{ Params: { agent: string } }>(
    `/a2a/:agent/${AGENT_CARD_PATH}`,
    { schema: { hide: true } },
    (request, reply) =>
      served(request.params.agent) ? card(request.params.agent) : reply.code(404).send({ error: 'no such A2A agent' }),
  );

  app.post<{ Params: { agent: string }; Body: unknown }>(
    '/a2a/:agent',
    {
      config: { permission: 'send' },
      schema: {
        summary:
          'A2A JSON-RPC 2.0 endpoint of one agent (a kind of Session); its card is at /a2a/{agent}/.well-known/agent-card.json',
      },
    },
    async (request, reply) => {
      const entry = served(request.params.agent);
      if (!entry) return reply.code(404).send({ error: 'no such A2A agent' });
      const body = request.body as { id?: unknown } | undefined;
      const id = typeof body?.id === 'string' || typeof body?.id === 'number' ? body.id : null;
      const principal = request.principal!;
      const version = header(request, A2A_VERSION_HEADER);
      const context = new ServerCallContext({
        user: new PrincipalUser(principal),
        ...(version ? { requestedVersion: version } : {}),
      });
      // As the SDK's Express handler decides: a request that names no version speaks 0.3.
      const legacy = (version ?? A2A_LEGACY_PROTOCOL_VERSION) === A2A_LEGACY_PROTOCOL_VERSION;
      const fail = (error: unknown) => ({
        jsonrpc: '2.0',
        id,
        error: legacy
          ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error)
          : JsonRpcTransportHandler.mapToJSONRPCError(error),
      });
      let answer: Awaited<ReturnType<JsonRpcTransportHandler['handle'] | LegacyJsonRpcTransportHandler['handle']>>;
      try {
        validateVersion(context.requestedVersion, await entry.handler.getAgentCard(), 'JSONRPC');
        const body = request.body as Record<string, unknown>;
        answer = await (legacy ? entry.legacy.handle(body, context) : entry.transport.handle(body, context));
      } catch (error) {
        return reply.code(200).send(fail(error));
      }
      if (!(Symbol.asyncIterator in answer)) return reply.code(200).send(answer);
      const stream = answer;
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      request.raw.on('close', () => void stream.return(undefined));
      try {
        for await (const event of stream) res.write(`data: ${JSON.stringify(event)}\n\n`);
      } catch (error) {
        options.log(`gateway: A2A stream of ${request.params.agent} ended: ${(error as Error).message}`);
        res.write(`event: error\ndata: ${JSON.stringify(fail(error))}\n\n`);
      } finally {
        res.end();
      }
    },
  );
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return (Array.isArray(value) ? value[0] : value) || undefined;
}
