import { portalRedirectTarget, withoutLang } from './portal-redirect';

describe('portalRedirectTarget', () => {
  it.each([
    ['/portal', '/portal'],
    ['/portal/orders?status=paid&page=2', '/portal/orders?status=paid&page=2'],
    ['/portal/orders?x=中文', '/portal/orders?x=%E4%B8%AD%E6%96%87'],
    ['/portal/orders/a b"<', '/portal/orders/a%20b%22%3C'],
    ['/portal/orders#frag', '/portal/orders'],
    ['/portal/./orders/../ledger', '/portal/ledger'],
  ])('keeps a portal path %p, normalised and percent-encoded', (raw, expected) => {
    expect(portalRedirectTarget(raw)).toBe(expected);
  });

  it.each([
    undefined,
    42,
    '',
    'portal/orders',
    '//evil.example/portal',
    '/\\evil.example/portal',
    '\\\\evil.example',
    'https://evil.example/portal',
    'javascript:alert(1)',
    '/portal/../admin/queues',
    '/portal/%2e%2e//evil.example/x',
    '/portal/..//evil.example/x',
    '/portalx',
    '/portal\r\nSet-Cookie: x=1',
    '/',
  ])('sends %p home to /portal', (raw) => {
    expect(portalRedirectTarget(raw)).toBe('/portal');
  });

  it('the language switch drops lang and keeps the rest', () => {
    expect(withoutLang('/portal/orders?status=paid&lang=en&page=2')).toBe('/portal/orders?status=paid&page=2');
    expect(withoutLang('/portal/..//evil.example/x?lang=en')).toBe('/portal');
    expect(withoutLang('/portal?lang=zh-CN')).toBe('/portal');
  });
});
