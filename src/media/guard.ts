import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { IntakeError } from '../core/errors.js';

/** Why an address or URL may not be fetched (undefined when it may). */
export type Refusal = string | undefined;

/**
 * Only globally routable unicast addresses may be fetched. ipaddr.js names the special
 * ranges (loopback, private, link-local, CGNAT, unique-local, multicast, reserved, 6to4,
 * NAT64, Teredo, ...); what it calls unicast but is not is added here: the deprecated
 * IPv4-compatible block ::/96 (`::7f00:1` reaches 127.0.0.1 on some stacks).
 */
export function refuseAddress(address: string): Refusal {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return `"${address}" is not an IP address`;
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return refuseAddress(v6.toIPv4Address().toString());
    if (v6.parts.slice(0, 6).every((part) => part === 0)) return `${address} is in ::/96 (embeds an IPv4 address)`;
  }
  const range = parsed.range();
  return range === 'unicast' ? undefined : `${address} is a ${range} address`;
}

/** Names that always mean this machine, whatever DNS says. */
function isLocalName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || name === 'localhost.localdomain';
}

export interface UrlPolicy {
  /** `host` or `host:port` entries exempt from the address block. */
  allowHosts: readonly string[];
  /** Ports allowed besides the scheme's default. */
  allowPorts: readonly number[];
}

/** A URL checked before any connection: scheme, port, literal addresses and local names. */
export interface CheckedUrl {
  url: URL;
  /** Exempt by `media.allowHosts`: connect without the address block. */
  exempt: boolean;
}

/**
 * Check a URL before connecting. The WHATWG parser has already normalized IPv4 literals in
 * decimal, hex, octal and short forms (`2130706434`, `0x7f000002`, `127.1` -> `127.0.0.x`).
 * Names are checked again at connect time by `guardedLookup`, against the address used.
 */
export function checkUrl(raw: string | URL, policy: UrlPolicy): CheckedUrl | { refusal: string } {
  let url: URL;
  try {
    url = typeof raw === 'string' ? new URL(raw) : raw;
  } catch {
    return { refusal: 'not a valid URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return { refusal: `scheme "${url.protocol}" is not allowed (http and https only)` };
  if (url.username || url.password) return { refusal: 'credentials in the URL are not allowed' };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const hostPort = `${url.hostname}:${port}`.toLowerCase();
  const exempt = policy.allowHosts.some((entry) => {
    const lower = entry.toLowerCase();
    return lower === hostPort || lower === url.hostname.toLowerCase();
  });
  if (exempt) return { url, exempt: true };
  if (url.port && !policy.allowPorts.includes(port))
    return { refusal: `port ${port} is not allowed (default ports only, or media.allowPorts)` };
  if (isLocalName(host)) return { refusal: `"${host}" is a local name` };
  if (isIP(host)) {
    const refusal = refuseAddress(host);
    if (refusal) return { refusal };
  }
  return { url, exempt: false };
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The error a blocked resolution fails the connection with (the fetcher turns it into a `blocked` failure). */
export class BlockedAddressError extends IntakeError {
  override name = 'BlockedAddressError';
  /** Never retried: the same name resolves to the same refused address. */
  readonly kind = 'blocked';
  readonly retryable = false;
  constructor(message: string) {
    super('media_blocked', 502, message, { stage: 'media' });
  }
}

/**
 * A `lookup` for the connector: resolves the name, refuses when any address is blocked, and
 * hands the checked addresses to the socket, so the address checked is the address used
 * (no second resolution for a DNS-rebinding server to answer differently).
 */
export function guardedLookup(
  hostname: string,
  options: { all?: boolean; family?: number } | number,
  callback: LookupCallback,
): void {
  guardLookup(dnsLookup)(hostname, options, callback);
}

type Resolver = (
  hostname: string,
  options: { all: true; family: number },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** Wrap a resolver (dns.lookup, or a fake one in tests) with the address check. */
export function guardLookup(resolver: Resolver) {
  return (hostname: string, options: { all?: boolean; family?: number } | number, callback: LookupCallback): void => {
    const opts = typeof options === 'number' ? { family: options } : options;
    resolver(hostname, { all: true, family: opts.family ?? 0 }, (error, addresses) => {
      if (error) return callback(error, []);
      for (const { address } of addresses) {
        const refusal = refuseAddress(address);
        if (refusal) return callback(new BlockedAddressError(`${hostname} resolves to ${refusal}`), []);
      }
      if (opts.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(new BlockedAddressError(`${hostname} has no address`), []);
      callback(null, first.address, first.family);
    });
  };
}
