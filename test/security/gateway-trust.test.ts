/**
 * The gateway's trust boundary (issue 32, items 1, 4 and 8), on the real stack: a real Temporal dev
 * server, a real worker with the MCP fixture tools, and real HTTP requests (node:http, so a request
 * can carry any Host header, as a DNS-rebinding page's does).
 *
 * - identity comes from authentication: principals from a token file and from JWTs verified against
 *   a JWKS file made here with a fresh key pair (no network); `from` and `approver` are the
 *   principal's, a body naming anyone else is refused; permissions are enforced;
 * - every answer is heard: approvals, rejections and tool results go by update, a refused one is a
 *   400 with the Session's reason, and the inbox lists who answered when;
 * - the guards hold in no-token mode too: Host allow-list, cross-site Origin and Sec-Fetch-Site,
 *   JSON-only POSTs; streams are capped per principal and share one log reader per Session;
 * - `harness approve` exits non-zero for a refused approval and records the configured signer name.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { McpCatalog } from '../../capabilities/mcp-catalog.js';
import { InvalidInputError, SessionClient, ToolResultRefusedError } from '../../client/index.js';
import type { ControlKey } from '../../contract/control-signature.js';
import type { SessionEvent } from '../../contract/events.js';
import type { TokenFile } from '../../gateway/auth.js';
import { startGateway, type Gateway } from '../../gateway/server.js';
import { MODEL, scriptedModels, startWorker, uniqueId, waitFor, type TestWorker } from '../support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from '../support/mcp-fixture.js';
import { readJournal } from '../support/mcp-fixture-server.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { scriptRoles, type RoleScript } from '../support/scripted-roles.js';

const GOAL = 'Exercise the fixture tools: echo and add numbers';
const WEATHER_GOAL = 'Plan a weekend trip with the weather forecast';
const ISSUER = 'https://idp.example.test/';
const AUDIENCE = 'session-harness-gateway';

const TOKENS: TokenFile = {
  tokens: [
    { token: 'alice-token-0123456789', principal: 'alice', permissions: ['send', 'events'] },
    { token: 'bob-token-0123456789ab', principal: 'bob', permissions: ['approve'] },
    { token: 'carol-token-0123456789', principal: 'carol', permissions: ['events'] },
  ],
};
const [ALICE, BOB, CAROL] = TOKENS.tokens.map((t) => t.token) as [string, string, string];

let dir: string;
let journal: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let catalog: Awaited<ReturnType<typeof connectedCatalog>>['catalog'];
let worker: TestWorker;
let client: SessionClient;
let gateway: Gateway;
let open: Gateway;
let signJwt: (
  claims: Record<string, unknown>,
  options?: { expiresIn?: string | null; audience?: string },
) => Promise<string>;
let forgeJwt: (claims: Record<string, unknown>) => Promise<string>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gateway-trust-'));
  journal = join(dir, 'journal.log');
  const connected = await connectedCatalog({
    fixture: fixtureMcpEntry(dir, ['echo', 'add'], { MCP_FIXTURE_JOURNAL: journal }),
  });
  mcp = connected.mcp;
  catalog = connected.catalog;
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  script.selection.set(GOAL, { skills: [], toolsets: ['mcp-fixture'] });
  script.selection.set(WEATHER_GOAL, { skills: [], toolsets: ['weather'] });
  worker = await startWorker({ models: scriptedModels(server), catalog: connected.catalog, mcp });
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue: worker.taskQueue });

  // The identity provider's key pair, made here; the gateway gets only the public half, as a JWKS file.
  const idp = await generateKeyPair('ES256');
  const jwks = join(dir, 'jwks.json');
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(idp.publicKey)), kid: 'idp-1', alg: 'ES256' }] }));
  const other = await generateKeyPair('ES256');
  const build = (claims: Record<string, unknown>) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'idp-1' }).setIssuer(ISSUER).setIssuedAt();
  signJwt = async (claims, options = {}) => {
    const jwt = build(claims).setAudience(options.audience ?? AUDIENCE);
    if (options.expiresIn !== null) jwt.setExpirationTime(options.expiresIn ?? '5m');
    return jwt.sign(idp.privateKey);
  };
  forgeJwt = (claims) => build(claims).setAudience(AUDIENCE).setExpirationTime('5m').sign(other.privateKey);

  gateway = await startGateway({
    client,
    feed: worker.events,
    tokens: TOKENS,
    jwt: { jwks, issuer: ISSUER, audience: AUDIENCE, permissionsClaim: 'scope' },
  });
  open = await startGateway({ client, feed: worker.events, insecureNoToken: true });
});

afterAll(async () => {
  await gateway?.close();
  await open?.close();
  await client?.close();
  await worker?.stop();
  await mcp?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** One HTTP request with exactly these headers (Host included: the default is the gateway's own). */
