import { BlockedAddressError, assertLiteralAllowed, blockedRange, embeddedIpv4, guardedLookup } from './address-guard';

describe('blockedRange', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fec0::1', 'site-local'],
    ['[::1]', 'loopback'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['100::1', 'discard'],
    ['not-an-ip', 'reserved'],
    // Outside 2000::/3: not allocated as global unicast.
    ['4000::1', 'non-global'],
  ])('%s is %s', (address, range) => {
    expect(blockedRange(address)).toBe(range);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '2400:cb00::1'])('%s is global unicast', (address) => {
    expect(blockedRange(address)).toBeNull();
  });
});

// SPEC 7: every IPv6 transition form is judged by the IPv4 address it embeds, or refused.
describe('IPv6 transition forms', () => {
  it.each([
    // IPv4-mapped, ::ffff:0:0/96
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    // IPv4-translated (SIIT), ::ffff:0:0:0/96: the http://[::ffff:0:7f00:1]/ was dialled
    ['::ffff:0:7f00:1', 'loopback'],
    ['::ffff:0:a00:1', 'private'],
    // NAT64 well-known prefix, 64:ff9b::/96
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::10.0.0.1', 'private'],
    // 6to4, 2002::/16: the IPv4 address is in bits 16 to 47
    ['2002:7f00:1::1', 'loopback'],
    ['2002:a00:1::1', 'private'],
    ['2002:c0a8:101::1', 'private'],
    // IPv4-compatible (deprecated), ::/96
    ['::7f00:1', 'non-global'],
    ['::808:808', 'non-global'],
  ])('%s is refused as %s', (address, range) => {
    expect(blockedRange(address)).toBe(range);
  });

  it.each([
    ['::ffff:8.8.8.8', '8.8.8.8'],
    ['::ffff:808:808', '8.8.8.8'],
    ['::ffff:0:808:808', '8.8.8.8'],
    ['64:ff9b::8.8.8.8', '8.8.8.8'],
    ['64:ff9b::5db8:d70e', '93.184.215.14'],
    ['2002:808:808::1', '8.8.8.8'],
  ])('%s embeds the public %s and is allowed', (address, inner) => {
    expect(embeddedIpv4(address)).toBe(inner);
    expect(blockedRange(address)).toBeNull();
  });

  it.each([
    // Teredo, 2001::/32: server 10.0.0.1, client 127.0.0.1 (obfuscated); and server 65.54.227.120, client 8.8.8.8
    ['2001:0:a00:1:8000:0:80ff:fffe', 'teredo'],
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'teredo'],
    // Local-use NAT64, 64:ff9b:1::/48: the embedding depends on a prefix length only its operator knows
    ['64:ff9b:1::a00:1', 'local-use NAT64'],
    ['64:ff9b:1::808:808', 'local-use NAT64'],
  ])('%s is refused whatever it embeds (%s)', (address, range) => {
    expect(blockedRange(address)).toBe(range);
  });

  it('reads the IPv4 inside the forms whose position is fixed, and nothing else', () => {
    expect(embeddedIpv4('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(embeddedIpv4('::FFFF:192.168.0.1')).toBe('192.168.0.1');
    expect(embeddedIpv4('::ffff:0:7f00:1')).toBe('127.0.0.1');
    expect(embeddedIpv4('2002:c0a8:101::1')).toBe('192.168.1.1');
    expect(embeddedIpv4('64:ff9b:1::a00:1')).toBeNull();
    expect(embeddedIpv4('2001:0:a00:1:8000:0:80ff:fffe')).toBeNull();
    expect(embeddedIpv4('2001:db8::1')).toBeNull();
    expect(embeddedIpv4('10.0.0.1')).toBeNull();
  });
});

describe('assertLiteralAllowed', () => {
  it('refuses literal private addresses as URL hostnames spell them', () => {
    for (const url of [
      'http://127.0.0.1:8080/',
      'http://10.0.0.1/',
      'http://169.254.169.254/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://0x7f.1/',
      'http://[::ffff:0:7f00:1]/',
      'http://[64:ff9b::a9fe:a9fe]/',
      'http://[2002:a9fe:a9fe::]/',
    ]) {
      expect(() => assertLiteralAllowed(new URL(url).hostname)).toThrow(BlockedAddressError);
    }
  });

  it('leaves names to the guarded lookup and allows public literals', () => {
    expect(() => assertLiteralAllowed('shop.example')).not.toThrow();
    expect(() => assertLiteralAllowed('8.8.8.8')).not.toThrow();
    expect(() => assertLiteralAllowed(new URL('http://[2606:4700::1111]/').hostname)).not.toThrow();
  });
});

describe('guardedLookup', () => {
  it('refuses a name that resolves to loopback, naming the address', async () => {
    const err = await new Promise<Error | null>((resolve) => guardedLookup('localhost', {}, (e) => resolve(e)));
    expect(err).toBeInstanceOf(BlockedAddressError);
    expect(err?.message).toMatch(/localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
  });
});
