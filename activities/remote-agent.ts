/**
 * Remote A2A agents as sub-sessions: the worker's configuration (`HARNESS_A2A_REMOTE_AGENTS`, with
 * `HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS`) and the `callRemoteAgent` activity, which sends one
 * `session_create_sub` request to a configured agent with `@a2a-js/sdk`'s client and waits for its
 * answer.
 *
 * - The message id is `<sessionId>:<seq>:<callId>`, so every attempt of one call sends the same message.
 * - The send returns at once (`returnImmediately`); the task id is heartbeated, and a retried attempt
 *   that finds it polls that task instead of sending again.
 * - It waits, polling and heartbeating, until the task is terminal or `input-required`, bounded by the
 *   activity's start-to-close timeout (the Session's `toolTimeoutMs`).
 * - Every request (card, JSON-RPC, wherever the card points) goes through {@link guardedFetch}: http(s)
 *   only, no user name or password, and a host that is public (contract/url-hosts.ts), each address a
 *   name resolves to included, unless `HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS` names it. The bearer token goes
 *   only to the configured URL's origin.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Context } from '@temporalio/activity';
import { Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { z } from 'zod';
import { canonicalHost, nonPublicReason, normaliseHost } from '../contract/url-hosts.js';
import { clipToolOutput } from '../contract/transcript.js';
import type { CallRemoteAgentRequest, RunToolResult } from '../contract/activity-contract.js';
import type { ActivityDeps } from './deps.js';

/** One configured remote agent, as `HARNESS_A2A_REMOTE_AGENTS` declares it. */
export const RemoteAgentEntry = z
  .object({
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL of the agent card or the agent' }),
    tokenEnv: z.string().trim().min(1).optional(),
    description: z.string().trim().max(500).optional(),
  })
  .strict();

/** `HARNESS_A2A_REMOTE_AGENTS`: agent names (as the model passes them) to their entries. */
export const RemoteAgentsEnv = z.record(
  z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, { error: 'an agent name is letters, digits, _ . - (≤ 64)' }),
  RemoteAgentEntry,
);

/** A configured agent the worker can call: its token read from the environment at start. */
export interface RemoteAgent {
  name: string;
  url: string;
  description?: string;
  token?: string;
}

/** The worker's remote agents and the hosts let through although not public. */
export interface RemoteAgents {
  agents: Record<string, RemoteAgent>;
  allowHosts: string[];
  /** Between polls of a task that is still working; default 500 ms. */
  pollMs?: number;
}

/** A bad `HARNESS_A2A_REMOTE_AGENTS*` value; the message names the variable. */
export class RemoteAgentsConfigError extends Error {
  override name = 'RemoteAgentsConfigError';
}

/** Parses `HARNESS_A2A_REMOTE_AGENTS` and `HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS`; throws RemoteAgentsConfigError. */
export function parseRemoteAgents(env: NodeJS.ProcessEnv): RemoteAgents {
  const raw = env.HARNESS_A2A_REMOTE_AGENTS?.trim() ?? '';
  const allowHosts = (env.HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h.length > 0);
  const badHost = allowHosts.find((h) => canonicalHost(h) === null);
  if (badHost !== undefined) {
    throw new RemoteAgentsConfigError(
      `HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS: ${JSON.stringify(badHost)} is not a host name or address`,
    );
  }
  if (raw === '') return { agents: {}, allowHosts };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new RemoteAgentsConfigError(`HARNESS_A2A_REMOTE_AGENTS: not JSON (${(err as Error).message})`);
  }
  const parsed = RemoteAgentsEnv.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(value)'}: ${i.message}`);
    throw new RemoteAgentsConfigError(`HARNESS_A2A_REMOTE_AGENTS: ${problems.join('; ')}`);
  }
  const allowed = allowSet(allowHosts);
  const agents: Record<string, RemoteAgent> = {};
  for (const [name, entry] of Object.entries(parsed.data)) {
    const url = new URL(entry.url);
    if (url.username || url.password) {
      throw new RemoteAgentsConfigError(
        `HARNESS_A2A_REMOTE_AGENTS: ${name}.url has a user name or password (use tokenEnv)`,
      );
    }
    const reason = hostRefusal(url.hostname, allowed);
    if (reason) throw new RemoteAgentsConfigError(`HARNESS_A2A_REMOTE_AGENTS: ${name}.url: ${reason}`);
    let token: string | undefined;
    if (entry.tokenEnv) {
      token = env[entry.tokenEnv]?.trim();
      if (!token) {
        throw new RemoteAgentsConfigError(
          `HARNESS_A2A_REMOTE_AGENTS: ${name}.tokenEnv names ${entry.tokenEnv}, which is unset`,
        );
      }
    }
    agents[name] = {
      name,
      url: entry.url,
      ...(entry.description ? { description: entry.description } : {}),
      ...(token ? { token } : {}),
    };
  }
  return { agents, allowHosts };
}

