/**
 * The A2A push-notification guard (gateway/a2a/push.ts) and the shared host reading it stands on
 * (contract/url-hosts.ts): which hosts are not public however a URL writes them, which webhook URLs
 * are refused and why, every resolved address checked, the 5-configs-per-task cap and -32602
 * refusals; and, against real HTTP servers on 127.0.0.1, that a delivery re-resolves and connects
 * only to the address it just checked (a name that resolved public when saved and to 127.0.0.1 now
 * reaches nothing), that redirects are not followed and that a silent webhook times out.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import type { TaskPushNotificationConfig } from '@a2a-js/sdk';
import { toJsonRpcError } from '@a2a-js/sdk/errors';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalHost, nonPublicReason } from '../../contract/url-hosts.js';
import { a2aSettingsFromEnv } from '../../gateway/a2a/config.js';
import {
  GuardedPushStore,
  PUSH_MAX_CONFIGS_PER_TASK,
  WebhookGuard,
  WebhookRefusal,
  postWebhook,
  type ResolveHost,
} from '../../gateway/a2a/push.js';

const v4 = (address: string): LookupAddress => ({ address, family: 4 });
const v6 = (address: string): LookupAddress => ({ address, family: 6 });
/** A resolver from a table: what a DNS server for these test names would answer. */
const table =
  (answers: Record<string, LookupAddress[]>): ResolveHost =>
  (host) => {
    const found = answers[host];
    return found
      ? Promise.resolve(found)
      : Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }));
  };

describe('nonPublicReason: hosts that are not public, however a URL writes them', () => {
  const refused: Array<[string, RegExp]> = [
    ['127.0.0.1', /loopback/],
    ['127.1', /loopback/],
    ['127.0.1', /loopback/],
    ['0x7f.1', /loopback/],
    ['0x7f000001', /loopback/],
    ['0X7F.0.0.1', /loopback/],
    ['2130706433', /loopback/],
    ['017700000001', /loopback/],
    ['0177.0.0.1', /loopback/],
    ['127.255.255.254', /loopback/],
    ['10.0.0.5', /private/],
    ['012.0.0.5', /private/],
    ['167772165', /private/],
    ['172.16.0.1', /private/],
    ['172.31.255.255', /private/],
    ['192.168.1.1', /private/],
    ['0xc0a80101', /private/],
    ['169.254.169.254', /link-local/],
    ['0xA9FEA9FE', /link-local/],
    ['2852039166', /link-local/],
    ['0xA9.0376.0xA9FE', /link-local/],
    ['100.64.0.1', /carrier-grade NAT/],
    ['0.0.0.0', /unspecified/],
    ['0', /unspecified/],
    ['224.0.0.1', /multicast/],
    ['255.255.255.255', /broadcast/],
    ['240.0.0.1', /reserved/],
    ['::1', /loopback/],
    ['[::1]', /loopback/],
    ['0:0:0:0:0:0:0:1', /loopback/],
    ['::', /unspecified/],
    ['::ffff:127.0.0.1', /carries 127\.0\.0\.1, a loopback/],
    ['[::ffff:127.0.0.1]', /carries 127\.0\.0\.1, a loopback/],
    ['::ffff:7f00:1', /carries 127\.0\.0\.1, a loopback/],
    ['[0:0:0:0:0:ffff:7f00:0001]', /carries 127\.0\.0\.1/],
    ['::ffff:10.1.2.3', /carries 10\.1\.2\.3, a private/],
    ['::ffff:a9fe:a9fe', /carries 169\.254\.169\.254, a link-local/],
    ['::ffff:192.168.0.1', /private/],
    ['::127.0.0.1', /carries 127\.0\.0\.1/],
    ['64:ff9b::a9fe:a9fe', /carries 169\.254\.169\.254/],
    ['2002:7f00:1::', /carries 127\.0\.0\.1/],
    ['fe80::1', /link-local/],
    ['[fe80::1%25eth0]', /not a host name or address|link-local/],
    ['fc00::1', /private \(unique local\)/],
    ['fd12:3456:789a::1', /private \(unique local\)/],
    ['ff02::1', /multicast/],
    ['localhost', /names this machine/],
    ['LOCALHOST.', /names this machine/],
    ['api.localhost', /names this machine/],
    ['', /not a host name or address/],
    ['exa mple.com', /not a host name or address/],
  ];

  it.each(refused)('%s is refused', (host, reason) => {
    expect(nonPublicReason(host)).toMatch(reason);
  });

  it.each([
    '8.8.8.8',
    '93.184.216.34',
    '0x5db8d822',
    '1.1.1.1',
    '2606:4700:4700::1111',
    '[2001:4860:4860::8888]',
    '::ffff:8.8.8.8',
    'example.com',
    'hooks.example.org.',
  ])('%s may be public', (host) => {
    expect(nonPublicReason(host)).toBeNull();
  });

  it('reads a host as the URL parser does', () => {
    expect(canonicalHost('0x7f.1')).toBe('127.0.0.1');
    expect(canonicalHost('2130706433')).toBe('127.0.0.1');
    expect(canonicalHost('[::FFFF:127.0.0.1]')).toBe('::ffff:7f00:1');
    expect(canonicalHost('Example.COM.')).toBe('example.com');
    expect(canonicalHost('exa mple.com')).toBeNull();
    expect(nonPublicReason('[::ffff:127.0.0.1]')).toBe('::ffff:7f00:1 carries 127.0.0.1, a loopback address');
  });
});

