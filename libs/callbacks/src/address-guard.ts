import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { IPv4, IPv6 } from 'ipaddr.js';

/** Names for the refusal message; ipaddr.js's own range name otherwise (reserved, multicast, teredo...). */
const RANGE_WORDS: Record<string, string> = {
  linkLocal: 'link-local',
  carrierGradeNat: 'cgnat',
  uniqueLocal: 'unique-local',
  deprecatedSiteLocal: 'site-local',
  rfc6052: 'local-use NAT64',
};

// Cloud metadata endpoints are link-local, CGNAT or unique-local already: the name only makes the log clearer.
const METADATA = new Set(['169.254.169.254', 'fd00:ec2::254', '100.100.100.200']);

const GLOBAL_UNICAST_V6: [IPv6, number] = [IPv6.parse('2000::'), 3];
const WELL_KNOWN_NAT64: [IPv6, number] = [IPv6.parse('64:ff9b::'), 96];

function word(range: string): string {
  return RANGE_WORDS[range] ?? range;
}

function ipv4FromWords(high: number, low: number): IPv4 {
  return new IPv4([high >> 8, high & 255, low >> 8, low & 255]);
}

/**
 * The IPv4 address inside an IPv6 transition form whose position the standard fixes: mapped
 * (::ffff:0:0/96), translated (::ffff:0:0:0/96), well-known NAT64 (64:ff9b::/96) and 6to4
 * (2002::/16). Teredo and local-use NAT64 (64:ff9b:1::/48, any prefix length) are not read:
 * they are refused.
 */
function embeddedIpv4Of(ip: IPv6): IPv4 | null {
  const p = ip.parts;
  switch (ip.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return ipv4FromWords(p[6], p[7]);
    case 'rfc6052':
      return ip.match(...WELL_KNOWN_NAT64) ? ipv4FromWords(p[6], p[7]) : null;
    case '6to4':
      return ipv4FromWords(p[1], p[2]);
    default:
      return null;
  }
}

/** The IPv4 address an IPv6 address carries (see embeddedIpv4Of), as text; null for any other address. */
export function embeddedIpv4(address: string): string | null {
  return isIP(address) === 6 ? (embeddedIpv4Of(IPv6.parse(address))?.toString() ?? null) : null;
}

function ipv4Verdict(ip: IPv4): string | null {
  if (METADATA.has(ip.toString())) return 'metadata';
  const range = ip.range();
  return range === 'unicast' ? null : word(range);
}

/**
 * Why an IP address may not receive a callback, or null when it is global unicast (SPEC 7).
 * ipaddr.js classifies; an IPv6 transition form is judged by the IPv4 address it embeds, and
 * IPv6 must also lie in 2000::/3, so anything not yet allocated is refused too. Not an IP: 'reserved'.
 */
export function blockedRange(address: string): string | null {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return 'reserved';
  if (family === 4) return ipv4Verdict(IPv4.parse(bare));
  const ip = IPv6.parse(bare);
  const inner = embeddedIpv4Of(ip);
  if (inner) return ipv4Verdict(inner);
  if (METADATA.has(ip.toString())) return 'metadata';
  const range = ip.range();
  if (range !== 'unicast') return word(range);
  return ip.match(...GLOBAL_UNICAST_V6) ? null : 'non-global';
}

/** A callback address refused before any connection was made. */
export class BlockedAddressError extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly range: string,
  ) {
    super(
      host === address
        ? `refused: callback address ${address} is a ${range} address (set CALLBACK_ALLOW_PRIVATE=true to allow)`
        : `refused: callback host ${host} resolves to ${address}, a ${range} address (set CALLBACK_ALLOW_PRIVATE=true to allow)`,
    );
    this.name = 'BlockedAddressError';
  }
}

/** Throws when a literal IP host is not global unicast; net.connect skips the lookup for literals. */
export function assertLiteralAllowed(hostname: string): void {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 0) return;
  const range = blockedRange(bare);
  if (range) throw new BlockedAddressError(bare, bare, range);
}

/**
 * A DNS lookup for net.connect that answers only with global unicast addresses. The socket
 * connects to exactly the address checked here, so a second resolution cannot rebind it.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, '', 0);
    const allowed = addresses.filter((a) => blockedRange(a.address) === null);
    if (allowed.length === 0) {
      const first = addresses[0];
      const blocked = first
        ? new BlockedAddressError(hostname, first.address, blockedRange(first.address) ?? 'reserved')
        : new Error(`no address for ${hostname}`);
      return callback(blocked as NodeJS.ErrnoException, '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
    callback(null, allowed[0].address, allowed[0].family);
  });
};

/**
 * SPEC 7 Address, at input: with CALLBACK_ALLOW_PRIVATE off, a notify URL whose host is
 * `localhost` or a literal address outside global unicast can never receive a callback, so it
 * is refused where it is given. Why, or null when the host may be tried (a name is judged at
 * send time, when it resolves).
 */
export function refusedNotifyHost(url: string): string | null {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return null;
  }
  if (host === 'localhost' || host.endsWith('.localhost')) return `${host} is this machine (loopback); callbacks go to public addresses only`;
  if (isIP(host) === 0) return null;
  const range = blockedRange(host);
  return range ? `${host} is a ${range} address; callbacks go to public addresses only` : null;
}
