/**
 * A2A push notifications, guarded against server-side request forgery: a caller names a webhook URL
 * and the gateway POSTs the task's updates to it, so without a guard any token holder could make the
 * gateway reach its own loopback, the cloud metadata service or the private network behind it.
 *
 * - {@link WebhookGuard} decides which URLs may be pushed to: http or https only, no user name or
 *   password in the URL, and a host that is public ({@link nonPublicReason}: no loopback, private,
 *   link-local or other special-purpose address, however written, IPv4-mapped IPv6 included) and whose
 *   every resolved address is public. `HARNESS_A2A_PUSH_ALLOW_HOSTS` names hosts let through as they are.
 * - {@link GuardedPushStore} is the SDK's PushNotificationStore with the guard at the door: a config is
 *   saved only when its URL passes (DNS resolved and every address checked), at most
 *   {@link PUSH_MAX_CONFIGS_PER_TASK} per task; a refusal is the SDK's RequestMalformedError, which the
 *   JSON-RPC binding answers as -32602 with the reason.
 * - {@link GuardedPushSender} is the SDK's PushNotificationSender that delivers through the guard
 *   again: the host is resolved anew when it connects and the connection goes only to addresses just
 *   checked (a custom `lookup`, so a name that resolved to a public address when saved and to
 *   127.0.0.1 now is refused: no DNS rebinding), the connected address is checked once more before a
 *   byte is sent, redirects are not followed, and each POST has {@link PUSH_TIMEOUT_MS} to answer.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { StreamResponse, Task, TaskPushNotificationConfig } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import {
  InMemoryPushNotificationStore,
  V1PushNotificationSerializer,
  type PushNotificationSender,
  type PushNotificationSerializer,
  type PushNotificationStore,
  type ServerCallContext,
  type StoredPushNotificationConfig,
} from '@a2a-js/sdk/server';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import { canonicalHost, nonPublicReason, normaliseHost } from '../../contract/url-hosts.js';

/** Push-notification settings: HARNESS_A2A_PUSH (`off` disables) and HARNESS_A2A_PUSH_ALLOW_HOSTS. */
export interface PushSettings {
  enabled: boolean;
  /** Hosts (names or addresses) pushed to without the public-address checks. */
  allowHosts: string[];
}

export const PUSH_MAX_CONFIGS_PER_TASK = 5;
export const PUSH_TIMEOUT_MS = 5_000;
/** Longest webhook URL accepted. */
const MAX_URL_LENGTH = 2_048;
/** Notifications of one task waiting for a slow webhook before reply pieces are skipped. */
const MAX_BACKLOG = 64;

/** Resolves a host name to every address it has (the system resolver by default). */
export type ResolveHost = (host: string) => Promise<LookupAddress[]>;

const systemResolve: ResolveHost = (host) => dnsLookup(host, { all: true, verbatim: true });

/** A webhook URL the guard will not push to; the message says why. */
export class WebhookRefusal extends Error {
  override name = 'WebhookRefusal';
}

/** Which webhook URLs may be pushed to, and the `lookup` that keeps a connection to checked addresses. */
export class WebhookGuard {
  private readonly allowed: Set<string>;
  private readonly resolve: ResolveHost;

  constructor(options: { allowHosts?: readonly string[]; resolve?: ResolveHost } = {}) {
    this.allowed = new Set((options.allowHosts ?? []).map((h) => canonicalHost(h) ?? normaliseHost(h)));
    this.resolve = options.resolve ?? systemResolve;
  }

  /** Whether `host` is one HARNESS_A2A_PUSH_ALLOW_HOSTS lets through. */
  allows(host: string): boolean {
    return this.allowed.has(canonicalHost(host) ?? normaliseHost(host));
  }