describe('WebhookGuard: which URLs may be pushed to', () => {
  const guard = new WebhookGuard({ resolve: table({ 'hooks.example.com': [v4('93.184.216.34')] }) });
  const refusal = (url: string) => {
    try {
      guard.parse(url);
    } catch (err) {
      expect(err).toBeInstanceOf(WebhookRefusal);
      return (err as Error).message;
    }
    return null;
  };

  it('refuses other schemes, user names and passwords, and non-public literal hosts', () => {
    expect(refusal('ftp://hooks.example.com/x')).toBe('the scheme ftp: is not http: or https:');
    expect(refusal('file:///etc/passwd')).toMatch(/scheme file:/);
    expect(refusal('gopher://hooks.example.com/')).toMatch(/scheme gopher:/);
    expect(refusal('javascript:alert(1)')).toMatch(/scheme javascript:/);
    expect(refusal('ws://hooks.example.com/')).toMatch(/scheme ws:/);
    expect(refusal('http://user:secret@hooks.example.com/')).toMatch(/user name or password/);
    expect(refusal('http://user@hooks.example.com/')).toMatch(/user name or password/);
    expect(refusal('http://:secret@hooks.example.com/')).toMatch(/user name or password/);
    expect(refusal('not a url')).toMatch(/is not a URL/);
    expect(refusal(`https://hooks.example.com/${'a'.repeat(3000)}`)).toMatch(/longer than 2048/);
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://127.1/',
      'http://2130706433/',
      'http://0x7f000001/',
      'http://0177.0.0.1/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:7f00:1]/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:a9fe:a9fe]/',
      'https://10.0.0.5/',
      'http://192.168.1.1/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://0.0.0.0:80/',
      'http://localhost/',
      'http://LocalHost./',
      'http://x.localhost/',
    ]) {
      expect([url, refusal(url)]).toEqual([url, expect.stringContaining('HARNESS_A2A_PUSH_ALLOW_HOSTS')]);
    }
    expect(refusal('https://hooks.example.com/a2a?x=1')).toBeNull();
    expect(refusal('http://93.184.216.34/')).toBeNull();
  });

  it('lets the allowed hosts through, by name or address however written, and nothing else', () => {
    const allowing = new WebhookGuard({ allowHosts: ['127.0.0.1', 'Internal.Example'] });
    expect(allowing.parse('http://127.0.0.1:9/').hostname).toBe('127.0.0.1');
    expect(allowing.parse('http://2130706433:9/').hostname).toBe('127.0.0.1');
    expect(allowing.parse('http://internal.example./').hostname).toBe('internal.example.');
    expect(() => allowing.parse('http://127.0.0.2/')).toThrow(/loopback/);
    expect(() => allowing.parse('http://localhost/')).toThrow(/names this machine/);
    expect(() => allowing.parse('ftp://127.0.0.1/')).toThrow(/scheme/);
    expect(() => allowing.parse('http://u:p@127.0.0.1/')).toThrow(/user name/);
  });

  it('resolves the name and checks every address it has', async () => {
    const resolving = new WebhookGuard({
      resolve: table({
        'public.example': [v4('93.184.216.34'), v6('2606:2800:220:1::1')],
        'mixed.example': [v4('93.184.216.34'), v4('10.0.0.7')],
        'mapped.example': [v6('::ffff:127.0.0.1')],
        'meta.example': [v4('169.254.169.254')],
        'nothing.example': [],
      }),
    });
    await expect(resolving.check('https://public.example/hook')).resolves.toBeInstanceOf(URL);
    await expect(resolving.check('https://mixed.example/')).rejects.toThrow(
      'mixed.example resolves to 10.0.0.7: 10.0.0.7 is a private address',
    );
    await expect(resolving.check('https://mapped.example/')).rejects.toThrow(/resolves to ::ffff:127\.0\.0\.1/);
    await expect(resolving.check('https://meta.example/')).rejects.toThrow(/link-local/);
    await expect(resolving.check('https://nothing.example/')).rejects.toThrow(/resolves to no address/);
    await expect(resolving.check('https://unknown.example/')).rejects.toThrow(
      'unknown.example does not resolve (ENOTFOUND)',
    );
    expect(resolving.connectedReason('public.example', '127.0.0.1')).toMatch(/connected to 127\.0\.0\.1/);
    expect(resolving.connectedReason('public.example', '::ffff:10.0.0.1')).toMatch(/private/);
    expect(resolving.connectedReason('public.example', '93.184.216.34')).toBeNull();
  });
});