function call(
  gw: Gateway,
  method: string,
  path: string,
  options: { token?: string; headers?: Record<string, string>; json?: unknown; raw?: string } = {},
): Promise<Answer> {
  const url = new URL(gw.url);
  const body = options.json !== undefined ? JSON.stringify(options.json) : options.raw;
  const headers: Record<string, string> = {
    host: url.host,
    ...(options.json !== undefined ? { 'content-type': 'application/json' } : {}),
    ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    ...options.headers,
  };
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path, headers, setHost: false },
      (res: IncomingMessage) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => {
          let parsed: Record<string, unknown> = {};
          try {
            parsed = JSON.parse(text) as Record<string, unknown>;
          } catch {
            parsed = { text };
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Opens an SSE stream and resolves once its status is known; `close` ends it. */
function openStream(gw: Gateway, path: string, token: string): Promise<{ status: number; close: () => void }> {
  const url = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, close: () => req.destroy() });
      },
    );
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    req.end();
  });
}

/** A Session sent by `token` whose input 2 waits for approval of `add(a, b)`. */
async function waitingAdd(prefix: string, token: string, a: number, b: number, gw = gateway): Promise<string> {
  const sessionId = uniqueId(prefix);
  expect((await call(gw, 'POST', `/sessions/${sessionId}/messages`, { token, json: { text: GOAL } })).status).toBe(200);
  await client.waitForDecision(sessionId, 1);
  server.enqueue(
    MODEL.agent,
    { toolCalls: [{ id: 'call_1', name: 'add', arguments: { a, b } }] },
    { content: `The sum is ${a + b}.` },
  );
  const text = `add ${a} and ${b} (${sessionId})`;
  script.relevance.set(text, [0.9, 0.9]);
  expect((await call(gw, 'POST', `/sessions/${sessionId}/messages`, { token, json: { text } })).status).toBe(200);
  expect((await client.waitForDecision(sessionId, 2))?.agent?.outcome).toBe('waiting-approval');
  return sessionId;
}

const approvePath = (sessionId: string, verb = 'approve') =>
  `/sessions/${sessionId}/approvals/${encodeURIComponent('2:1:call_1')}/${verb}`;

async function boundFrom(sessionId: string): Promise<unknown[]> {
  const { events } = await client.eventsAfter(sessionId);
  return events.flatMap((e: SessionEvent) => (e.kind === 'input.bound' ? [e.from] : []));
}

