/**
 * Sub-sessions that are remote A2A agents, on a real Temporal server with a real worker: the remote
 * agent is served by `@a2a-js/sdk`'s own server classes (DefaultRequestHandler, an InMemoryTaskStore
 * and an AgentExecutor whose answer is made only from the request's text) on 127.0.0.1, let through
 * with the allow list. The parent's scripted agent knows only its requests: it calls
 * `session_create_sub` with `agent`, and can repeat the remote answer only because it comes back as
 * the call's result. A retried activity follows the task it sent and does not send again; an unknown
 * agent is a tool error the model sees; a non-public URL without the allow list stops the worker's
 * configuration.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../client/index.js';
import { callRemoteAgent, parseRemoteAgents } from '../activities/remote-agent.js';
import type { ActivityDeps } from '../activities/deps.js';
import { ConfigError, loadConfig } from '../worker/config.js';
import { ToolPolicy } from '../capabilities/tool-policy.js';
import { MODEL, scriptedModels, startWorker, waitFor, type TestWorker } from './support/harness.js';
import { ScriptedModelServer, type RecordedRequest, type Reply } from './support/model-server.js';
import { scriptRoles } from './support/scripted-roles.js';
import { forecast, startRemoteAgent, type RemoteAgentServer } from './support/remote-agent.js';

/** What each user message asks the parent's agent to send, and to whom. */
const ASKS: Record<string, { agent: string; text: string }> = {
  'Ask the weather agent whether it rains in Hangzhou on Friday': { agent: 'weather', text: 'Hangzhou rain Friday' },
  'Ask the weather agent about fog in Paris on Monday': { agent: 'weather', text: 'Paris fog Monday' },
  'Ask the tide agent about Brest': { agent: 'tide', text: 'Brest tides' },
  'Ask the weather agent to watch the storm over Lisbon': { agent: 'weather', text: 'Lisbon storm (until cancelled)' },
};
/** Asked of the weather agent twice in one step (call_1, call_2): the per-turn cap counts both. */
const TWICE = 'Ask the weather agent about Oslo and Bergen';

/** The honest parent: it delegates what it is asked to, and repeats what the call's result says. */
function honestParent(req: RecordedRequest): Reply {
  const last = req.messages.at(-1);
  if (last?.role === 'tool') return { content: `The remote agent said: ${last.content}` };
  const newest = req.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
  if (newest === TWICE) {
    const ask = (id: string, text: string) => ({
      id,
      name: 'session_create_sub',
      arguments: { text, agent: 'weather' },
    });
    return { toolCalls: [ask('call_1', 'Oslo snow'), ask('call_2', 'Bergen rain')] };
  }
  const ask = ASKS[newest];
  if (!ask) return { content: `Working on: ${newest}` };
  return { toolCalls: [{ id: 'call_1', name: 'session_create_sub', arguments: ask }] };
}

let server: ScriptedModelServer;
let worker: TestWorker;
let client: SessionClient;
let remote: RemoteAgentServer;
/** The worker's environment for the remote agent, once it listens. */
const REMOTE_ENV = () => ({
  HARNESS_A2A_REMOTE_AGENTS: JSON.stringify({ weather: { url: remote.url, description: 'weather forecasts' } }),
  HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS: '127.0.0.1',
});

beforeAll(async () => {
  remote = await startRemoteAgent();
  server = await ScriptedModelServer.start();
  const script = scriptRoles(server);
  for (const text of [...Object.keys(ASKS), TWICE]) script.selection.set(text, { skills: [] });
  server.on(MODEL.agent, honestParent);
  const remoteAgents = parseRemoteAgents(REMOTE_ENV());
  worker = await startWorker({ models: scriptedModels(server), remoteAgents: { ...remoteAgents, pollMs: 100 } });
  client = new SessionClient(worker.client, { taskQueue: worker.taskQueue });
});

afterAll(async () => {
  await worker?.stop();
  await server?.close();
  await remote?.close();
});

const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