function allowSet(hosts: readonly string[]): Set<string> {
  return new Set(hosts.map((h) => canonicalHost(h) ?? normaliseHost(h)));
}

/** Why a host (as written) may not be called, or null: it is allowed by name, or may be public. */
function hostRefusal(host: string, allowed: Set<string>): string | null {
  if (allowed.has(canonicalHost(host) ?? normaliseHost(host))) return null;
  const reason = nonPublicReason(host);
  return reason ? `${reason} (HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS lets a named host through)` : null;
}

/** A request the guard refused; the call's tool error says why. */
export class RemoteAgentRefusal extends Error {
  override name = 'RemoteAgentRefusal';
}

/**
 * `fetch` for the SDK's client: every URL checked as the module comment says, and the token only on
 * requests to `tokenOrigin`.
 */
export function guardedFetch(
  remote: Pick<RemoteAgents, 'allowHosts'>,
  agent: Pick<RemoteAgent, 'url' | 'token'>,
  resolve: (host: string) => Promise<Array<{ address: string }>> = (host) => dnsLookup(host, { all: true }),
): typeof fetch {
  const allowed = allowSet(remote.allowHosts);
  const tokenOrigin = new URL(agent.url).origin;
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new RemoteAgentRefusal(`the scheme ${url.protocol} is not http: or https:`);
    }
    if (url.username || url.password) throw new RemoteAgentRefusal('a URL with a user name or password is refused');
    const host = normaliseHost(url.hostname);
    const literal = hostRefusal(host, allowed);
    if (literal) throw new RemoteAgentRefusal(literal);
    // A name (not an address, not allowed): each address it resolves to must be public as well.
    if (!allowed.has(canonicalHost(host) ?? host) && isIP(canonicalHost(host) ?? host) === 0) {
      let addresses: Array<{ address: string }>;
      try {
        addresses = await resolve(host);
      } catch (err) {
        throw new RemoteAgentRefusal(
          `${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
        );
      }
      for (const { address } of addresses) {
        const reason = nonPublicReason(address);
        if (reason) throw new RemoteAgentRefusal(`${host} resolves to ${address}: ${reason}`);
      }
    }
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    if (agent.token && url.origin === tokenOrigin) headers.set('authorization', `Bearer ${agent.token}`);
    else headers.delete('authorization');
    return fetch(input instanceof Request ? input.url : url, { ...init, headers, redirect: 'error' });
  };
}

/** The card's base and path for `createFromUrl`: a URL ending in `.json` is the card itself. */
function cardLocation(url: string): [string, string | undefined] {
  return new URL(url).pathname.endsWith('.json') ? [url, ''] : [url.replace(/\/+$/, ''), undefined];
}

const text = (value: string): Part => ({
  content: { $case: 'text', value },
  mediaType: 'text/plain',
  filename: '',
  metadata: {},
});

function partsText(parts: readonly Part[] | undefined): string {
  return (parts ?? []).flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n');
}

/** A task's answer: its artifacts' text, else its status message's. */
function taskText(task: Task): string {
  const artifacts = task.artifacts.map((a) => partsText(a.parts)).filter((t) => t.length > 0);
  return artifacts.length > 0 ? artifacts.join('\n') : partsText(task.status?.message?.parts);
}

const TERMINAL = new Set<TaskState>([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

const STATE_WORDS: Partial<Record<TaskState, string>> = {
  [TaskState.TASK_STATE_COMPLETED]: 'completed',
  [TaskState.TASK_STATE_FAILED]: 'failed',
  [TaskState.TASK_STATE_CANCELED]: 'canceled',
  [TaskState.TASK_STATE_REJECTED]: 'rejected',
  [TaskState.TASK_STATE_INPUT_REQUIRED]: 'input-required',
  [TaskState.TASK_STATE_AUTH_REQUIRED]: 'auth-required',
};

/** The message id of one call: the same for every attempt. */
export function remoteMessageId(request: Pick<CallRemoteAgentRequest, 'sessionId' | 'seq' | 'callId'>): string {
  return `${request.sessionId}:${request.seq}:${request.callId}`;
}

/** How long a cancelled call waits for the remote agent to take its CancelTask. */
const CANCEL_TIMEOUT_MS = 5_000;

/**
 * Asks the remote agent to cancel a task this call no longer waits for (A2A `CancelTask`). Best
 * effort: an agent that refuses (the task ended meanwhile, or it cannot cancel) or does not answer
 * in CANCEL_TIMEOUT_MS changes nothing for the Session, whose call is cancelled either way.
 */
async function cancelRemoteTask(client: Client, id: string): Promise<void> {
  try {
    await client.cancelTask({ tenant: '', id, metadata: {} }, { signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS) });
  } catch {
    // See above: the cancellation of the Session's call does not depend on it.
  }
}

/** The `callRemoteAgent` activity; see the module comment. */
export async function callRemoteAgent(deps: ActivityDeps, request: CallRemoteAgentRequest): Promise<RunToolResult> {
  const remote = deps.remoteAgents;
  const agent = remote?.agents[request.agent];
  if (!remote || !agent) {
    const names = Object.keys(remote?.agents ?? {});
    return {
      output: `session_create_sub: no remote agent named ${JSON.stringify(request.agent)} is configured${names.length ? ` (configured: ${names.join(', ')})` : ''}`,
      isError: true,
    };
  }
  const ctx = Context.current();
  const fetchImpl = guardedFetch(remote, agent);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      clientConfig: { polling: true },
    }),
  );
  const signal = ctx.cancellationSignal;
  let client: Client | undefined;
  let task: Task | undefined;
  try {
    client = await factory.createFromUrl(...cardLocation(agent.url));
    const earlier = ctx.info.heartbeatDetails as { taskId?: unknown } | undefined;
    if (typeof earlier?.taskId === 'string' && earlier.taskId !== '') {
      // An earlier attempt sent the message: follow its task, never send again.
      task = await client.getTask({ tenant: '', id: earlier.taskId }, { signal });
    } else {
      const message: Message = {
        messageId: remoteMessageId(request),
        contextId: '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [text(request.text)],
        metadata: {},
        extensions: [],
        referenceTaskIds: [],
      };
      const sent = await client.sendMessage(
        {
          tenant: '',
          message,
          configuration: {
            acceptedOutputModes: ['text/plain'],
            taskPushNotificationConfig: undefined,
            returnImmediately: true,
          },
          metadata: {},
        },
        { signal },
      );
      if (!('status' in sent)) return { output: clipToolOutput(partsText(sent.parts)), isError: false };
      task = sent;
    }
    ctx.heartbeat({ taskId: task.id });
    const pollMs = remote.pollMs ?? 500;
    while (!TERMINAL.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) {
      await ctx.sleep(pollMs);
      ctx.heartbeat({ taskId: task.id });
      task = await client.getTask({ tenant: '', id: task.id }, { signal });
    }
    const state = task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED;
    const answer = taskText(task);
    if (state === TaskState.TASK_STATE_COMPLETED) return { output: clipToolOutput(answer), isError: false };
    return {
      output: clipToolOutput(
        `the remote agent ${agent.name} ended the task ${STATE_WORDS[state] ?? String(state)}: ${answer}`,
      ),
      isError: state !== TaskState.TASK_STATE_INPUT_REQUIRED && state !== TaskState.TASK_STATE_AUTH_REQUIRED,
    };
  } catch (err) {
    // The turn was interrupted (or the Session's tool call cancelled): the remote agent is told to
    // stop too, instead of working on for nobody.
    if (signal.aborted && client && task && !TERMINAL.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) {
      await cancelRemoteTask(client, task.id);
    }
    if (err instanceof RemoteAgentRefusal || (err as Error).cause instanceof RemoteAgentRefusal) {
      const refusal = err instanceof RemoteAgentRefusal ? err : ((err as Error).cause as RemoteAgentRefusal);
      return { output: `session_create_sub: the call to ${agent.name} was refused: ${refusal.message}`, isError: true };
    }
    throw err;
  }
}
