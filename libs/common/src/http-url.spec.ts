import { canonicalNotifyUrl, isHttpUrl, parseNotifyUrl } from './http-url';

describe('parseNotifyUrl (SPEC 7 Address: one parser for validation, keys and sending)', () => {
  it.each([
    ['https://shop.example/cb', 'https://shop.example/cb', 'https://shop.example:443'],
    ['HTTP://Shop.Example:80/a?b=1', 'http://shop.example/a?b=1', 'http://shop.example:80'],
    ['http://127.0.0.1:39112/notify', 'http://127.0.0.1:39112/notify', 'http://127.0.0.1:39112'],
    ['https://[::1]:8443/x', 'https://[::1]:8443/x', 'https://[::1]:8443'],
    ['http://shop.example', 'http://shop.example/', 'http://shop.example:80'],
  ])('%s is stored as %s with destination %s', (given, url, destination) => {
    expect(parseNotifyUrl(given)).toEqual({ url, destination });
  });

  it.each([
    // The SQL key read the host after the '@', the sender the one before it: one merchant tripped another's circuit.
    ['userinfo that hides the real host', 'http://127.0.0.1:39112\\@127.0.0.1:39111/'],
    ['userinfo', 'http://user:pass@shop.example/cb'],
    ['an empty userinfo', 'http://@shop.example/cb'],
    ['a backslash', 'http:\\\\shop.example\\cb'],
    // WHATWG reads it as http://host/..., the old SQL key as nothing at all.
    ['one slash', 'http:/shop.example/cb'],
    ['no slashes', 'http:shop.example/cb'],
    ['a relative path', '/cb'],
    ['another scheme', 'ftp://shop.example/cb'],
    ['javascript', 'javascript:alert(1)'],
    ['spaces around', ' http://shop.example/cb'],
    ['a tab inside', 'http://shop.ex\tample/cb'],
    ['no host', 'http:///cb'],
    ['too long', `http://shop.example/${'a'.repeat(500)}`],
    ['not a string', 42],
  ])('refuses %s', (_why, given) => {
    expect(parseNotifyUrl(given)).toBeNull();
    expect(isHttpUrl(given)).toBe(false);
  });

  it('canonicalNotifyUrl leaves what it refuses for the validator to name', () => {
    expect(canonicalNotifyUrl('HTTPS://Shop.Example:443/cb')).toBe('https://shop.example/cb');
    expect(canonicalNotifyUrl('http:/shop.example')).toBe('http:/shop.example');
    expect(canonicalNotifyUrl(undefined)).toBeUndefined();
  });
});