describe('GuardedPushStore', () => {
  const context = new ServerCallContext();
  const config = (url: string, id = ''): TaskPushNotificationConfig => ({
    tenant: '',
    id,
    taskId: 'task-1',
    url,
    token: '',
    authentication: undefined,
  });

  it('saves public URLs, at most 5 per task, and refuses with -32602 and the reason', async () => {
    const store = new GuardedPushStore(
      new WebhookGuard({ resolve: table({ 'hooks.example.com': [v4('93.184.216.34')] }) }),
    );
    for (let i = 0; i < PUSH_MAX_CONFIGS_PER_TASK; i++) {
      const saved = config(`https://hooks.example.com/${i}`);
      await store.save('task-1', context, saved);
      expect(saved.id).not.toBe('');
    }
    const full = await store.save('task-1', context, config('https://hooks.example.com/6')).catch((e: unknown) => e);
    expect(toJsonRpcError(full)).toMatchObject({ code: -32602, message: expect.stringContaining('already has 5') });
    // Replacing one of the five is not a sixth.
    const [first] = await store.load('task-1', context);
    await store.save('task-1', context, config('https://hooks.example.com/replaced', first!.id));
    expect((await store.load('task-1', context)).map((c) => c.url)).toContain('https://hooks.example.com/replaced');
    expect(await store.load('task-1', context)).toHaveLength(5);
    // Another task has its own five.
    await store.save('task-2', context, config('https://hooks.example.com/other'));

    for (const [url, message] of [
      ['http://10.0.0.5/hook', 'push notification URL refused: 10.0.0.5 is a private address'],
      ['http://[::ffff:127.0.0.1]/', 'push notification URL refused: ::ffff:7f00:1 carries 127.0.0.1'],
      ['ftp://hooks.example.com/', 'push notification URL refused: the scheme ftp: is not http: or https:'],
      ['https://nowhere.example/', 'push notification URL refused: nowhere.example does not resolve'],
    ] as const) {
      const error = await store.save('task-3', context, config(url)).catch((e: unknown) => e);
      expect([url, toJsonRpcError(error)]).toEqual([
        url,
        expect.objectContaining({ code: -32602, message: expect.stringContaining(message) }),
      ]);
    }
    expect(await store.load('task-3', context)).toEqual([]);
  });
});

