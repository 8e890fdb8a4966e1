/**
 * The gateway's checks that come before authentication, in every mode (also `--insecure-no-token`):
 * the `Host` header against an allow-list (a DNS-rebinding page reaches the port under its own
 * name), browser requests from other sites (`Origin`, `Sec-Fetch-Site`), and POST bodies that must
 * be JSON (a cross-site form or a `fetch` with no body cannot answer an approval). And the cap on
 * open event streams per principal.
 */

/** `Host` values a gateway on `host:port` answers to when none are configured: loopback names and its bound address. */
export function defaultHosts(host: string, port: number): string[] {
  const names = new Set(['localhost', '127.0.0.1', '[::1]']);
  // A wildcard address is no name a client uses: list the real ones with HARNESS_GATEWAY_HOSTS.
  if (host !== '0.0.0.0' && host !== '::') names.add(host.includes(':') ? `[${host}]` : host);
  return [...names].map((name) => `${name}:${port}`);
}

export interface GuardSettings {
  /** Exact `Host` values accepted (`gateway.example.com`, `localhost:7244`), case-insensitive. */
  allowedHosts: readonly string[];
  /** Browser origins allowed besides the gateway's own (`https://ops.example.com`). `*` is refused. */
  allowedOrigins?: readonly string[];
}

/** Why a request is refused before authentication, as an HTTP status and a reason; null when it passes. */
export type GuardVerdict = { status: number; error: string } | null;

/** The checks of `settings`, as one function of the request's method and headers. */
export function makeGuard(
  settings: GuardSettings,
): (method: string, headers: Record<string, string | string[] | undefined>) => GuardVerdict {
  const hosts = new Set(settings.allowedHosts.map((h) => h.trim().toLowerCase()).filter(Boolean));
  const origins = new Set(settings.allowedOrigins ?? []);
  if (origins.has('*')) throw new Error('HARNESS_GATEWAY_ORIGINS: "*" is never allowed; list the origins');
  return (method, headers) => {
    const host = one(headers.host)?.toLowerCase() ?? '';
    if (!hosts.has(host)) {
      // 421 Misdirected Request, as the codec server answers: this server is not that name.
      return { status: 421, error: `unknown Host ${JSON.stringify(host)} (allowed: HARNESS_GATEWAY_HOSTS)` };
    }
    const origin = one(headers.origin);
    // Browsers send Origin on cross-origin requests and on same-origin POSTs; its host must be this one.
    if (origin !== undefined && !origins.has(origin) && !sameOrigin(origin, host)) {
      return { status: 403, error: `origin ${JSON.stringify(origin)} is not allowed (HARNESS_GATEWAY_ORIGINS)` };
    }
    if (one(headers['sec-fetch-site']) === 'cross-site' && (origin === undefined || !origins.has(origin))) {
      return { status: 403, error: 'cross-site requests are refused' };
    }
    if (method === 'POST') {
      const type = one(headers['content-type'])?.split(';')[0]?.trim().toLowerCase();
      // A form or a bodiless fetch from any page is a "simple" request that skips CORS preflight;
      // requiring JSON makes every write one a page on another site cannot send.
      if (type !== 'application/json') return { status: 415, error: 'POST bodies must be application/json' };
    }
    return null;
  };
}

function one(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function sameOrigin(origin: string, host: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.host.toLowerCase() === host;
  } catch {
    return false;
  }
}

/** Counts open event streams per principal; `open` refuses past the cap. */
export class StreamLimiter {
  private readonly open = new Map<string, number>();

  constructor(readonly maxPerPrincipal: number) {}

  /** Opens a stream for `principal`: its release function, or null when the principal is at the cap. */
  acquire(principal: string): (() => void) | null {
    const now = this.open.get(principal) ?? 0;
    if (now >= this.maxPerPrincipal) return null;
    this.open.set(principal, now + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(principal) ?? 1) - 1;
      if (left <= 0) this.open.delete(principal);
      else this.open.set(principal, left);
    };
  }

  /** Open streams of a principal. */
  count(principal: string): number {
    return this.open.get(principal) ?? 0;
  }
}
