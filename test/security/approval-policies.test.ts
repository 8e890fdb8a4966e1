/**
 * Trust boundary: the worker's approval policy, not only a per-toolset flag, decides whether a tool
 * call runs, waits for a person or is refused. Before policies, whether a call waited came only from
 * the toolset's `requiresApproval` (and, of the built-ins, a user-scope `memory_save`): a call to read
 * `/secrets` or fetch from an internal host ran at once, and a sub-session could create sub-sessions.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveCalls, toolOffers } from '../../activities/agent-step.js';
import type { McpCatalog } from '../../capabilities/mcp-catalog.js';
import { MemoryStore } from '../../capabilities/memory-store.js';
import { ToolArgumentValidator } from '../../capabilities/tool-arguments.js';
import { ToolPolicy, ToolPolicyError, type PolicyCall } from '../../capabilities/tool-policy.js';
import { approvalSignal, approveUpdate, resultUpdate, snapshotQuery } from '../../contract/api.js';
import type { SessionView, TurnResult } from '../../contract/queries.js';
import { ConfigError, loadConfig } from '../../worker/config.js';
import { createSessionWorker } from '../../worker/create-worker.js';
import {
  MODEL,
  decided,
  scriptedModels,
  send,
  startSession,
  startWorker,
  type TestWorker,
} from '../support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from '../support/mcp-fixture.js';
import { readJournal } from '../support/mcp-fixture-server.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { scriptRoles, type RoleScript } from '../support/scripted-roles.js';

const policy = (rules: unknown[]) => ToolPolicy.parse({ rules }, 'policy.json');
const call = (overrides: Partial<PolicyCall> & { args?: object } = {}): PolicyCall => ({
  tool: overrides.tool ?? 'read_file',
  toolset: overrides.toolset === undefined ? 'mcp-files' : overrides.toolset,
  arguments: overrides.arguments ?? JSON.stringify(overrides.args ?? {}),
  riskTags: overrides.riskTags ?? [],
  sessionKind: overrides.sessionKind === undefined ? 'top-level' : overrides.sessionKind,
});
const effect = (p: ToolPolicy, c: PolicyCall) => p.decide(c)?.effect ?? null;

describe('the rule engine', () => {
  it('deny beats approve beats allow, whatever their order; the first rule of the winning effect is recorded', () => {
    const p = policy([
      { id: 'all-files', effect: 'allow', tool: '*' },
      { id: 'ask-files', effect: 'approve', toolset: 'mcp-files' },
      { id: 'no-secrets', effect: 'deny', pathPrefix: '/secrets', reason: 'secrets stay put' },
      { id: 'ask-again', effect: 'approve', tool: 'read_*' },
    ]);
    expect(p.decide(call({ args: { path: '/secrets/key' } }))).toEqual({
      effect: 'deny',
      rule: 'no-secrets',
      index: 2,
      reason: 'secrets stay put',
    });
    expect(p.decide(call({ args: { path: '/data/a' } }))).toEqual({
      effect: 'approve',
      rule: 'ask-files',
      index: 1,
      reason: null,
    });
    expect(p.decide(call({ toolset: 'mcp-other', tool: 'echo' }))).toMatchObject({
      effect: 'allow',
      rule: 'all-files',
    });
    // No rule matches: null, and the toolset's own flag decides.
    expect(policy([{ effect: 'deny', tool: 'rm' }]).decide(call())).toBeNull();
    // A rule without an id is named by its position.
    expect(policy([{ effect: 'approve', tool: 'read_file' }]).decide(call())).toMatchObject({ rule: 'rule-1' });
  });

  it('path prefixes compare normalised paths: `..` cannot climb out of a denied prefix or into an allowed one', () => {
    const deny = policy([{ effect: 'deny', tool: 'read_file', pathPrefix: ['/secrets', 'private'] }]);
    for (const path of [
      '/secrets',
      '/secrets/',
      '/data/../secrets/key',
      '/../../secrets/key',
      '//secrets//./key',
      '\\secrets\\key',
      'file:///secrets/key',
      'docs/../private/notes.md',
      // A relative path that climbs above its start could be anywhere: a deny rule takes it.
      '../../etc/passwd',
      // A relative prefix names segments found anywhere in a path.
      '/srv/private',
      'app/private/notes.md',
    ]) {
      expect([path, effect(deny, call({ args: { path } }))]).toEqual([path, 'deny']);
    }
    for (const path of ['/secretsanta/list', '/data/secrets', 'privately/x', '/srv/privately']) {
      expect([path, effect(deny, call({ args: { path } }))]).toEqual([path, null]);
    }
    // Paths anywhere in the arguments count, nested ones too, unless the rule names the arguments.
    expect(effect(deny, call({ args: { files: [{ from: '/tmp/a', to: '/secrets/b' }] } }))).toBe('deny');
    const named = policy([{ effect: 'deny', arguments: ['path'], pathPrefix: '/secrets' }]);
    expect(effect(named, call({ args: { path: '/tmp/x', note: '/secrets/key' } }))).toBeNull();

    const allow = policy([{ effect: 'allow', pathPrefix: '/workspace' }]);
    expect(effect(allow, call({ args: { path: '/workspace/a.md' } }))).toBe('allow');
    expect(effect(allow, call({ args: { path: '/workspace/../etc/passwd' } }))).toBeNull();
    expect(effect(allow, call({ args: { path: '../workspace/a.md' } }))).toBeNull();

    const outside = policy([{ effect: 'deny', arguments: ['path'], pathOutside: '/workspace' }]);
    expect(effect(outside, call({ args: { path: '/workspace/sub/../a.md' } }))).toBeNull();
    expect(effect(outside, call({ args: { path: '/workspace/../etc/passwd' } }))).toBe('deny');
    expect(effect(outside, call({ args: { path: 'a.md' } }))).toBe('deny');
  });

  it('hosts come from the URL parser: case, trailing dots, userinfo and prose do not hide them', () => {
    const p = policy([
      { id: 'internal', effect: 'deny', host: ['*.corp.example', 'metadata.google.internal', '169.254.169.254'] },
      { id: 'ask-web', effect: 'approve', host: 'example.org' },
    ]);
    const url = (u: string) => effect(p, call({ tool: 'fetch_url', args: { url: u } }));
    expect(url('https://wiki.corp.example/page')).toBe('deny');
    expect(url('https://WIKI.Corp.Example./page')).toBe('deny');
    expect(url('https://example.org@wiki.corp.example/')).toBe('deny');
    expect(url('http://metadata.google.internal/computeMetadata/v1/')).toBe('deny');
    expect(url('http://0xA9FEA9FE/latest/meta-data')).toBe('deny');
    expect(effect(p, call({ args: { note: 'please fetch (https://a.corp.example/x).' } }))).toBe('deny');
    expect(url('https://example.org/')).toBe('approve');
    // `*.` needs a label: the bare domain and look-alikes are other hosts.
    expect(url('https://corp.example/')).toBeNull();
    expect(url('https://corp.example.attacker.net/')).toBeNull();
    expect(url('https://www.example.org/')).toBeNull();
    // A named argument may hold a bare host name.
    const bare = policy([{ effect: 'deny', arguments: ['host'], host: '*.corp.example' }]);
    expect(effect(bare, call({ args: { host: 'db.corp.example:5432' } }))).toBe('deny');
  });

  it('command names are read from every part of a command line, without folders and prefixes', () => {
    const p = policy([{ id: 'no-rm', effect: 'deny', command: ['rm', 'curl'] }]);
    const run = (command: unknown) => effect(p, call({ tool: 'shell', args: { command } }));
    expect(run('rm -rf /')).toBe('deny');
    expect(run('/bin/rm -rf /')).toBe('deny');
    expect(run('ls; rm -rf /')).toBe('deny');
    expect(run('FOO=1 sudo rm x')).toBe('deny');
    expect(run('echo $(curl https://x)')).toBe('deny');
    expect(run(['rm', '-rf', '/'])).toBe('deny');
    expect(run('ls -la')).toBeNull();
    expect(run('echo rm')).toBeNull();
  });

  it('matches the Session kind and the tool’s risk tags', () => {
    const p = policy([
      { id: 'no-subs-below', effect: 'deny', tool: 'session_create_sub', sessionKind: 'sub-session' },
      { id: 'ask-writes', effect: 'approve', riskTags: ['writes-files', 'network'] },
    ]);
    const sub = (sessionKind: PolicyCall['sessionKind']) =>
      effect(p, call({ tool: 'session_create_sub', toolset: null, sessionKind }));
    expect(sub('sub-session')).toBe('deny');
    expect(sub('top-level')).toBeNull();
    // A workflow that does not say its kind matches no rule that names one.
    expect(sub(null)).toBeNull();
    expect(effect(p, call({ riskTags: ['network'] }))).toBe('approve');
    expect(effect(p, call({ riskTags: ['reads-files'] }))).toBeNull();
    // Built-ins are the `builtin` toolset.
    expect(effect(policy([{ effect: 'deny', toolset: 'builtin' }]), call({ tool: 'memory_save', toolset: null }))).toBe(
      'deny',
    );
  });

  it('arguments too large for the policy to read cannot escape a deny rule', () => {
    const p = policy([{ effect: 'deny', pathPrefix: '/secrets' }]);
    const filler = Array.from({ length: 600 }, (_, i) => `/tmp/${i}`);
    expect(effect(p, call({ args: { files: [...filler, '/secrets/key'] } }))).toBe('deny');
    let deep: unknown = '/tmp/x';
    for (let i = 0; i < 12; i++) deep = { deep };
    expect(effect(p, call({ args: { deep } }))).toBe('deny');
    expect(effect(policy([{ effect: 'allow', pathPrefix: '/tmp' }]), call({ args: { deep } }))).toBeNull();
  });

  it('refuses a bad policy file with every bad field named', () => {
    expect(() =>
      policy([
        { effect: 'block', tool: 3 },
        { effect: 'deny', sessionKind: 'child', pathPrefx: '/x' },
      ]),
    ).toThrow(ToolPolicyError);
    try {
      policy([
        { effect: 'block', tool: 3 },
        { effect: 'deny', sessionKind: 'child', pathPrefx: '/x' },
      ]);
    } catch (err) {
      const message = (err as Error).message;
      expect(message).toContain('policy.json: invalid tool policy');
      expect(message).toContain('rules.0.effect: must be "allow", "approve" or "deny"');
      expect(message).toContain('rules.0.tool: must be a string or a list of strings');
      expect(message).toContain('rules.1.sessionKind: must be "top-level" or "sub-session"');
      expect(message).toContain('rules.1: Unrecognized key: "pathPrefx"');
    }
    expect(() =>
      policy([
        { id: 'a', effect: 'allow' },
        { id: 'a', effect: 'deny' },
      ]),
    ).toThrow(/rules\.1\.id: "a" is already the id of rules\.0/);
  });

  it('the example policy in deploy/ loads and decides as its comments in the docs say', () => {
    const example = ToolPolicy.load('deploy/tool-policy.example.json');
    expect(example.size).toBe(9);
    expect(example.decide(call({ args: { path: '/etc/shadow' } }))).toMatchObject({ rule: 'no-secrets' });
    expect(
      example.decide(call({ toolset: 'mcp-doc-convert', tool: 'convert', args: { inputPath: '/tmp/x.md' } })),
    ).toMatchObject({ effect: 'deny', rule: 'workspace-only' });
    expect(
      example.decide(call({ toolset: 'mcp-doc-convert', tool: 'convert', args: { inputPath: 'guide.md' } })),
    ).toBeNull();
    expect(example.decide(call({ tool: 'read_file', args: { path: 'notes.md' } }))).toMatchObject({ effect: 'allow' });
  });

  it('a worker refuses to start on a policy file it cannot use, naming HARNESS_TOOL_POLICY', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'policy-file-'));
    try {
      const file = join(dir, 'policy.json');
      writeFileSync(file, JSON.stringify({ rules: [{ effect: 'maybe' }] }));
      const config = loadConfig({ HARNESS_TOOL_POLICY: file, HARNESS_CATALOG_DIR: join(dir, 'none') });
      expect(config.toolPolicyPath).toBe(file);
      await expect(createSessionWorker(config)).rejects.toThrow(ConfigError);
      await expect(createSessionWorker(config)).rejects.toThrow(
        /HARNESS_TOOL_POLICY: .*policy\.json: invalid tool policy/,
      );
      writeFileSync(file, '{ "rules": [');
      await expect(createSessionWorker(config)).rejects.toThrow(/policy\.json: not valid JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('resolving calls on the worker', () => {
  const tools = toolOffers([], { toolset: () => undefined });
  const validator = new ToolArgumentValidator();
  const resolve = (name: string, args: object, p: ToolPolicy, sessionKind: 'top-level' | 'sub-session' = 'top-level') =>
    resolveCalls([{ callId: 'c1', name, arguments: JSON.stringify(args) }], tools, validator, {
      policy: p,
      sessionKind,
      riskTags: () => [],
    })[0];

  it('governs the built-ins: a rule can deny session_create_sub and require approval for memory_save', () => {
    const p = policy([
      { id: 'no-subs', effect: 'deny', tool: 'session_create_sub', sessionKind: 'sub-session' },
      { id: 'ask-memory', effect: 'approve', tool: 'memory_save' },
    ]);
    expect(resolve('session_create_sub', { text: 'weather in Oslo' }, p, 'sub-session')).toMatchObject({
      requiresApproval: true,
      policy: { effect: 'deny', rule: 'no-subs', index: 0 },
    });
    expect(resolve('session_create_sub', { text: 'weather in Oslo' }, p)).toMatchObject({
      requiresApproval: false,
      policy: null,
    });
    // A Session-scoped save ran at once before; this rule makes it wait.
    expect(resolve('memory_save', { text: 'Prefers A4' }, p)).toMatchObject({
      requiresApproval: true,
      policy: { effect: 'approve', rule: 'ask-memory' },
    });
    // An allow rule that names the built-ins lets a user-scope save run without the built-in
    // default's approval; one that names only the tool does not.
    expect(
      resolve(
        'memory_save',
        { text: 'x', scope: 'user' },
        policy([{ effect: 'allow', toolset: 'builtin', tool: 'memory_save' }]),
      ),
    ).toMatchObject({ requiresApproval: false, policy: { effect: 'allow' } });
    expect(
      resolve('memory_save', { text: 'x', scope: 'user' }, policy([{ effect: 'allow', tool: 'memory_save' }])),
    ).toMatchObject({ requiresApproval: true, policy: { effect: 'allow' } });
  });
});

// ---- through a real worker and Temporal ---------------------------------------------------------------

let dir: string;
let journal: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let store: MemoryStore;
let worker: TestWorker;

const POLICY = [
  { id: 'no-secrets', effect: 'deny', tool: 'read_file', pathPrefix: '/secrets', reason: 'secrets never leave' },
  { id: 'ask-corp', effect: 'approve', host: '*.corp.example' },
  { id: 'ask-drafts', effect: 'approve', tool: 'read_file', pathPrefix: '/drafts' },
  { id: 'no-nested-subs', effect: 'deny', tool: 'session_create_sub', sessionKind: 'sub-session' },
  { id: 'ask-memory', effect: 'approve', tool: 'memory_save' },
];

describe('a policy through a real worker', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'approval-policies-'));
    journal = join(dir, 'journal.log');
    // No approvalRequired: whatever waits here waits because of the policy.
    const { approvalRequired: _none, ...entry } = fixtureMcpEntry(dir, ['read_file', 'fetch_url'], {
      MCP_FIXTURE_JOURNAL: journal,
    });
    const connected = await connectedCatalog({ fixture: entry });
    const catalog = connected.catalog;
    mcp = connected.mcp;
    expect(catalog.toolset('mcp-fixture')?.tools.map((t) => [t.name, t.requiresApproval])).toEqual([
      ['read_file', false],
      ['fetch_url', false],
    ]);
    server = await ScriptedModelServer.start();
    script = scriptRoles(server);
    store = MemoryStore.open(join(dir, 'memory.db'));
    worker = await startWorker({
      models: scriptedModels(server),
      catalog,
      mcp,
      memories: store,
      toolPolicy: policy(POLICY),
    });
  });

  afterAll(async () => {
    await worker?.stop();
    await mcp?.close();
    await server?.close();
    store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function fixtureSession(start: { parentSessionId?: string } = {}): Promise<WorkflowHandle> {
    const goal = 'Read files and fetch pages with the fixture tools';
    script.selection.set(goal, { skills: [], toolsets: ['mcp-fixture'] });
    const handle = await startSession(worker, start);
    await send(handle, goal);
    await decided(handle, 1);
    return handle;
  }

  async function turn(handle: WorkflowHandle, seq: number, text: string): Promise<TurnResult> {
    script.relevance.set(text, [0.9, 0.9]);
    await send(handle, text);
    return handle.executeUpdate(resultUpdate, { args: [{ seq, timeoutMs: 30_000 }] });
  }

  const view = (handle: WorkflowHandle): Promise<SessionView> => handle.query(snapshotQuery);
  const ran = (tool: string) => readJournal(journal).filter((l) => l.kind === 'ran' && l.tool === tool).length;

  it('a denied path prefix is a tool error the model sees, and the tool never runs', async () => {
    const handle = await fixtureSession();
    server.enqueue(
      MODEL.agent,
      {
        toolCalls: [
          { id: 'call_1', name: 'read_file', arguments: { path: '/data/../secrets/api-key' } },
          { id: 'call_2', name: 'read_file', arguments: { path: '/data/report.md' } },
        ],
      },
      { content: 'I may not read the key; the report is read.' },
    );
    const done = await turn(handle, 2, 'read the api key and the report');
    expect(done.record?.agent?.outcome).toBe('replied');
    expect(done.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        callId: 'call_1',
        status: 'error',
        result: 'denied by policy rule no-secrets: secrets never leave (read_file was not run)',
        policy: { effect: 'deny', rule: 'no-secrets', index: 0, reason: 'secrets never leave' },
      }),
      expect.objectContaining({ callId: 'call_2', status: 'ok', result: 'contents of /data/report.md', policy: null }),
    ]);
    expect(ran('read_file')).toBe(1);
    // The model's next request carries the refusal as the call's tool result.
    const last = server.requests(MODEL.agent).at(-1);
    expect(last?.messages).toContainEqual(
      expect.objectContaining({
        role: 'tool',
        toolCallId: 'call_1',
        content: expect.stringContaining('denied by policy rule no-secrets'),
      }),
    );
  });

  it('a host that needs approval waits for it though its toolset has no requiresApproval', async () => {
    const handle = await fixtureSession();
    const before = ran('fetch_url');
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_1', name: 'fetch_url', arguments: { url: 'https://WIKI.corp.example./onboarding' } }] },
      { content: 'Fetched the onboarding page.' },
    );
    expect(await turn(handle, 2, 'fetch the onboarding page')).toMatchObject({
      status: 'waiting',
      outcome: 'waiting-approval',
    });
    const waiting = await view(handle);
    expect(waiting.stage).toBe('Waiting for approval');
    expect(waiting.pendingApprovals).toEqual([
      expect.objectContaining({ approvalId: '2:1:call_1', tool: 'fetch_url' }),
    ]);
    expect(ran('fetch_url')).toBe(before);
    await handle.signal(approvalSignal, { approvalId: '2:1:call_1', approved: true, approver: 'alice' });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
    expect(done.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        status: 'ok',
        approval: expect.objectContaining({ by: 'alice' }),
        policy: { effect: 'approve', rule: 'ask-corp', index: 1, reason: null },
      }),
    ]);
    expect(ran('fetch_url')).toBe(before + 1);

    // Another host matches no rule: it runs at once, as its toolset says.
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_1', name: 'fetch_url', arguments: { url: 'https://example.org/' } }] },
      { content: 'Fetched.' },
    );
    expect((await turn(handle, 3, 'fetch example.org')).record?.agent?.toolCalls[0]).toMatchObject({
      status: 'ok',
      policy: null,
    });
  });

  it('an approver cannot edit a waiting call into one a deny rule matches; an allowed edit runs instead of the proposal', async () => {
    const handle = await fixtureSession();
    const before = ran('read_file');
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_1', name: 'read_file', arguments: { path: '/drafts/plan.md' } }] },
      { content: 'Read the file the approver chose.' },
    );
    expect(await turn(handle, 2, 'read the draft plan')).toMatchObject({ outcome: 'waiting-approval' });
    const [waiting] = (await view(handle)).pendingApprovals;
    expect(waiting).toMatchObject({ approvalId: '2:1:call_1', tool: 'read_file' });
    const approve = (args: object) =>
      handle.executeUpdate(approveUpdate, {
        args: [
          {
            approvalId: '2:1:call_1',
            approved: true,
            approver: 'alice',
            argumentsHash: waiting?.argumentsHash,
            arguments: JSON.stringify(args),
          },
        ],
      });

    // The edit is judged by the policy as the model's call would be: no-secrets wins over the approval.
    const denied = await approve({ path: '/drafts/../secrets/api-key' }).then(
      () => null,
      (err: Error & { cause?: Error }) => err,
    );
    expect(denied?.cause?.message).toMatch(
      /edit of 2:1:call_1 refused: the edited call is denied by policy rule no-secrets \(secrets never leave\)/,
    );
    const still = await view(handle);
    expect(still.pendingApprovals.map((a) => a.approvalId)).toEqual(['2:1:call_1']);
    expect(still.recentRejections.at(-1)?.reason).toMatch(/denied by policy rule no-secrets/);
    expect(ran('read_file')).toBe(before);

    // The argument hash binds the approval to the model's proposal, so the corrected edit still answers it.
    expect(await approve({ path: '/drafts/final.md' })).toEqual({ approvalId: '2:1:call_1', approved: true });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2, timeoutMs: 30_000 }] });
    expect(done.record?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        status: 'ok',
        arguments: '{"path":"/drafts/final.md"}',
        originalArguments: '{"path":"/drafts/plan.md"}',
        editedBy: 'alice',
        result: 'contents of /drafts/final.md',
      }),
    ]);
    expect(ran('read_file')).toBe(before + 1);
    // The model is told what ran, beside what it proposed, with the result.
    expect(server.requests(MODEL.agent).at(-1)?.messages).toContainEqual(
      expect.objectContaining({
        role: 'tool',
        toolCallId: 'call_1',
        content: expect.stringMatching(
          /edited this call's arguments.*You proposed: \{"path":"\/drafts\/plan\.md"\}.*It ran with: \{"path":"\/drafts\/final\.md"\}\]\ncontents of \/drafts\/final\.md/s,
        ),
      }),
    );
  });

  it('governs session_create_sub by Session kind and memory_save by tool', async () => {
    const handle = await fixtureSession({ parentSessionId: 'policy-parent' });
    server.enqueue(
      MODEL.agent,
      {
        toolCalls: [
          { id: 'call_1', name: 'session_create_sub', arguments: { text: 'What is the weather in Oslo?' } },
          { id: 'call_2', name: 'memory_save', arguments: { text: 'Reports go to the shared drive.' } },
        ],
      },
      { content: 'Noted.' },
    );
    // The sub-session may not create sub-sessions: refused at once; the Session-scoped save waits.
    expect(await turn(handle, 2, 'delegate the weather and remember the drive')).toMatchObject({
      status: 'waiting',
      outcome: 'waiting-approval',
    });
    const waiting = await view(handle);
    expect(waiting.pendingApprovals).toEqual([
      expect.objectContaining({ approvalId: '2:1:call_2', tool: 'memory_save' }),
    ]);
    expect(waiting.children).toEqual([]);
    expect(store.list({ scope: { sessionId: handle.workflowId.slice('session:'.length) } })).toEqual([]);

    await handle.signal(approvalSignal, { approvalId: '2:1:call_2', approved: true, approver: 'alice' });
    const done = await handle.executeUpdate(resultUpdate, { args: [{ seq: 2 }] });
    expect(done.record?.agent?.toolCalls.map((c) => [c.tool, c.status, c.policy?.rule ?? null])).toEqual([
      ['session_create_sub', 'error', 'no-nested-subs'],
      ['memory_save', 'ok', 'ask-memory'],
    ]);
    expect((await view(handle)).children).toEqual([]);
    expect(store.list({ scope: { sessionId: handle.workflowId.slice('session:'.length) } })).toHaveLength(1);
  });
});