describe('session_create_sub with a remote A2A agent', () => {
  it('is offered with the configured names, and the remote answer reaches the final reply', async () => {
    const sessionId = unique('remote');
    const before = remote.received.length;
    const ask = 'Ask the weather agent whether it rains in Hangzhou on Friday';
    const done = await client.submit(sessionId, { text: ask }, { wait: { timeoutMs: 30_000 } });
    const record = done.decision!;
    expect(record.agent?.outcome).toBe('replied');
    expect(record.agent?.reply).toBe(`The remote agent said: ${forecast('Hangzhou rain Friday')}`);
    expect(record.remote).toEqual([
      expect.objectContaining({ callId: 'call_1', agent: 'weather', outcome: 'answered' }),
    ]);
    // One message, its id the call's: <sessionId>:<seq>:<callId>.
    expect(remote.received.slice(before)).toEqual([`${sessionId}:${done.seq}:call_1`]);

    const offered = server.requests(MODEL.agent)[0]!.tools.find((t) => t.name === 'session_create_sub')!;
    expect(offered.description).toContain('weather (weather forecasts)');
    expect(offered.parameters).toMatchObject({ properties: { agent: { enum: ['weather'] } } });
  });

  it('is sent once when the activity is retried: the retry follows the task the first attempt sent', async () => {
    const sessionId = unique('remote-retry');
    const before = remote.received.length;
    const polled = remote.getTasks;
    remote.failNextGetTask = true;
    const done = await client.submit(
      sessionId,
      { text: 'Ask the weather agent about fog in Paris on Monday' },
      { wait: { timeoutMs: 30_000 } },
    );
    expect(remote.failNextGetTask).toBe(false);
    expect(done.decision!.agent?.reply).toBe(`The remote agent said: ${forecast('Paris fog Monday')}`);
    expect(remote.received.slice(before)).toEqual([`${sessionId}:${done.seq}:call_1`]);
    // The failed poll and at least one by the retry.
    expect(remote.getTasks - polled).toBeGreaterThanOrEqual(2);
  });

  it('cancels the remote task when the turn is interrupted, so the remote agent stops working for nobody', async () => {
    const sessionId = unique('remote-interrupt');
    const sent = await client.submit(sessionId, { text: 'Ask the weather agent to watch the storm over Lisbon' });
    const messageId = `${sessionId}:${sent.seq}:call_1`;
    await waitFor(
      () => Promise.resolve(remote.received),
      (ids) => ids.includes(messageId),
    );
    await client.command(sessionId, { name: 'interrupt' });
    const record = await client.waitForDecision(sessionId, sent.seq, { timeoutMs: 30_000 });
    expect(record?.agent?.outcome).toBe('interrupted');
    // The activity sees the cancellation with its next heartbeat to the server (throttled to 80 % of
    // its 30 s heartbeat timeout), then sends CancelTask.
    await waitFor(
      () => Promise.resolve(remote.cancelled),
      (ids) => ids.includes(messageId),
      45_000,
    );
    expect(remote.cancelled.filter((id) => id === messageId)).toHaveLength(1);
  });

  it('counts against maxSubSessionsPerTurn and maxSessionDepth like a local sub-session', async () => {
    const before = remote.received.length;
    const capped = await client.submit(
      unique('remote-cap'),
      { text: TWICE },
      { start: { settings: { maxSubSessionsPerTurn: 1 } }, wait: { timeoutMs: 30_000 } },
    );
    expect(capped.decision!.agent?.toolCalls).toEqual([
      expect.objectContaining({ callId: 'call_1', status: 'ok' }),
      expect.objectContaining({
        callId: 'call_2',
        status: 'error',
        result: 'session_create_sub refused: at most 1 sub-sessions per turn, and this turn created 1',
      }),
    ]);
    expect(capped.decision!.remote).toHaveLength(1);
    expect(remote.received.length).toBe(before + 1);

    const flat = await client.submit(
      unique('remote-depth'),
      { text: 'Ask the weather agent whether it rains in Hangzhou on Friday' },
      { start: { settings: { maxSessionDepth: 0 } }, wait: { timeoutMs: 30_000 } },
    );
    expect(flat.decision!.agent?.reply).toMatch(
      /^The remote agent said: \[error\] session_create_sub refused: this Session is at depth 0/,
    );
    expect(remote.received.length).toBe(before + 1);
  });

  it('is under the approval policy: a rule denying session_create_sub denies the remote call, which is never sent', async () => {
    const before = remote.received.length;
    const denying = await startWorker({
      models: scriptedModels(server),
      remoteAgents: { ...parseRemoteAgents(REMOTE_ENV()), pollMs: 100 },
      toolPolicy: ToolPolicy.parse(
        { rules: [{ id: 'no-delegation', effect: 'deny', tool: 'session_create_sub', reason: 'work here' }] },
        'policy.json',
      ),
    });
    try {
      const denied = await new SessionClient(denying.client, { taskQueue: denying.taskQueue }).submit(
        unique('remote-denied'),
        { text: 'Ask the weather agent whether it rains in Hangzhou on Friday' },
        { wait: { timeoutMs: 30_000 } },
      );
      expect(denied.decision!.agent?.toolCalls).toEqual([
        expect.objectContaining({
          callId: 'call_1',
          status: 'error',
          policy: expect.objectContaining({ effect: 'deny', rule: 'no-delegation' }),
        }),
      ]);
      expect(denied.decision!.remote).toBeUndefined();
      expect(remote.received.length).toBe(before);
    } finally {
      await denying.stop();
    }
  });

  it('answers an unknown agent name with a tool error the model sees, and sends nothing', async () => {
    const before = remote.received.length;
    const done = await client.submit(
      unique('remote-unknown'),
      { text: 'Ask the tide agent about Brest' },
      { wait: { timeoutMs: 30_000 } },
    );
    const reply = done.decision!.agent?.reply ?? '';
    // The worker checks the arguments against the offered schema (agent: enum of the configured names).
    expect(reply).toBe(
      'The remote agent said: [error] invalid arguments for session_create_sub: arguments/agent must be equal to one of the allowed values',
    );
    expect(done.decision!.remote).toBeUndefined();
    expect(remote.received.length).toBe(before);
  });
});

