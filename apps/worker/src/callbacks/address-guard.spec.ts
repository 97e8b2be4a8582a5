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
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['[::1]', 'loopback'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['not-an-ip', 'reserved'],
  ])('%s is %s', (address, range) => {
    expect(blockedRange(address)).toBe(range);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])('%s is public', (address) => {
    expect(blockedRange(address)).toBeNull();
  });

  it('reads the IPv4 inside mapped forms', () => {
    expect(embeddedIpv4('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(embeddedIpv4('::FFFF:192.168.0.1')).toBe('192.168.0.1');
    expect(embeddedIpv4('2001:db8::1')).toBeNull();
  });
});

describe('assertLiteralAllowed', () => {
  it('refuses literal private addresses as URL hostnames spell them', () => {
    for (const url of ['http://127.0.0.1:8080/', 'http://10.0.0.1/', 'http://169.254.169.254/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://0x7f.1/']) {
      expect(() => assertLiteralAllowed(new URL(url).hostname)).toThrow(BlockedAddressError);
    }
  });

  it('leaves names to the guarded lookup and allows public literals', () => {
    expect(() => assertLiteralAllowed('shop.example')).not.toThrow();
    expect(() => assertLiteralAllowed('8.8.8.8')).not.toThrow();
  });
});

describe('guardedLookup', () => {
  it('refuses a name that resolves to loopback, naming the address', async () => {
    const err = await new Promise<Error | null>((resolve) => guardedLookup('localhost', {}, (e) => resolve(e)));
    expect(err).toBeInstanceOf(BlockedAddressError);
    expect(err?.message).toMatch(/localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
  });
});