  /** The URL when its form may be pushed to (scheme, userinfo, a literal address); throws WebhookRefusal. */
  parse(raw: string): URL {
    if (raw.length > MAX_URL_LENGTH) throw new WebhookRefusal(`the URL is longer than ${MAX_URL_LENGTH} characters`);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new WebhookRefusal(`${JSON.stringify(raw.slice(0, 200))} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new WebhookRefusal(`the scheme ${url.protocol} is not http: or https:`);
    }
    if (url.username || url.password) {
      throw new WebhookRefusal(
        'a URL with a user name or password is not accepted (put credentials in the config’s authentication)',
      );
    }
    const host = normaliseHost(url.hostname);
    if (this.allows(host)) return url;
    const reason = nonPublicReason(host);
    if (reason) throw new WebhookRefusal(withHint(reason));
    return url;
  }

  /** {@link parse}, then the host resolved and every address it has checked; throws WebhookRefusal. */
  async check(raw: string): Promise<URL> {
    const url = this.parse(raw);
    await this.addressesOf(url.hostname);
    return url;
  }

  /** Every address `host` resolves to, each checked (unless the host is allowed); throws WebhookRefusal. */
  async addressesOf(host: string): Promise<LookupAddress[]> {
    const name = normaliseHost(host);
    let addresses: LookupAddress[];
    try {
      addresses = await this.resolve(name);
    } catch (err) {
      throw new WebhookRefusal(`${name} does not resolve (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    if (addresses.length === 0) throw new WebhookRefusal(`${name} resolves to no address`);
    if (this.allows(name)) return addresses;
    for (const { address } of addresses) {
      const reason = nonPublicReason(address);
      if (reason) throw new WebhookRefusal(withHint(`${name} resolves to ${address}: ${reason}`));
    }
    return addresses;
  }

  /** Why a connection to `host` that reached `address` must not be used, or null. */
  connectedReason(host: string, address: string | undefined): string | null {
    if (this.allows(host)) return null;
    if (!address) return `the connection to ${host} has no remote address`;
    const reason = nonPublicReason(address);
    return reason ? withHint(`${host} connected to ${address}: ${reason}`) : null;
  }

  /**
   * A `lookup` for Node's http(s) requests: resolves and checks as {@link addressesOf}, and hands the
   * connection only the addresses it checked, so what is reached is what was judged.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.addressesOf(hostname).then(
      (addresses) => {
        if (options.all) return callback(null, addresses);
        const first = addresses.find((a) => !options.family || a.family === options.family) ?? addresses[0]!;
        callback(null, first.address, first.family);
      },
      (err: Error) => callback(Object.assign(err, { code: 'EPUSHREFUSED' }), '', 0),
    );
  };
}

function withHint(reason: string): string {
  return `${reason} (HARNESS_A2A_PUSH_ALLOW_HOSTS lets a named host through)`;
}

/** The SDK's in-memory store behind the guard: only URLs that pass are saved, a few per task. */
export class GuardedPushStore implements PushNotificationStore {
  private readonly inner = new InMemoryPushNotificationStore();

  constructor(private readonly guard: WebhookGuard) {}

  async save(taskId: string, context: ServerCallContext, config: TaskPushNotificationConfig): Promise<void> {
    const existing = await this.inner.load(taskId, context);
    const replaces = config.id !== '' && existing.some((c) => c.id === config.id);
    if (!replaces && existing.length >= PUSH_MAX_CONFIGS_PER_TASK) {
      throw new RequestMalformedError(
        `task ${taskId} already has ${PUSH_MAX_CONFIGS_PER_TASK} push notification configs, the most a task may have; delete one first`,
      );
    }
    try {
      await this.guard.check(config.url);
    } catch (err) {
      if (err instanceof WebhookRefusal) {
        throw new RequestMalformedError(`push notification URL refused: ${err.message}`);
      }
      throw err;
    }
    await this.inner.save(taskId, context, config);
  }

  load(taskId: string, context: ServerCallContext): Promise<TaskPushNotificationConfig[]> {
    return this.inner.load(taskId, context);
  }

  loadWithMetadata(taskId: string, context: ServerCallContext): Promise<StoredPushNotificationConfig[]> {
    return this.inner.loadWithMetadata(taskId, context);
  }

  delete(taskId: string, context: ServerCallContext, configId?: string): Promise<void> {
    return this.inner.delete(taskId, context, configId);
  }
}

/**
 * Delivers each task update to the task's webhooks, in order per task, through the guard. Failures
 * are logged, never thrown: the SDK sends notifications beside the stream, not in its way.
 */
export class GuardedPushSender implements PushNotificationSender {
  /** The notifications of each task, one after another. */
  private readonly chains = new Map<string, { tail: Promise<void>; waiting: number }>();
  private readonly serializers: Record<string, PushNotificationSerializer> = {
    '1.0': new V1PushNotificationSerializer(),
    '0.3': new V03PushNotificationSerializer(),
  };

  constructor(
    private readonly store: GuardedPushStore,
    private readonly guard: WebhookGuard,
    private readonly log: (line: string) => void,
    private readonly timeoutMs = PUSH_TIMEOUT_MS,
  ) {}

  async send(response: StreamResponse, context: ServerCallContext, task?: Task): Promise<void> {
    const taskId = taskIdOf(response);
    if (!taskId) return;
    const chain = this.chains.get(taskId) ?? { tail: Promise.resolve(), waiting: 0 };
    const payload = response.payload;
    // A webhook far behind gets the statuses and the whole reply, not every piece of it.
    if (chain.waiting >= MAX_BACKLOG && payload?.$case === 'artifactUpdate' && payload.value.append) return;
    chain.waiting += 1;
    // In the chain from the start (the configs read in it too), so updates leave in the order they came.
    const run = chain.tail
      .then(async () => {
        const configs = await this.store.loadWithMetadata(taskId, context);
        await Promise.all(configs.map((stored) => this.deliver(stored, response, taskId, task)));
      })
      .catch((err: Error) => this.log(`gateway: A2A push notifications of task ${taskId}: ${err.message}`));
    chain.tail = run.finally(() => {
      chain.waiting -= 1;
      if (chain.waiting === 0 && this.chains.get(taskId) === chain) this.chains.delete(taskId);
    });
    this.chains.set(taskId, chain);
    return chain.tail;
  }

  private async deliver(stored: StoredPushNotificationConfig, response: StreamResponse, taskId: string, task?: Task) {
    const { config } = stored;
    try {
      const url = this.guard.parse(config.url);
      const serializer = this.serializers[stored.wireVersion] ?? this.serializers['1.0']!;
      const { body, contentType } = serializer.serialize(response, task);
      const headers: Record<string, string> = { 'content-type': contentType };
      if (config.authentication?.scheme && config.authentication.credentials) {
        headers.authorization = `${config.authentication.scheme} ${config.authentication.credentials}`;
      } else if (config.token) {
        headers['x-a2a-notification-token'] = config.token;
      }
      await postWebhook(url, body, headers, this.guard, this.timeoutMs);
    } catch (err) {
      this.log(`gateway: A2A push notification of task ${taskId} to ${config.url} failed: ${(err as Error).message}`);
    }
  }
}

/**
 * POSTs `body` to `url` through the guard: the host resolved and checked as it connects, the
 * connected address checked before the request is written, no redirect followed, `timeoutMs` for
 * the whole exchange. Resolves with the status of a 2xx answer; rejects otherwise.
 */
export function postWebhook(
  url: URL,
  body: string,
  headers: Record<string, string>,
  guard: WebhookGuard,
  timeoutMs = PUSH_TIMEOUT_MS,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const host = normaliseHost(url.hostname);
    // A bad header value throws here, which rejects the promise.
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      // A fresh connection each time, so each one goes through the lookup.
      agent: false,
      lookup: guard.lookup,
    });
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    request.on('close', () => clearTimeout(timer));
    request.on('error', reject);
    request.on('socket', (socket) => {
      // Nothing is written before the address actually reached has been checked.
      socket.once('connect', () => {
        const reason = guard.connectedReason(host, socket.remoteAddress);
        if (reason) request.destroy(new WebhookRefusal(reason));
        else request.end(body);
      });
    });
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      response.resume();
      if (status >= 200 && status < 300) resolve(status);
      else if (status >= 300 && status < 400) reject(new Error(`answered ${status}; redirects are not followed`));
      else reject(new Error(`answered ${status}`));
    });
  });
}

function taskIdOf(response: StreamResponse): string {
  const payload = response.payload;
  switch (payload?.$case) {
    case 'task':
      return payload.value.id;
    case 'statusUpdate':
    case 'artifactUpdate':
    case 'message':
      return payload.value.taskId;
    default:
      return '';
  }
}