describe('postWebhook on 127.0.0.1: pinned, re-checked, no redirects, a timeout', () => {
  let webhook: Server;
  let silent: Server;
  let port: number;
  const received: Array<{ url: string; body: string; headers: IncomingMessage['headers'] }> = [];

  beforeAll(async () => {
    webhook = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        received.push({ url: req.url ?? '', body, headers: req.headers });
        if (req.url === '/redirect') res.writeHead(307, { location: `http://127.0.0.1:${port}/target` }).end();
        else res.writeHead(204).end();
      });
    });
    silent = createServer(() => {
      // Never answers.
    });
    await Promise.all([
      new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve)),
      new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve)),
    ]);
    port = (webhook.address() as AddressInfo).port;
  });

  afterAll(async () => {
    silent.closeAllConnections();
    await Promise.all([
      new Promise((resolve) => webhook.close(resolve)),
      new Promise((resolve) => silent.close(resolve)),
    ]);
  });

  it('a name that resolved public when saved and to 127.0.0.1 at delivery reaches nothing (no DNS rebinding)', async () => {
    let lookups = 0;
    const rebinding: ResolveHost = (host) => {
      lookups += 1;
      return Promise.resolve(host === 'rebind.example' ? [v4(lookups === 1 ? '93.184.216.34' : '127.0.0.1')] : []);
    };
    const guard = new WebhookGuard({ resolve: rebinding });
    const url = await guard.check(`http://rebind.example:${port}/hook`);
    expect(lookups).toBe(1);
    const before = received.length;
    await expect(postWebhook(url, '{}', { 'content-type': 'application/json' }, guard)).rejects.toThrow(
      'rebind.example resolves to 127.0.0.1: 127.0.0.1 is a loopback address',
    );
    expect(lookups).toBe(2);
    expect(received.length).toBe(before);
    // A name that resolves to a public and a private address is refused as a whole.
    const mixed = new WebhookGuard({ resolve: table({ 'mixed.example': [v4('93.184.216.34'), v4('127.0.0.1')] }) });
    await expect(postWebhook(new URL(`http://mixed.example:${port}/`), '{}', {}, mixed)).rejects.toThrow(
      /127\.0\.0\.1/,
    );
    expect(received.length).toBe(before);
  });

  it('connects to the address the lookup checked: an allowed name resolved to 127.0.0.1 is delivered there', async () => {
    const guard = new WebhookGuard({
      allowHosts: ['hooks.test'],
      resolve: table({ 'hooks.test': [v4('127.0.0.1')] }),
    });
    const status = await postWebhook(new URL(`http://hooks.test:${port}/pinned`), '{"n":1}', { 'x-a': 'b' }, guard);
    expect(status).toBe(204);
    expect(received.at(-1)).toMatchObject({
      url: '/pinned',
      body: '{"n":1}',
      headers: { host: `hooks.test:${port}`, 'x-a': 'b' },
    });
  });

  it('does not follow a redirect, and gives up on a silent webhook', async () => {
    const guard = new WebhookGuard({ allowHosts: ['127.0.0.1'] });
    const before = received.length;
    await expect(postWebhook(new URL(`http://127.0.0.1:${port}/redirect`), '{}', {}, guard)).rejects.toThrow(
      'answered 307; redirects are not followed',
    );
    expect(received.slice(before).map((r) => r.url)).toEqual(['/redirect']);
    const silentPort = (silent.address() as AddressInfo).port;
    const started = Date.now();
    await expect(postWebhook(new URL(`http://127.0.0.1:${silentPort}/`), '{}', {}, guard, 300)).rejects.toThrow(
      'no answer within 300 ms',
    );
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

describe('HARNESS_A2A_PUSH and HARNESS_A2A_PUSH_ALLOW_HOSTS', () => {
  it('push is on by default, off when asked, and the allow list is read and checked', () => {
    expect(a2aSettingsFromEnv({}).push).toEqual({ enabled: true, allowHosts: [] });
    expect(a2aSettingsFromEnv({ HARNESS_A2A_PUSH: 'off' }).push?.enabled).toBe(false);
    expect(a2aSettingsFromEnv({ HARNESS_A2A_PUSH: ' ON ' }).push?.enabled).toBe(true);
    expect(() => a2aSettingsFromEnv({ HARNESS_A2A_PUSH: 'no' })).toThrow('HARNESS_A2A_PUSH must be "on" or "off"');
    expect(
      a2aSettingsFromEnv({ HARNESS_A2A_PUSH_ALLOW_HOSTS: ' 127.0.0.1, hooks.internal ,,' }).push?.allowHosts,
    ).toEqual(['127.0.0.1', 'hooks.internal']);
    expect(() => a2aSettingsFromEnv({ HARNESS_A2A_PUSH_ALLOW_HOSTS: 'good.example, bad host' })).toThrow(
      'HARNESS_A2A_PUSH_ALLOW_HOSTS: "bad host" is not a host name or address',
    );
  });
});
