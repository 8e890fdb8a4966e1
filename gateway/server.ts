/**
 * The HTTP gateway (`npm run gateway`, and inside `npm start`): Server-Sent Events of a Session's
 * events (`GET /sessions/:id/events`, resuming from `Last-Event-ID`), JSON endpoints to send, approve,
 * reject and answer external tool calls, the approval inbox page, and an OpenAPI document of all of
 * it (`GET /openapi.json`). It is a SessionClient behind HTTP: every write is the same signal or
 * update the client library sends, so the Session records and de-duplicates it the same way.
 *
 * Auth: a bearer token (`Authorization: Bearer <token>`, or `?access_token=` where a browser's
 * EventSource cannot set headers) unless started with `insecureNoToken`. It binds to loopback by
 * default; put it behind your TLS proxy to expose it.
 */
import { timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import { z } from 'zod';
import {
  ApprovalRefusedError,
  InvalidInputError,
  SessionClientError,
  SessionNotFoundError,
  type MessageDraft,
  type SessionClient,
} from '../client/index.js';
import { EventsPage, SessionEvent, type EventFeed } from '../contract/events.js';
import { ApprovalInput, MessageInput, ToolResultInput } from '../contract/messages.js';
import { FAILURE, harnessFailureOf, type FailureType } from '../contract/failures.js';
import { InboxEntry, SessionView } from '../contract/queries.js';
import { STAGE } from '../contract/state.js';
import { clip } from '../contract/text.js';

export interface GatewayOptions {
  client: SessionClient;
  /** Live events (the worker's publisher in-process, or PostgreSQL); without one SSE reads the log every second. */
  feed?: EventFeed;
  /** The bearer token clients must send; null only with insecureNoToken. */
  token: string | null;
  insecureNoToken?: boolean;
  host?: string;
  port?: number;
  /** Comment lines SSE streams send while idle, so proxies keep them open (ms; default 15,000). */
  heartbeatMs?: number;
  log?: (line: string) => void;
}

export interface Gateway {
  url: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

/**
 * An approval as the gateway takes it: the Session's ApprovalInput without the id, which is in the
 * path. `arguments` (approve only) may be the JSON object itself or its text.
 */
const ApprovalBody = ApprovalInput.omit({ approvalId: true, approved: true })
  .partial()
  .extend({
    arguments: z
      .union([ApprovalInput.shape.arguments.unwrap(), z.record(z.string(), z.unknown())], {
        error: 'arguments must be a JSON object or its text',
      })
      .optional()
      .describe(
        "Approve only: run the call with these arguments instead of the model's. Checked against the tool's input schema and the approval policy; a refused edit answers 400 with the reason and the call keeps waiting.",
      ),
  })
  .strict();
/** A tool result without its call id, which is in the path (the client checks the whole ToolResultInput). */
const ToolResultBody = z.object({ output: z.unknown(), isError: ToolResultInput.shape.isError }).strict();
const MessageBody = MessageInput.partial({ messageId: true });

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'any' });

