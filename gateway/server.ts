/**
 * The HTTP gateway (`npm run gateway`, and inside `npm start`): Server-Sent Events of a Session's
 * events (`GET /sessions/:id/events`, resuming from `Last-Event-ID`), JSON endpoints to send, approve,
 * reject and answer external tool calls, the approval inbox page, and an OpenAPI document of all of
 * it (`GET /openapi.json`). It is a SessionClient behind HTTP: every write is the same signal or
 * update the client library sends, so the Session records and de-duplicates it the same way.
 *
 * Every request passes the guards first (guards.ts: Host allow-list, no cross-site browser request,
 * JSON POST bodies), then is authenticated to a principal (auth.ts: a bearer token from the token
 * file, a JWT, or the single shared token; `?access_token=` where a browser's EventSource cannot set
 * headers) whose permissions decide what it may do. The gateway acts as that principal: a message's
 * `from` and an answer's `approver` are the principal's name, never what the body says. It binds to
 * loopback by default; put it behind your TLS proxy to expose it.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import { z } from 'zod';
import {
  ApprovalRefusedError,
  InvalidInputError,
  SessionClientError,
  SessionNotFoundError,
  ToolResultRefusedError,
  type MessageDraft,
  type SessionClient,
} from '../client/index.js';
import { EventsPage, SessionEvent, type EventFeed } from '../contract/events.js';
import { ApprovalInput, MessageInput, ToolResultInput } from '../contract/messages.js';
import { FAILURE, harnessFailureOf, type FailureType } from '../contract/failures.js';
import { SessionView } from '../contract/queries.js';
import { followAgUi, runAgUi } from './ag-ui.js';
import { AnsweredTrail } from './answered.js';
import type { A2aSettings } from './a2a/config.js';
import { registerA2a } from './a2a/routes.js';
import {
  ForbiddenError,
  NotAuthenticatedError,
  makeAuthenticator,
  may,
  type JwtSettings,
  type Permission,
  type Principal,
  type TokenFile,
} from './auth.js';
import { StreamLimiter, defaultHosts, makeGuard } from './guards.js';
import { registerInbox, type InboxTestHooks } from './inbox.js';
import { JoiningStream, SessionLogs } from './session-logs.js';
import { sessionWaitMs, whenSessionExists } from './session-wait.js';

export interface GatewayOptions {
  client: SessionClient;
  /** Live events (the worker's publisher in-process, or PostgreSQL); without one SSE reads the log every second. */
  feed?: EventFeed;
  /** The single shared bearer token: one principal (`tokenPrincipal`, default `operator`) with every permission. */
  token?: string | null;
  tokenPrincipal?: string;
  /** Tokens of named principals with their permissions (HARNESS_GATEWAY_TOKENS_FILE, parsed). */
  tokens?: TokenFile;
  /** Bearer JWTs verified against a JWKS (the OIDC path). */
  jwt?: JwtSettings;
  /** Serve without authentication: every caller is `anonymous` with every permission. */
  insecureNoToken?: boolean;
  host?: string;
  port?: number;
  /** `Host` header values accepted (default: localhost, 127.0.0.1, [::1] and the bound address, with the port). */
  allowedHosts?: readonly string[];
  /** Browser origins allowed besides the gateway's own. */
  allowedOrigins?: readonly string[];
  /** Open event streams (events and inbox changes) one principal may hold (default 20; 429 beyond). */
  maxStreamsPerPrincipal?: number;
  /** Comment lines SSE streams send while idle, so proxies keep them open (ms; default 15,000). */
  heartbeatMs?: number;
  log?: (line: string) => void;
  /** Serve these A2A agents (gateway/a2a/); absent: no A2A routes. */
  a2a?: A2aSettings;
  /** Tests only (a deterministic visibility lag for the inbox); never set in a deployment. */
  inboxTestHooks?: InboxTestHooks;
}

export interface Gateway {
  url: string;
  app: FastifyInstance;
  /** Shared log readers running now: one per Session with open event streams. */
  readers(): number;
  close(): Promise<void>;
}

/** Open event streams per principal when not configured. */
export const DEFAULT_MAX_STREAMS = 20;

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling, set by the authentication hook. */
    principal?: Principal;
  }
  interface FastifyContextConfig {
    /** What the route needs; routes without one (health, OpenAPI) are public. */
    permission?: Permission;
  }
}

