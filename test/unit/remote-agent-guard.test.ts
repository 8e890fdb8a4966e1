/**
 * The remote A2A agents' outbound guard (activities/remote-agent.ts): every request the SDK's client
 * makes is checked (scheme, userinfo, a public host, every address a name resolves to) unless the
 * allow list names the host, and the bearer token goes only to the configured URL's origin.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedFetch, parseRemoteAgents, RemoteAgentRefusal } from '../../activities/remote-agent.js';

let server: Server;
let base: string;
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A resolver that answers from a table, so no test depends on DNS. */
const table =
  (addresses: Record<string, string[]>) =>
  (host: string): Promise<Array<{ address: string }>> =>
    Promise.resolve((addresses[host] ?? []).map((address) => ({ address })));

describe('guardedFetch', () => {
  it('refuses non-public hosts however they are written, and names that resolve to one', async () => {
    const guarded = guardedFetch(
      { allowHosts: [] },
      { url: 'https://agents.example.com/' },
      table({
        'inside.example.com': ['93.184.216.34', '10.1.2.3'],
      }),
    );
    for (const url of [
      'http://127.0.0.1/',
      'http://0x7f.1/',
      'http://[::ffff:127.0.0.1]/',
      'http://169.254.169.254/',
      'http://localhost/',
    ]) {
      await expect(guarded(url)).rejects.toThrow(RemoteAgentRefusal);
    }
    await expect(guarded('https://inside.example.com/rpc')).rejects.toThrow(
      'inside.example.com resolves to 10.1.2.3: 10.1.2.3 is a private address',
    );
    await expect(guarded('file:///etc/passwd')).rejects.toThrow('the scheme file: is not http: or https:');
    await expect(guarded('http://user:pw@agents.example.com/')).rejects.toThrow('user name or password');
  });

  it('lets an allowed host through and sends the token only to the configured origin', async () => {
    const allowed = { allowHosts: ['127.0.0.1'] };
    const withToken = guardedFetch(allowed, { url: `${base}/card.json`, token: 'secret' });
    await withToken(`${base}/rpc`, { headers: { authorization: 'Bearer forged' } });
    expect(seen.at(-1)?.authorization).toBe('Bearer secret');
    // The card pointed elsewhere (another port is another origin): no token there.
    const elsewhere = guardedFetch(allowed, { url: 'http://127.0.0.1:1/card.json', token: 'secret' });
    await elsewhere(`${base}/rpc`, { headers: { authorization: 'Bearer secret' } });
    expect(seen.at(-1)?.authorization).toBeUndefined();
  });
});

describe('parseRemoteAgents', () => {
  it('reads the token from the named variable and refuses a bad allow-list entry', () => {
    const agents = JSON.stringify({ a: { url: 'https://agents.example.com/', tokenEnv: 'A_TOKEN' } });
    expect(parseRemoteAgents({ HARNESS_A2A_REMOTE_AGENTS: agents, A_TOKEN: ' t0k ' }).agents.a).toEqual({
      name: 'a',
      url: 'https://agents.example.com/',
      token: 't0k',
    });
    expect(() => parseRemoteAgents({ HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS: 'a b' })).toThrow(
      'HARNESS_A2A_REMOTE_AGENTS_ALLOW_HOSTS: "a b" is not a host name or address',
    );
    expect(parseRemoteAgents({}).agents).toEqual({});
  });
});
