/**
 * How a URL's host is read and whether it is public: shared by the approval policy's `host`
 * conditions (capabilities/tool-policy.ts) and the A2A push-notification guard (gateway/a2a/push.ts),
 * so both read `0x7f.1`, `2130706433` and `[::ffff:127.0.0.1]` as the same address fetch would reach.
 *
 * Pure module: no Node built-ins (the WHATWG `URL` parser is a global everywhere this runs).
 */
import ipaddr from 'ipaddr.js';

/** An IPv4 or IPv6 address as ipaddr.js parses it. */
export type HostAddress = ipaddr.IPv4 | ipaddr.IPv6;

/** A host as compared: lowercase, no trailing dot, no brackets around an IPv6 address. */
export function normaliseHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[(.*)\]$/, '$1');
}

/**
 * The host as the URL parser (the one fetch and Node's http use) reads it, normalised: numeric IPv4
 * forms become dotted quads (`0x7f.1`, `017700000001` and `2130706433` are `127.0.0.1`), IPv6 is
 * compressed, names are lowercased and punycoded. Null when no URL could have this host.
 */
export function canonicalHost(host: string): string | null {
  const bare = normaliseHost(host.trim());
  if (bare === '') return null;
  try {
    const { hostname } = new URL(`http://${ipaddr.IPv6.isValid(bare) ? `[${bare}]` : bare}/`);
    return hostname ? normaliseHost(hostname) : null;
  } catch {
    return null;
  }
}

/**
 * The address a host names (as written: see {@link canonicalHost} for other spellings), then an
 * IPv4 address inside an IPv6 one (mapped, compatible, NAT64, 6to4). Empty for a name.
 */
export function hostAddresses(host: string): HostAddress[] {
  if (!ipaddr.isValid(host)) return [];
  const parsed = ipaddr.parse(host);
  const found: HostAddress[] = [parsed];
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    const bytes = v6.toByteArray();
    const range = v6.range();
    if (v6.isIPv4MappedAddress()) found.push(v6.toIPv4Address());
    else if (range === '6to4') found.push(new ipaddr.IPv4(bytes.slice(2, 6)));
    else if (range === 'rfc6052' || range === 'rfc6145' || bytes.slice(0, 12).every((b) => b === 0)) {
      found.push(new ipaddr.IPv4(bytes.slice(12, 16)));
    }
  }
  return found;
}

/** What an ipaddr.js range is called in a refusal ("… is a loopback address"). */
const RANGE_WORDS: Record<string, string> = {
  unspecified: 'an unspecified (this-host)',
  broadcast: 'a broadcast',
  multicast: 'a multicast',
  linkLocal: 'a link-local',
  loopback: 'a loopback',
  carrierGradeNat: 'a shared (carrier-grade NAT)',
  private: 'a private',
  uniqueLocal: 'a private (unique local)',
  deprecatedSiteLocal: 'a site-local',
  reserved: 'a reserved',
};

function addressReason(address: HostAddress): string | null {
  const range = address.range();
  if (range === 'unicast') return null;
  return `${RANGE_WORDS[range] ?? `a special-purpose (${range})`} address`;
}

/**
 * Why a host is not a public internet host, or null when it may be one: a loopback, private,
 * link-local, unspecified, multicast or otherwise special-purpose address however the URL writes it
 * (decimal, hex and octal IPv4, IPv4-mapped and other IPv6 forms that carry an IPv4 address),
 * `localhost` and `*.localhost`, or something no URL could name. A name is not resolved here: a
 * caller that connects must check each address the name resolves to as well.
 */
export function nonPublicReason(host: string): string | null {
  const canonical = canonicalHost(host);
  if (canonical === null) return `${JSON.stringify(host)} is not a host name or address`;
  if (canonical === 'localhost' || canonical.endsWith('.localhost')) return `${canonical} names this machine`;
  if (!ipaddr.IPv4.isValidFourPartDecimal(canonical) && !ipaddr.IPv6.isValid(canonical)) return null;
  const [address, embedded] = hostAddresses(canonical);
  if (!address) return null;
  if (embedded) {
    // The IPv6 form says nothing of its own here (::1 and :: aside): the IPv4 address inside is reached.
    const own = address.range();
    if (own === 'loopback' || own === 'unspecified') return `${canonical} is ${addressReason(address)}`;
    const inner = addressReason(embedded);
    return inner ? `${canonical} carries ${embedded.toString()}, ${inner}` : null;
  }
  const reason = addressReason(address);
  return reason ? `${canonical} is ${reason}` : null;
}