/** The request's principal; only routes behind the authentication hook call it. */
function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new NotAuthenticatedError('not authenticated');
  return request.principal;
}

/**
 * An approval as the gateway takes it: the Session's ApprovalInput without the id, which is in the
 * path. `arguments` (approve only) may be the JSON object itself or its text.
 */
const ApprovalBody = ApprovalInput.omit({ approvalId: true, approved: true, signature: true })
  .partial()
  .extend({
    approver: ApprovalInput.shape.approver.describe(
      "Optional, and only ever the caller's own principal name: the gateway records the authenticated principal as the approver, and refuses (403) a body that names anyone else.",
    ),
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
const ToolResultBody = z
  .object({
    output: z.unknown(),
    isError: ToolResultInput.shape.isError,
    /** The waiting call's `<seq>:<step>:<callId>`; when absent the call waiting now under the path's callId. */
    resultId: ToolResultInput.shape.resultId,
  })
  .strict();
const MessageBody = MessageInput.partial({ messageId: true });

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'any' });

/** Starts the gateway; resolves once it listens. */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const authenticate = makeAuthenticator({
    ...(options.token ? { token: options.token } : {}),
    ...(options.tokenPrincipal ? { tokenPrincipal: options.tokenPrincipal } : {}),
    ...(options.tokens ? { tokenFile: options.tokens } : {}),
    ...(options.jwt ? { jwt: options.jwt } : {}),
    ...(options.insecureNoToken ? { insecureNoToken: true } : {}),
  });
  const { client } = options;
  const log = options.log ?? (() => {});
  const host = options.host ?? '127.0.0.1';
  // The Host allow-list needs the port, known only once listening when port 0 picked one.
  let guard: ReturnType<typeof makeGuard> = () => ({ status: 503, error: 'starting' });
  const limiter = new StreamLimiter(options.maxStreamsPerPrincipal ?? DEFAULT_MAX_STREAMS);
  const logs = new SessionLogs((sessionId, follow) =>
    client.events(sessionId, { ...follow, ...(options.feed ? { feed: options.feed } : {}) }),
  );
  const trail = new AnsweredTrail((sessionId, after) => client.eventsAfter(sessionId, after));
  /** The client answering as a principal: its name is the approver the Session records. */
  const actingAs = (principal: Principal) => client.as(principal.name);
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
    // In every mode, before anything else: a rebinding Host, a cross-site browser request, a non-JSON POST.
    const refused = guard(request.method, request.headers);
    if (refused) return reply.code(refused.status).send({ error: refused.error });
    const permission = request.routeOptions.config.permission;
    if (permission === undefined) return;
    const header = request.headers.authorization;
    const query = request.query as Record<string, unknown>;
    const given =
      header?.startsWith('Bearer ') === true
        ? header.slice(7)
        : typeof query.access_token === 'string'
          ? query.access_token
          : '';
    try {
      request.principal = await authenticate(given);
    } catch (err) {
      if (!(err instanceof NotAuthenticatedError)) throw err;
      return reply.code(401).header('www-authenticate', 'Bearer').send({ error: err.message });
    }
    if (!may(request.principal, permission)) {
      return reply.code(403).send({ error: `${request.principal.name} does not have the "${permission}" permission` });
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
    {
      config: { permission: 'events' },
      schema: { summary: "A Session's snapshot", response: { 200: json(SessionView) } },
    },
    (request) => client.snapshot(request.params.id),
  );

  app.post<{ Params: { id: string }; Body: unknown }>(
    '/sessions/:id/messages',
    {
      config: { permission: 'send' },
      schema: {
        summary: 'Send a task input (creates the Session if new); returns its seq once recorded',
        description:
          'The message\'s `from` is the authenticated principal (`{kind: "user", id: <principal>}`); a body whose `from` names anyone else is refused with 403.',
        body: json(MessageBody),
      },
    },
    // The client library checks the message against the contract (InvalidInputError → 400).
    (request) => {
      const draft = { ...((request.body ?? {}) as MessageDraft) };
      draft.from = senderOf(principalOf(request), draft.from);
      if (draft.from === undefined) delete draft.from;
      return client.submit(request.params.id, draft);
    },
  );

  const answer = (approved: boolean) => async (request: FastifyRequest<{ Params: Record<string, string> }>) => {
    const { id, approvalId } = request.params as { id: string; approvalId: string };
    const principal = principalOf(request);
    const body = parseBody(ApprovalBody, request.body ?? {});
    if (!approved && body.arguments !== undefined) {
      throw new InvalidInputError('arguments: only an approval can edit the arguments', [
        { field: 'arguments', message: 'only an approval can edit the arguments' },
      ]);
    }
    if (body.approver !== undefined && body.approver.trim() !== principal.name) {
      throw new ForbiddenError(
        `approver: you are authenticated as ${JSON.stringify(principal.name)}; an answer cannot name ${JSON.stringify(body.approver)}`,
      );
    }
    const { approver: _named, ...rest } = body;
    const as = actingAs(principal);
    trail.follow(id);
    // By update: a refused answer is a 400 with the Session's reason, never a silent 200.
    await (approved ? as.approve(id, approvalId, rest) : as.reject(id, approvalId, rest));
    return { applied: true, approvalId, approved, by: principal.name };
  };
  const approvalSchema = (summary: string) => ({
    config: { permission: 'approve' as const },
    schema: { summary, body: json(ApprovalBody) },
  });
  app.post(
    '/sessions/:id/approvals/:approvalId/approve',
    approvalSchema(
      'Approve one waiting call as the authenticated principal, optionally with edited arguments; answers once the Session applied it (400 with the reason when refused)',
    ),
    answer(true),
  );
  app.post(
    '/sessions/:id/approvals/:approvalId/reject',
    approvalSchema(
      'Reject one waiting call as the authenticated principal; answers once the Session applied it (400 with the reason when refused)',
    ),
    answer(false),
  );

  app.post<{ Params: { id: string; callId: string }; Body: unknown }>(
    '/sessions/:id/tool-results/:callId',
    {
      config: { permission: 'approve' },
      schema: {
        summary:
          'Answer an external tool call; answers once the result reached the waiting call (400 with the reason when refused)',
        body: json(ToolResultBody),
      },
    },
    async (request) => {
      const body = parseBody(ToolResultBody, request.body ?? {});
      await client.toolResult(request.params.id, { ...body, callId: request.params.callId });
      return { applied: true, callId: request.params.callId };
    },
  );

  app.get<{ Params: { id: string }; Querystring: { after?: string; wait?: string } }>(
    // ?after=now starts at the newest event.
    '/sessions/:id/events',
    {
      config: { permission: 'events' },
      schema: {
        summary: "A Session's events as Server-Sent Events; resumes after Last-Event-ID (or ?after=)",
        description: `Each message's data is one event (${json(SessionEvent).title ?? 'SessionEvent'}). Durable events carry their id; agent.delta events carry none and are best effort. An \`event: gap\` message says the bounded log dropped events you never saw. With \`?after=now\` the stream opens with an \`event: head\` message whose data is \`{"id"}\` of the newest event it skips. The page of the log is also at GET /sessions/{id}/events.json. A Session that does not exist yet is waited for (\`?wait=\` ms, default 30,000) instead of a 404, and its stream then starts with its first event.`,
      },
    },
    (request, reply) => streamEvents(request, reply, { options, log, limiter, logs }),
  );

  const agUi = {
    client,
    ...(options.feed ? { feed: options.feed } : {}),
    log,
    senderOf: (principal: Principal) => senderOf(principal, undefined),
    heartbeatMs: options.heartbeatMs ?? 15_000,
  };
  app.post(
    '/ag-ui',
    {
      config: { permission: 'send' },
      schema: {
        summary:
          "Run an AG-UI RunAgentInput: threadId is the Session id, the last user message's text is sent as the authenticated principal; answers that input's run as an AG-UI event stream (SSE)",
        description:
          'A call waiting for approval ends the run with the `interrupt` outcome (interrupt id = approvalId); a run whose `resume` entries answer it (`{approved, note?, arguments?}`, needs the `approve` permission) goes on with the turn. A body that is not a RunAgentInput is a 400 with the reason. Mapping: docs/contract.md.',
      },
    },
    (request, reply) =>
      withStream(request, reply, limiter, (release) =>
        runAgUi(request, reply, principalOf(request), agUi).finally(release),
      ),
  );

  app.get<{ Params: { id: string }; Querystring: { after?: string; wait?: string } }>(
    '/sessions/:id/ag-ui',
    {
      config: { permission: 'events' },
      schema: {
        summary:
          "A Session's events as an AG-UI event stream (SSE): a run per input, from the newest event (or ?after=<id>)",
        description:
          'A Session that does not exist yet is waited for (`?wait=` ms, default 30,000) and then followed from its first event. Mapping: docs/contract.md.',
      },
    },
    (request, reply) =>
      withStream(request, reply, limiter, async (release) => {
        try {
          const asked = request.query.after;
          const { value: head, waited } = await untilSessionExists(request, options, () =>
            client.eventsAfter(request.params.id, asked === undefined || asked === 'now' ? undefined : asked, 1),
          );
          const after = waited
            ? undefined
            : asked === undefined || asked === 'now'
              ? (head.lastId ?? undefined)
              : asked;
          await followAgUi(request, reply, request.params.id, after, agUi);
        } finally {
          release();
        }
      }),
  );

  app.get<{ Params: { id: string }; Querystring: { after?: string } }>(
    '/sessions/:id/events.json',
    {
      config: { permission: 'events' },
      schema: { summary: 'One page of the durable event log after an id', response: { 200: json(EventsPage) } },
    },
    (request) => client.eventsAfter(request.params.id, request.query.after),
  );

  registerInbox(app, {
    client,
    ...(options.feed ? { feed: options.feed } : {}),
    trail,
    limiter,
    ...(options.heartbeatMs !== undefined ? { heartbeatMs: options.heartbeatMs } : {}),
    ...(options.inboxTestHooks ? { testHooks: options.inboxTestHooks } : {}),
  });

  let address = '';
  if (options.a2a) {
    registerA2a(app, {
      client,
      ...(options.feed ? { feed: options.feed } : {}),
      settings: options.a2a,
      auth: { bearer: Boolean(options.token || options.tokens || options.jwt), jwt: Boolean(options.jwt) },
      baseUrl: () => address,
      log,
    });
  }

  await app.ready();
  address = await app.listen({ host, port: options.port ?? 0 });
  const port = Number(new URL(address).port);
  guard = makeGuard({
    allowedHosts: options.allowedHosts ?? defaultHosts(host, port),
    ...(options.allowedOrigins ? { allowedOrigins: options.allowedOrigins } : {}),
  });
  return {
    url: address,
    app,
    readers: () => logs.size,
    close: () => app.close(),
  };
}