/** Starts the gateway; resolves once it listens. */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  if (options.token === null && !options.insecureNoToken) {
    throw new Error('the gateway needs a token (HARNESS_GATEWAY_TOKEN) unless started with --insecure-no-token');
  }
  const { client } = options;
  const log = options.log ?? (() => {});
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  // Bodies are checked by the contract's zod schemas in the handlers (the same errors the client
  // library gives); the JSON Schemas on the routes document them in the OpenAPI document.
  app.setValidatorCompiler(() => (data: unknown) => ({ value: data }));
  await app.register(swagger, {
    openapi: {
      info: { title: 'session-harness gateway', version: '1' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });

  app.addHook('onRequest', async (request, reply) => {
    if (options.token === null) return;
    const path = request.url.split('?')[0];
    if (path === '/openapi.json' || path === '/healthz') return;
    const header = request.headers.authorization;
    const given =
      header?.startsWith('Bearer ') === true
        ? header.slice(7)
        : typeof (request.query as Record<string, unknown>).access_token === 'string'
          ? ((request.query as Record<string, unknown>).access_token as string)
          : '';
    if (!sameSecret(given, options.token)) {
      await reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'a valid bearer token is required' });
    }
  });

  app.setErrorHandler(async (err, _request, reply) => {
    const { status, message } = describeError(err);
    if (status >= 500) log(`gateway: ${message}`);
    await reply.code(status).send({ error: message });
  });

  app.get('/healthz', { schema: { hide: true } }, () => ({ ok: true }));

  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());

  app.get<{ Params: { id: string } }>(
    '/sessions/:id',
    { schema: { summary: "A Session's snapshot", response: { 200: json(SessionView) } } },
    (request) => client.snapshot(request.params.id),
  );

  app.post<{ Params: { id: string }; Body: unknown }>(
    '/sessions/:id/messages',
    {
      schema: {
        summary: 'Send a task input (creates the Session if new); returns its seq once recorded',
        body: json(MessageBody),
      },
    },
    // The client library checks the message against the contract (InvalidInputError → 400).
    (request) => client.submit(request.params.id, request.body as MessageDraft),
  );

  const answer = (approved: boolean) => async (request: FastifyRequest<{ Params: Record<string, string> }>) => {
    const { id, approvalId } = request.params as { id: string; approvalId: string };
    const body = parseBody(ApprovalBody, request.body ?? {});
    if (!approved && body.arguments !== undefined) {
      throw new InvalidInputError('arguments: only an approval can edit the arguments', [
        { field: 'arguments', message: 'only an approval can edit the arguments' },
      ]);
    }
    await (approved ? client.approve(id, approvalId, body) : client.reject(id, approvalId, body));
    return { sent: true, approvalId, approved };
  };
  const approvalSchema = (summary: string) => ({ schema: { summary, body: json(ApprovalBody) } });
  app.post(
    '/sessions/:id/approvals/:approvalId/approve',
    approvalSchema('Approve one waiting call, optionally with edited arguments (400 with the reason when refused)'),
    answer(true),
  );
  app.post('/sessions/:id/approvals/:approvalId/reject', approvalSchema('Reject one waiting call'), answer(false));

  app.post<{ Params: { id: string; callId: string }; Body: unknown }>(
    '/sessions/:id/tool-results/:callId',
    { schema: { summary: 'Answer an external tool call', body: json(ToolResultBody) } },
    async (request) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      await client.toolResult(request.params.id, { ...body, callId: request.params.callId } as ToolResultInput);
      return { sent: true, callId: request.params.callId };
    },
  );

  app.get<{ Params: { id: string }; Querystring: { after?: string } }>(
    // ?after=now starts at the newest event.
    '/sessions/:id/events',
    {
      schema: {
        summary: "A Session's events as Server-Sent Events; resumes after Last-Event-ID (or ?after=)",
        description: `Each message's data is one event (${json(SessionEvent).title ?? 'SessionEvent'}). Durable events carry their id; agent.delta events carry none and are best effort. An \`event: gap\` message says the bounded log dropped events you never saw. With \`?after=now\` the stream opens with an \`event: head\` message whose data is \`{"id"}\` of the newest event it skips. The page of the log is also at GET /sessions/{id}/events.json.`,
      },
    },
    (request, reply) => streamEvents(request, reply, options, log),
  );

  app.get<{ Params: { id: string }; Querystring: { after?: string } }>(
    '/sessions/:id/events.json',
    { schema: { summary: 'One page of the durable event log after an id', response: { 200: json(EventsPage) } } },
    (request) => client.eventsAfter(request.params.id, request.query.after),
  );

  app.get(
    '/approvals',
    {
      schema: {
        summary: 'Every call waiting for approval across Sessions (the approval inbox)',
        response: { 200: json(z.object({ waiting: z.array(InboxEntry) })) },
      },
    },
    async () => ({ waiting: await inbox(client) }),
  );

  app.get(
    '/approvals/events',
    { schema: { summary: 'Server-Sent Events that say when the inbox changed (data: {"sessionId","kind"})' } },
    (request, reply) => streamInboxChanges(request, reply, options),
  );

  app.get('/inbox', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(inboxPage()),
  );

  await app.ready();
  const address = await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  return {
    url: address,
    app,
    close: () => app.close(),
  };
}

/** Every call waiting for approval, from the Sessions whose SessionStage says they wait. */
export async function inbox(client: SessionClient): Promise<InboxEntry[]> {
  const waiting = await client.list({ stage: STAGE.waitingApproval, status: 'active', limit: 100 });
  const views = await Promise.all(waiting.map((s) => client.snapshot(s.sessionId).catch(() => null)));
  return views.flatMap((view) =>
    view
      ? view.pendingApprovals.map((call) => ({
          sessionId: view.sessionId,
          goal: view.goals.session ? clip(view.goals.session.text, 300) : null,
          ...call,
        }))
      : [],
  );
}

