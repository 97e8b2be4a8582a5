import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** Why an address may not receive a callback. */
export type BlockedRange =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'multicast'
  | 'metadata'
  | 'unique-local'
  | 'reserved';

// Most specific first: the first list that matches names the reason.
const RANGES: [BlockedRange, [string, number, 'ipv4' | 'ipv6'][]][] = [
  ['metadata', [['169.254.169.254', 32, 'ipv4'], ['fd00:ec2::254', 128, 'ipv6'], ['100.100.100.200', 32, 'ipv4']]],
  ['unspecified', [['0.0.0.0', 8, 'ipv4'], ['::', 128, 'ipv6']]],
  ['loopback', [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']]],
  ['private', [['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4']]],
  ['link-local', [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']]],
  ['cgnat', [['100.64.0.0', 10, 'ipv4']]],
  ['multicast', [['224.0.0.0', 4, 'ipv4'], ['ff00::', 8, 'ipv6']]],
  ['unique-local', [['fc00::', 7, 'ipv6'], ['fec0::', 10, 'ipv6']]],
  [
    'reserved',
    [
      ['192.0.0.0', 24, 'ipv4'],
      ['192.0.2.0', 24, 'ipv4'],
      ['198.18.0.0', 15, 'ipv4'],
      ['198.51.100.0', 24, 'ipv4'],
      ['203.0.113.0', 24, 'ipv4'],
      ['240.0.0.0', 4, 'ipv4'],
      ['100::', 64, 'ipv6'],
      ['2001:db8::', 32, 'ipv6'],
      // IPv4-compatible (deprecated) addresses: no legitimate merchant uses them.
      ['::', 96, 'ipv6'],
    ],
  ],
];

const LISTS: [BlockedRange, BlockList][] = RANGES.map(([reason, subnets]) => {
  const list = new BlockList();
  for (const [address, prefix, type] of subnets) list.addSubnet(address, prefix, type);
  return [reason, list];
});

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address, else null. */
export function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const m = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/.exec(lower);
  if (!m) return null;
  if (m[1]) return m[1];
  const hi = parseInt(m[2], 16);
  const lo = parseInt(m[3], 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** The blocked range an IP address falls in, or null when it is a public unicast address. Not an IP: 'reserved'. */
export function blockedRange(address: string): BlockedRange | null {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return 'reserved';
  const inner = family === 6 ? embeddedIpv4(bare) : null;
  const [ip, type] = inner ? [inner, 'ipv4' as const] : [bare, family === 4 ? ('ipv4' as const) : ('ipv6' as const)];
  for (const [reason, list] of LISTS) {
    if (list.check(ip, type)) return reason;
  }
  return null;
}

/** A callback address refused before any connection was made. */
export class BlockedAddressError extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly range: BlockedRange,
  ) {
    super(
      host === address
        ? `refused: callback address ${address} is a ${range} address (set CALLBACK_ALLOW_PRIVATE=true to allow)`
        : `refused: callback host ${host} resolves to ${address}, a ${range} address (set CALLBACK_ALLOW_PRIVATE=true to allow)`,
    );
    this.name = 'BlockedAddressError';
  }
}

/** Throws when a literal IP host is in a blocked range; net.connect skips the lookup for literals. */
export function assertLiteralAllowed(hostname: string): void {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 0) return;
  const range = blockedRange(bare);
  if (range) throw new BlockedAddressError(bare, bare, range);
}

/**
 * A DNS lookup for net.connect that answers only with addresses outside the blocked ranges. The
 * socket connects to exactly the address checked here, so a second resolution cannot rebind it.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, '', 0);
    const allowed = addresses.filter((a) => blockedRange(a.address) === null);
    if (allowed.length === 0) {
      const first = addresses[0];
      const blocked = first ? new BlockedAddressError(hostname, first.address, blockedRange(first.address) ?? 'reserved') : new Error(`no address for ${hostname}`);
      return callback(blocked as NodeJS.ErrnoException, '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
    callback(null, allowed[0].address, allowed[0].family);
  });
};