/**
 * The `from` of a message a principal sends: always the principal as a user (none for the no-token
 * principal). A body that names the same user is accepted as it is; one that names anyone else, or
 * claims to be a Session, is refused: only a worker hands over between Sessions.
 */
function senderOf(principal: Principal, claimed: MessageDraft['from']): MessageDraft['from'] {
  const own = principal.anonymous ? undefined : { kind: 'user' as const, id: principal.name };
  if (claimed === undefined || claimed === null) return own;
  if (own !== undefined && claimed.kind === 'user' && claimed.id?.trim() === principal.name) return own;
  throw new ForbiddenError(
    `from: you are authenticated as ${principal.anonymous ? 'no one (no-token mode)' : JSON.stringify(principal.name)}; a message cannot claim to be from ${JSON.stringify(claimed)}`,
  );
}

interface StreamContext {
  options: GatewayOptions;
  log: (line: string) => void;
  limiter: StreamLimiter;
  logs: SessionLogs;
}

/** Runs a stream route within the principal's open-stream limit (429 beyond it); `run` releases its place. */
async function withStream(
  request: FastifyRequest,
  reply: FastifyReply,
  limiter: StreamLimiter,
  run: (release: () => void) => Promise<void>,
): Promise<void> {
  const principal = principalOf(request);
  const release = limiter.acquire(principal.name);
  if (!release) {
    await reply
      .code(429)
      .send({ error: `${principal.name} has ${limiter.maxPerPrincipal} event streams open already; close one first` });
    return;
  }
  await run(release);
}

