/**
 * The approval inbox: `GET /approvals` (every call waiting for approval, the answers the Sessions
 * recorded, and who is asking), `GET /approvals/events` (Server-Sent Events carrying the events that
 * change it, `approval.waiting` itself included, so the page shows a call the moment it waits) and the
 * page `GET /inbox`.
 *
 * Which Sessions wait comes from the visibility list (SessionStage = WaitingApproval), which lags
 * behind the Sessions: a call that just started waiting may be missing from it for a while. So the
 * gateway also keeps the Sessions it heard an `approval.waiting` from on the live feed and reads those
 * Sessions' snapshots (strongly consistent queries) as well, until a snapshot shows nothing waiting.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { SessionClient } from '../client/index.js';
import type { EventFeed, EventHint, SessionEvent } from '../contract/events.js';
import { InboxEntry } from '../contract/queries.js';
import { STAGE } from '../contract/state.js';
import { clip } from '../contract/text.js';
import type { AnsweredTrail } from './answered.js';
import type { StreamLimiter } from './guards.js';

/** Hooks for tests only: never set them in a deployment. */
export interface InboxTestHooks {
  /**
   * While it returns true for a Session, the inbox's visibility list leaves that Session out, as a
   * visibility store that has not caught up yet would: tests make the lag deterministic with it.
   */
  hideFromVisibility?: (sessionId: string) => boolean;
}

export interface InboxOptions {
  client: SessionClient;
  feed?: EventFeed;
  trail: AnsweredTrail;
  limiter: StreamLimiter;
  heartbeatMs?: number;
  testHooks?: InboxTestHooks;
}

/** An answer as the inbox's trail shows it: from the Session's own `tool.approved` / `tool.rejected` events. */
const AnsweredEntry = z.object({
  sessionId: z.string(),
  approvalId: z.string(),
  callId: z.string(),
  tool: z.string(),
  approved: z.boolean(),
  by: z.string().nullable(),
  note: z.string().nullable(),
  at: z.number(),
  editedArguments: z.string().nullable(),
});

const InboxPage = z.object({
  waiting: z.array(InboxEntry),
  answered: z.array(AnsweredEntry),
  /** The principal the gateway authenticated for this request: the approver it records for this page's answers. */
  principal: z.string(),
});

/** Event kinds after which the inbox may have changed. */
const INBOX_KINDS = new Set(['approval.waiting', 'tool.approved', 'tool.rejected', 'turn.finished', 'session.closed']);

/** Sessions heard waiting on the live feed, kept at most this many (oldest forgotten first). */
const MAX_HEARD = 200;

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'any' });

/** Registers the inbox's routes; the gateway's authentication hook guards them with `approve`. */
export function registerInbox(app: FastifyInstance, options: InboxOptions): void {
  const { client, trail } = options;
  /** Sessions an `approval.waiting` was heard from, whatever the visibility list says yet. */
  const heard = new Set<string>();
  const unsubscribe = options.feed?.subscribeAll?.((sessionId, event) => {
    if ('hint' in event || event.kind !== 'approval.waiting') return;
    heard.delete(sessionId);
    heard.add(sessionId);
    if (heard.size > MAX_HEARD) heard.delete(heard.values().next().value as string);
  });
  app.addHook('onClose', (_instance, done) => {
    unsubscribe?.();
    done();
  });

  app.get(
    '/approvals',
    {
      config: { permission: 'approve' },
      schema: {
        summary:
          'Every call waiting for approval across Sessions (the approval inbox), the answers those Sessions recorded (by whom, when), and the authenticated principal',
        response: { 200: json(InboxPage) },
      },
    },
    async (request) => {
      const waiting = await inbox(client, heard, options.testHooks);
      for (const entry of waiting) trail.follow(entry.sessionId);
      return { waiting, answered: await trail.read(), principal: request.principal?.name ?? '' };
    },
  );

  app.get(
    '/approvals/events',
    {
      config: { permission: 'approve' },
      schema: {
        summary:
          'Server-Sent Events that say when the inbox changed (data: {"sessionId","kind","event"?}; `event` is the Session event itself, `approval.waiting` included)',
      },
    },
    (request, reply) => streamInboxChanges(request, reply, options),
  );

  // The page itself holds nothing: it reads /approvals with the token from its address.
  app.get('/inbox', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(inboxPage()),
  );
}

/**
 * Every call waiting for approval: from the Sessions the visibility list says wait, and from those
 * heard waiting on the live feed (read directly, so a lagging list hides none of them). A heard
 * Session whose snapshot shows nothing waiting is forgotten.
 */
export async function inbox(
  client: SessionClient,
  heard: Set<string> = new Set(),
  hooks: InboxTestHooks = {},
): Promise<InboxEntry[]> {
  const listed = await client.list({ stage: STAGE.waitingApproval, status: 'active', limit: 100 });
  const visible = listed.map((s) => s.sessionId).filter((id) => !hooks.hideFromVisibility?.(id));
  const ids = [...new Set([...visible, ...heard])];
  const views = await Promise.all(ids.map((id) => client.snapshot(id).catch(() => null)));
  for (const [i, id] of ids.entries()) {
    if (heard.has(id) && views[i]?.pendingApprovals.length === 0) heard.delete(id);
  }
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

/** What the page gets for an event: the event itself for a waiting call or an answer, else its kind. */
function change(sessionId: string, event: SessionEvent | EventHint): string | null {
  if ('hint' in event) return JSON.stringify({ sessionId, kind: 'hint' });
  if (!INBOX_KINDS.has(event.kind)) return null;
  const carried = event.kind === 'approval.waiting' || event.kind === 'tool.approved' || event.kind === 'tool.rejected';
  return JSON.stringify({ sessionId, kind: event.kind, ...(carried ? { event } : {}) });
}

/** Tells the inbox page what changed: live from the feed, else a `poll` every 2 s. */
function streamInboxChanges(request: FastifyRequest, reply: FastifyReply, options: InboxOptions): void {
  const { limiter } = options;
  const name = request.principal?.name ?? '';
  const release = limiter.acquire(name);
  if (!release) {
    void reply
      .code(429)
      .send({ error: `${name} has ${limiter.maxPerPrincipal} event streams open already; close one first` });
    return;
  }
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.write(': inbox\n\n');
  const unsubscribe = options.feed?.subscribeAll
    ? options.feed.subscribeAll((sessionId, event) => {
        const data = change(sessionId, event);
        if (data !== null) res.write(`data: ${data}\n\n`);
      })
    : undefined;
  const timer = setInterval(
    () => res.write(unsubscribe ? ': keep-alive\n\n' : `data: ${JSON.stringify({ sessionId: '', kind: 'poll' })}\n\n`),
    unsubscribe ? (options.heartbeatMs ?? 15_000) : 2_000,
  );
  request.raw.on('close', () => {
    clearInterval(timer);
    unsubscribe?.();
    release();
    res.end();
  });
}

let page: string | undefined;
function inboxPage(): string {
  page ??= readFileSync(new URL('./inbox.html', import.meta.url), 'utf8');
  return page;
}