describe('the callRemoteAgent activity', () => {
  it('answers a name the worker does not know (a run on a worker configured otherwise) as a tool error', async () => {
    const deps = { remoteAgents: { agents: {}, allowHosts: [] } } as unknown as ActivityDeps;
    const request = { sessionId: 's', seq: 1, callId: 'call_1', agent: 'tide', text: 'Brest tides' };
    await expect(callRemoteAgent(deps, request)).resolves.toEqual({
      output: 'session_create_sub: no remote agent named "tide" is configured',
      isError: true,
    });
  });
});

describe('HARNESS_A2A_REMOTE_AGENTS at start', () => {
  it('refuses a non-public URL unless HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS names its host', () => {
    const agents = JSON.stringify({ inside: { url: 'http://10.0.0.7:8080/.well-known/agent-card.json' } });
    expect(() => loadConfig({ HARNESS_A2A_REMOTE_AGENTS: agents })).toThrow(ConfigError);
    expect(() => loadConfig({ HARNESS_A2A_REMOTE_AGENTS: agents })).toThrow(
      /HARNESS_A2A_REMOTE_AGENTS: inside\.url: 10\.0\.0\.7 is a private address/,
    );
    expect(() => loadConfig({ HARNESS_A2A_REMOTE_AGENTS: JSON.stringify({ me: { url: 'http://0x7f.1/' } }) })).toThrow(
      /127\.0\.0\.1 is a loopback address/,
    );
    const allowed = loadConfig({
      HARNESS_A2A_REMOTE_AGENTS: agents,
      HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS: '10.0.0.7',
    });
    expect(Object.keys(allowed.remoteAgents.agents)).toEqual(['inside']);
  });

  it('refuses a value that is not the documented shape, naming the variable', () => {
    expect(() => loadConfig({ HARNESS_A2A_REMOTE_AGENTS: '{"x": ' })).toThrow(/HARNESS_A2A_REMOTE_AGENTS: not JSON/);
    expect(() =>
      loadConfig({ HARNESS_A2A_REMOTE_AGENTS: JSON.stringify({ x: { url: 'ftp://example.com/' } }) }),
    ).toThrow(/HARNESS_A2A_REMOTE_AGENTS: x\.url/);
    expect(() =>
      loadConfig({
        HARNESS_A2A_REMOTE_AGENTS: JSON.stringify({ x: { url: 'https://example.com/', tokenEnv: 'NOPE_TOKEN' } }),
      }),
    ).toThrow(/x\.tokenEnv names NOPE_TOKEN, which is unset/);
  });
});