async function streamEvents(
  request: FastifyRequest<{ Params: { id: string }; Querystring: { after?: string; wait?: string } }>,
  reply: FastifyReply,
  { options, log, limiter, logs }: StreamContext,
): Promise<void> {
  const principal = principalOf(request);
  const release = limiter.acquire(principal.name);
  if (!release) {
    await reply
      .code(429)
      .send({ error: `${principal.name} has ${limiter.maxPerPrincipal} event streams open already; close one first` });
    return;
  }
  let handedOver = false;
  try {
    const lastEventId = request.headers['last-event-id'];
    const asked = (typeof lastEventId === 'string' && lastEventId) || request.query.after;
    // Check the Session and the id before the stream starts, so a bad request is a plain HTTP error;
    // a Session that does not exist yet is waited for (session-wait.ts), so the stream has its start.
    const { value: head, waited } = await untilSessionExists(request, options, () =>
      options.client.eventsAfter(request.params.id, asked === 'now' ? undefined : asked, 1),
    );
    // `after=now`: only what happens from here on (a live feed for a follower that reads the log itself);
    // for a Session that appeared during the wait, "now" is its start.
    const after = asked === 'now' ? (waited ? undefined : (head.lastId ?? undefined)) : asked;
    reply.hijack();
    handedOver = true;
    writeEvents(request, reply, { options, log, logs }, after, asked === 'now', release);
  } finally {
    if (!handedOver) release();
  }
}