describe('identity comes from authentication', () => {
  it('a principal from the token file sends as itself; a body naming someone else, or a missing permission, is refused', async () => {
    const sessionId = uniqueId('gt-from');
    const path = `/sessions/${sessionId}/messages`;
    // Before: any token holder could post as alice (her memories then in scope).
    const claimed = await call(gateway, 'POST', path, {
      token: ALICE,
      json: { text: GOAL, from: { kind: 'user', id: 'bob' } },
    });
    expect(claimed.status).toBe(403);
    expect(claimed.body.error).toMatch(/authenticated as "alice"; a message cannot claim to be from/);
    const asSession = await call(gateway, 'POST', path, {
      token: ALICE,
      json: { text: GOAL, from: { kind: 'session', id: 'other' } },
    });
    expect(asSession.status).toBe(403);
    expect((await call(gateway, 'POST', path, { token: CAROL, json: { text: GOAL } })).status).toBe(403);
    expect((await call(gateway, 'POST', path, { json: { text: GOAL } })).status).toBe(401);
    expect(
      (await call(gateway, 'POST', path, { token: 'not-a-known-token-at-all', json: { text: GOAL } })).status,
    ).toBe(401);

    const sent = await call(gateway, 'POST', path, { token: ALICE, json: { text: GOAL } });
    expect(sent).toMatchObject({ status: 200, body: { seq: 1, duplicate: false } });
    // Naming yourself is fine; it changes nothing.
    const self = await call(gateway, 'POST', path, {
      token: ALICE,
      json: { text: 'second input from alice', from: { kind: 'user', id: 'alice' } },
    });
    expect(self.status).toBe(200);
    await waitFor(
      () => boundFrom(sessionId),
      (from) => from.length === 2,
    );
    expect(await boundFrom(sessionId)).toEqual([
      { kind: 'user', id: 'alice' },
      { kind: 'user', id: 'alice' },
    ]);
    // carol may read events, not send.
    expect((await call(gateway, 'GET', `/sessions/${sessionId}/events.json`, { token: CAROL })).status).toBe(200);
    expect((await call(gateway, 'GET', `/sessions/${sessionId}/events.json`, { token: BOB })).status).toBe(403);
  });

  it('the approver is the authenticated principal: a claimed approver is refused, the Session and the inbox record who answered and when', async () => {
    const sessionId = await waitingAdd('gt-approver', ALICE, 19, 23);
    const [waiting] = (await client.snapshot(sessionId)).pendingApprovals;
    const hash = waiting!.argumentsHash;
    // alice may send, not approve.
    expect((await call(gateway, 'POST', approvePath(sessionId), { token: ALICE, json: {} })).status).toBe(403);
    // Before: any token holder could approve as "security-officer".
    const claimed = await call(gateway, 'POST', approvePath(sessionId), {
      token: BOB,
      json: { argumentsHash: hash, approver: 'security-officer' },
    });
    expect(claimed.status).toBe(403);
    expect(claimed.body.error).toMatch(/authenticated as "bob"; an answer cannot name "security-officer"/);
    expect((await client.snapshot(sessionId)).pendingApprovals).toHaveLength(1);

    const inbox = await call(gateway, 'GET', '/approvals', { token: BOB });
    expect(inbox.status).toBe(200);
    expect(inbox.body.waiting).toEqual(expect.arrayContaining([expect.objectContaining({ sessionId, tool: 'add' })]));

    const before = Date.now();
    const approved = await call(gateway, 'POST', approvePath(sessionId), {
      token: BOB,
      json: { argumentsHash: hash, note: 'numbers checked' },
    });
    expect(approved).toMatchObject({ status: 200, body: { applied: true, approved: true, by: 'bob' } });
    const done = await client.waitForDecision(sessionId, 2);
    expect(done?.agent?.toolCalls[0]).toMatchObject({
      tool: 'add',
      status: 'ok',
      approval: expect.objectContaining({ approved: true, by: 'bob', note: 'numbers checked' }),
    });

    const trail = await call(gateway, 'GET', '/approvals', { token: BOB });
    const answered = (trail.body.answered as Array<Record<string, unknown>>).filter((a) => a.sessionId === sessionId);
    expect(answered).toEqual([
      expect.objectContaining({
        approvalId: '2:1:call_1',
        tool: 'add',
        approved: true,
        by: 'bob',
        note: 'numbers checked',
      }),
    ]);
    expect(answered[0]!.at).toBeGreaterThanOrEqual(before - 5_000);

    // Answering again is refused with the Session's reason; before, a refused approval answered 200 {"sent":true}.
    const again = await call(gateway, 'POST', approvePath(sessionId), { token: BOB, json: { argumentsHash: hash } });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatch(/refused the approval: .*no call waits for approval/);
    const ran = readJournal(journal).filter((l) => l.kind === 'ran' && l.key.startsWith(`${sessionId}:`));
    expect(ran).toHaveLength(1);
  });

  it('a rejection is heard: one for other arguments is a 400 and the call keeps waiting; the real one is in the trail', async () => {
    const sessionId = await waitingAdd('gt-reject', ALICE, 2, 3);
    const wrong = await call(gateway, 'POST', approvePath(sessionId, 'reject'), {
      token: BOB,
      json: { argumentsHash: 'f'.repeat(64), note: 'no' },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatch(/refused the approval/);
    expect((await client.snapshot(sessionId)).pendingApprovals).toHaveLength(1);
    const [waiting] = (await client.snapshot(sessionId)).pendingApprovals;
    server.enqueue(MODEL.agent, { content: 'Not adding, then.' });
    const rejected = await call(gateway, 'POST', approvePath(sessionId, 'reject'), {
      token: BOB,
      json: { argumentsHash: waiting!.argumentsHash, note: 'not today' },
    });
    expect(rejected).toMatchObject({ status: 200, body: { applied: true, approved: false, by: 'bob' } });
    const trail = await call(gateway, 'GET', '/approvals', { token: BOB });
    expect(trail.body.answered).toEqual(
      expect.arrayContaining([expect.objectContaining({ sessionId, approved: false, by: 'bob', note: 'not today' })]),
    );
  });

  it('a tool result is heard: one no call waits for is a 400 with the reason, the awaited one applies', async () => {
    const sessionId = uniqueId('gt-tool');
    const path = `/sessions/${sessionId}/messages`;
    expect((await call(gateway, 'POST', path, { token: ALICE, json: { text: WEATHER_GOAL } })).status).toBe(200);
    await client.waitForDecision(sessionId, 1);
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_wx', name: 'get_forecast', arguments: { location: 'Oslo' } }] },
      { content: 'Pack a raincoat.' },
    );
    script.relevance.set(`weather in Oslo (${sessionId})`, [0.9, 0.9]);
    await call(gateway, 'POST', path, { token: ALICE, json: { text: `weather in Oslo (${sessionId})` } });
    expect((await client.waitForDecision(sessionId, 2))?.agent?.outcome).toBe('waiting-tool');

    // Before: every tool result answered 200 {"sent":true}, also one that answered nothing.
    const unknown = await call(gateway, 'POST', `/sessions/${sessionId}/tool-results/call_unknown`, {
      token: BOB,
      json: { output: 'sunny' },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatch(/refused the tool result/);
    expect(
      (
        await call(gateway, 'POST', `/sessions/${sessionId}/tool-results/call_wx`, {
          token: ALICE,
          json: { output: 1 },
        })
      ).status,
    ).toBe(403);
    const ok = await call(gateway, 'POST', `/sessions/${sessionId}/tool-results/call_wx`, {
      token: BOB,
      json: { output: { rain: '80%' } },
    });
    expect(ok).toMatchObject({ status: 200, body: { applied: true, callId: 'call_wx' } });
    const done = await client.waitForDecision(sessionId, 2);
    expect(done?.agent).toMatchObject({ outcome: 'replied', reply: 'Pack a raincoat.' });
    // The client library hears it too.
    await expect(client.toolResult(sessionId, { callId: 'call_wx', output: 'late' })).rejects.toBeInstanceOf(
      ToolResultRefusedError,
    );
  });

  it('a JWT from the identity provider authenticates its subject with the permissions it carries; expired, other-audience, unsigned-by-the-JWKS and never-expiring tokens are refused', async () => {
    const sessionId = uniqueId('gt-jwt');
    const path = `/sessions/${sessionId}/messages`;
    const dana = await signJwt({ sub: 'dana', scope: 'openid send events' });
    expect((await call(gateway, 'POST', path, { token: dana, json: { text: GOAL } })).status).toBe(200);
    await waitFor(
      () => boundFrom(sessionId),
      (from) => from.length === 1,
    );
    expect(await boundFrom(sessionId)).toEqual([{ kind: 'user', id: 'dana' }]);
    // Her token carries no "approve".
    expect((await call(gateway, 'GET', '/approvals', { token: dana })).status).toBe(403);

    const refused = async (token: string, why: RegExp) => {
      const answer = await call(gateway, 'GET', `/sessions/${sessionId}/events.json`, { token });
      expect(answer.status).toBe(401);
      expect(answer.body.error).toMatch(why);
    };
    await refused(
      await signJwt({ sub: 'dana', scope: 'events' }, { expiresIn: '-10m' }),
      /"exp" claim timestamp check failed/,
    );
    await refused(await signJwt({ sub: 'dana', scope: 'events' }, { audience: 'another-service' }), /"aud" claim/);
    await refused(await forgeJwt({ sub: 'dana', scope: 'events' }), /signature verification failed/);
    await refused(await signJwt({ sub: 'dana', scope: 'events' }, { expiresIn: null }), /missing required "exp" claim/);
    await refused(await signJwt({ scope: 'events' }), /no usable "sub" claim/);
    expect((await call(gateway, 'GET', `/sessions/${sessionId}/events.json`, { token: dana })).status).toBe(200);
  });
});

describe('the guards, also without a token', () => {
  it('refuses a DNS-rebinding Host, a cross-site Origin or Sec-Fetch-Site, and a POST that is not JSON; a same-origin page passes', async () => {
    const sessionId = await waitingAdd('gt-guards', 'unused', 5, 6, open);
    const own = new URL(open.url).host;
    // Before: a page on rebind.attacker.example resolving to 127.0.0.1 read /approvals.
    const rebound = await call(open, 'GET', '/approvals', {
      headers: { host: `rebind.attacker.example:${new URL(open.url).port}` },
    });
    expect(rebound.status).toBe(421);
    const crossOrigin = await call(open, 'GET', '/approvals', { headers: { origin: 'https://evil.example' } });
    expect(crossOrigin.status).toBe(403);
    const crossSite = await call(open, 'GET', '/approvals', { headers: { 'sec-fetch-site': 'cross-site' } });
    expect(crossSite.status).toBe(403);
    // Before: a cross-site POST with no body approved the call.
    const bare = await call(open, 'POST', approvePath(sessionId));
    expect(bare.status).toBe(415);
    const form = await call(open, 'POST', approvePath(sessionId), {
      headers: { 'content-type': 'text/plain' },
      raw: '{}',
    });
    expect(form.status).toBe(415);
    expect((await client.snapshot(sessionId)).pendingApprovals).toHaveLength(1);
    // The inbox page's own requests (same origin) pass; in no-token mode the approver is "anonymous".
    const page = await call(open, 'GET', '/approvals', {
      headers: { origin: `http://${own}`, 'sec-fetch-site': 'same-origin' },
    });
    expect(page.status).toBe(200);
    const approved = await call(open, 'POST', approvePath(sessionId), {
      json: {},
      headers: { origin: `http://${own}` },
    });
    expect(approved).toMatchObject({ status: 200, body: { by: 'anonymous' } });
    // No identity to claim without a token.
    const claimed = await call(open, 'POST', `/sessions/${sessionId}/messages`, {
      json: { text: 'hi', from: { kind: 'user', id: 'alice' } },
    });
    expect(claimed.status).toBe(403);
  });

  it('caps event streams per principal (429 for the 21st) and reads each Session once for all its streams', async () => {
    const sessionId = uniqueId('gt-streams');
    expect(
      (await call(gateway, 'POST', `/sessions/${sessionId}/messages`, { token: ALICE, json: { text: GOAL } })).status,
    ).toBe(200);
    await client.waitForDecision(sessionId, 1);
    const streams = [];
    for (let i = 0; i < 20; i++) streams.push(await openStream(gateway, `/sessions/${sessionId}/events`, ALICE));
    try {
      expect(streams.map((s) => s.status)).toEqual(Array(20).fill(200));
      // Twenty streams of one Session, one reader of its log.
      expect(gateway.readers()).toBe(1);
      const over = await openStream(gateway, `/sessions/${sessionId}/events`, ALICE);
      expect(over.status).toBe(429);
      over.close();
      // The cap is per principal: carol still gets hers.
      const carols = await openStream(gateway, `/sessions/${sessionId}/events`, CAROL);
      expect(carols.status).toBe(200);
      carols.close();
      streams.pop()!.close();
      const again = await waitFor(
        async () => {
          const s = await openStream(gateway, `/sessions/${sessionId}/events`, ALICE);
          if (s.status !== 200) s.close();
          return s;
        },
        (s) => s.status === 200,
      );
      streams.push(again);
    } finally {
      for (const s of streams) s.close();
    }
    await waitFor(
      () => Promise.resolve(gateway.readers()),
      (n) => n === 0,
    );
  });
});

describe('harness and SessionClient record the configured signer', () => {
  const key: ControlKey = { id: 'gt-key', secret: randomBytes(32) };
  let signedWorker: TestWorker;

  beforeAll(async () => {
    signedWorker = await startWorker({
      models: scriptedModels(server),
      catalog,
      mcp,
      policy: { controlKeys: [key] },
    });
  });

  afterAll(async () => {
    await signedWorker?.stop();
  });

  function harness(args: string[], env: NodeJS.ProcessEnv) {
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('HARNESS_')),
    );
    const child = spawn(
      process.execPath,
      ['bin/harness.js', '--address', inject('temporalAddress'), '--task-queue', signedWorker.taskQueue, ...args],
      { env: { ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      child.once('close', (code) => resolve({ code, stdout, stderr })),
    );
  }

  it('`harness approve` exits 2 with the reason for a refused approval and prints no "approved"; signed, it records HARNESS_SIGNER_NAME', async () => {
    const signer = new SessionClient(signedWorker.client, { taskQueue: signedWorker.taskQueue, controlKey: key });
    const sessionId = uniqueId('gt-cli');
    await signer.submit(sessionId, { text: GOAL });
    await signer.waitForDecision(sessionId, 1);
    server.enqueue(
      MODEL.agent,
      { toolCalls: [{ id: 'call_1', name: 'add', arguments: { a: 4, b: 4 } }] },
      { content: 'Eight.' },
    );
    script.relevance.set(`add 4 and 4 (${sessionId})`, [0.9, 0.9]);
    await signer.submit(sessionId, { text: `add 4 and 4 (${sessionId})` });
    expect((await signer.waitForDecision(sessionId, 2))?.agent?.outcome).toBe('waiting-approval');

    // Before: the unsigned approval went by signal, was refused by the worker, and the CLI printed "approved".
    const unsigned = await harness(['approve', sessionId, '2:1:call_1'], { HARNESS_SIGNER_NAME: 'erin' });
    expect(unsigned.code).toBe(2);
    expect(unsigned.stdout).toBe('');
    expect(unsigned.stderr).toMatch(/refused the approval: unsigned approval/);
    // The approver is configuration, not a flag typed per call.
    const flagged = await harness(['approve', sessionId, '2:1:call_1', '--as', 'mallory'], {});
    expect(flagged.code).toBe(2);
    expect(flagged.stderr).toMatch(/unknown option '--as'/);

    const keyEnv = `${key.id}:${Buffer.from(key.secret).toString('base64')}`;
    const ok = await harness(['approve', sessionId, '2:1:call_1'], {
      HARNESS_CONTROL_KEY: keyEnv,
      HARNESS_SIGNER_NAME: 'erin',
    });
    expect(ok).toMatchObject({ code: 0, stderr: '' });
    expect(ok.stdout).toMatch(/^approved add/);
    const done = await signer.waitForDecision(sessionId, 2);
    expect(done?.agent?.toolCalls[0]).toMatchObject({
      status: 'ok',
      approval: expect.objectContaining({ by: 'erin' }),
    });

    // A client with a signer name refuses to name anyone else per call.
    await expect(
      signer.as('erin').approve(sessionId, '2:1:call_1', { approver: 'security-officer' }),
    ).rejects.toBeInstanceOf(InvalidInputError);
  });
});