async function streamEvents(
  request: FastifyRequest<{ Params: { id: string }; Querystring: { after?: string } }>,
  reply: FastifyReply,
  options: GatewayOptions,
  log: (line: string) => void,
): Promise<void> {
  const lastEventId = request.headers['last-event-id'];
  const asked = (typeof lastEventId === 'string' && lastEventId) || request.query.after;
  // Check the Session and the id before the stream starts, so a bad request is a plain HTTP error.
  const head = await options.client.eventsAfter(request.params.id, asked === 'now' ? undefined : asked, 1);
  // `after=now`: only what happens from here on (a live feed for a follower that reads the log itself).
  const after = asked === 'now' ? (head.lastId ?? undefined) : asked;
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const stop = new AbortController();
  request.raw.on('close', () => stop.abort());
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), options.heartbeatMs ?? 15_000);
  // `after=now` skips what is already in the log: say where "now" is, so a follower that read the log
  // before this stream opened (or before the Session existed) knows to read the rest of it.
  if (asked === 'now' && after) res.write(`event: head\ndata: ${JSON.stringify({ id: after })}\n\n`);
  try {
    const events = options.client.events(request.params.id, {
      ...(after ? { after } : {}),
      ...(options.feed ? { feed: options.feed } : {}),
      signal: stop.signal,
      onGap: () => res.write('event: gap\ndata: {}\n\n'),
    });
    for await (const event of events) {
      const id = event.kind === 'agent.delta' ? '' : `id: ${event.id}\n`;
      res.write(`${id}data: ${JSON.stringify(event)}\n\n`);
    }
  } catch (err) {
    if (!stop.signal.aborted) {
      const { message } = describeError(err);
      log(`gateway: event stream of ${request.params.id} ended: ${message}`);
      res.write(`event: error\ndata: ${JSON.stringify({ error: message })}\n\n`);
    }
  } finally {
    clearInterval(heartbeat);
    res.end();
  }
}

/** Event kinds after which the inbox may have changed. */
const INBOX_KINDS = new Set(['approval.waiting', 'tool.approved', 'tool.rejected', 'turn.finished', 'session.closed']);

/** Tells the inbox page when to re-read /approvals: live from the feed, else every 2 s. */
function streamInboxChanges(request: FastifyRequest, reply: FastifyReply, options: GatewayOptions): void {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.write(': inbox\n\n');
  const changed = (sessionId: string, kind: string) => res.write(`data: ${JSON.stringify({ sessionId, kind })}\n\n`);
  const unsubscribe = options.feed?.subscribeAll
    ? options.feed.subscribeAll((sessionId, event) => {
        if ('hint' in event || INBOX_KINDS.has(event.kind)) changed(sessionId, 'hint' in event ? 'hint' : event.kind);
      })
    : undefined;
  const timer = setInterval(
    () => (unsubscribe ? res.write(': keep-alive\n\n') : changed('', 'poll')),
    unsubscribe ? (options.heartbeatMs ?? 15_000) : 2_000,
  );
  request.raw.on('close', () => {
    clearInterval(timer);
    unsubscribe?.();
    res.end();
  });
}

function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ field: i.path.join('.') || '(body)', message: i.message }));
    throw new InvalidInputError(issues.map((i) => `${i.field}: ${i.message}`).join('; '), issues);
  }
  return parsed.data;
}

/** Failure kinds that mean the caller's request was wrong, so the answer is 400, not 500. */
const CALLER_FAULTS: ReadonlySet<FailureType> = new Set([
  FAILURE.InvalidMessage,
  FAILURE.ApprovalRefused,
  FAILURE.InvalidRequest,
]);

function describeError(err: unknown): { status: number; message: string } {
  if (err instanceof InvalidInputError || err instanceof ApprovalRefusedError)
    return { status: 400, message: err.message };
  if (err instanceof SessionNotFoundError) return { status: 404, message: err.message };
  if (err instanceof SessionClientError) return { status: 409, message: err.message };
  const status = (err as { statusCode?: number }).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { status, message: (err as Error).message };
  }
  // A Session's failure that says the request was at fault (an update the workflow refused).
  const failure = harnessFailureOf(err);
  if (failure && CALLER_FAULTS.has(failure.type)) return { status: 400, message: failure.message };
  return { status: 500, message: err instanceof Error ? err.message : String(err) };
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

let page: string | undefined;
function inboxPage(): string {
  page ??= readFileSync(new URL('./inbox.html', import.meta.url), 'utf8');
  return page;
}