/** Runs `read` once the request's Session exists, waiting for it as `?wait=` says (session-wait.ts). */
export async function untilSessionExists<T>(
  request: FastifyRequest<{ Params: { id: string }; Querystring: { wait?: string } }>,
  options: Pick<GatewayOptions, 'feed'>,
  read: () => Promise<T>,
): Promise<{ value: T; waited: boolean }> {
  const gone = new AbortController();
  const onClose = () => gone.abort();
  request.raw.once('close', onClose);
  try {
    return await whenSessionExists(request.params.id, read, {
      waitMs: sessionWaitMs(request.query.wait),
      signal: gone.signal,
      ...(options.feed ? { feed: options.feed } : {}),
    });
  } finally {
    request.raw.off('close', onClose);
  }
}

/** Writes the stream: its own catch-up from `after`, then the Session's shared reader. */
function writeEvents(
  request: FastifyRequest<{ Params: { id: string } }>,
  reply: FastifyReply,
  { options, log, logs }: Omit<StreamContext, 'limiter'>,
  after: string | undefined,
  fromNow: boolean,
  release: () => void,
): void {
  const sessionId = request.params.id;
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let open = true;
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), options.heartbeatMs ?? 15_000);
  const finish = () => {
    if (!open) return;
    open = false;
    clearInterval(heartbeat);
    leave();
    release();
    res.end();
  };
  const fail = (err: unknown) => {
    if (!open) return;
    const { message } = describeError(err);
    log(`gateway: event stream of ${sessionId} ended: ${message}`);
    res.write(`event: error\ndata: ${JSON.stringify({ error: message })}\n\n`);
    finish();
  };
  // `after=now` skips what is already in the log: say where "now" is, so a follower that read the log
  // before this stream opened (or before the Session existed) knows to read the rest of it.
  if (fromNow && after) res.write(`event: head\ndata: ${JSON.stringify({ id: after })}\n\n`);
  const stream = new JoiningStream(after, {
    write: (event) => {
      if (!open) return;
      const id = event.kind === 'agent.delta' ? '' : `id: ${event.id}\n`;
      res.write(`${id}data: ${JSON.stringify(event)}\n\n`);
      if (event.kind === 'session.closed') finish();
    },
    gap: () => open && res.write('event: gap\ndata: {}\n\n'),
    end: (error) => (error === null ? finish() : fail(error)),
  });
  // Join first, so nothing the shared reader delivers during the catch-up is lost (it is held).
  const { started, leave } = logs.join(sessionId, after, stream);
  request.raw.on('close', finish);
  // A reader started for this stream begins where it does: nothing to catch up.
  if (started) {
    stream.live();
    return;
  }
  void (async () => {
    let position = after;
    for (let more = true; more && open;) {
      const page = await options.client.eventsAfter(sessionId, position);
      if (page.gap) res.write('event: gap\ndata: {}\n\n');
      for (const event of page.events) {
        if (!stream.caughtUp(event)) return;
        position = event.id;
      }
      more = page.more;
    }
    stream.live(logs.stepSoFar(sessionId));
  })().catch(fail);
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
  if (err instanceof InvalidInputError || err instanceof ApprovalRefusedError || err instanceof ToolResultRefusedError)
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
