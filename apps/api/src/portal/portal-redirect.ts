const PORTAL_HOME = '/portal';
/** Resolving against an origin nobody has tells a path of this site from one that leaves it. */
const THIS_SITE = 'http://portal.invalid';

/**
 * Where a portal redirect may go (SPEC 8a): a path of this service under /portal, after the
 * WHATWG URL parser has resolved dot segments, backslashes and percent-encoded dots the way a
 * browser would, and percent-encoded so the Location header is always ASCII. Anything else
 * (another origin, a protocol-relative or scheme URL, a path outside the portal) goes home.
 */
export function portalRedirectTarget(raw: unknown): string {
  if (typeof raw !== 'string' || !raw.startsWith('/')) return PORTAL_HOME;
  let url: URL;
  try {
    url = new URL(raw, THIS_SITE);
  } catch {
    return PORTAL_HOME;
  }
  if (url.origin !== THIS_SITE) return PORTAL_HOME;
  if (url.pathname !== PORTAL_HOME && !url.pathname.startsWith(`${PORTAL_HOME}/`)) return PORTAL_HOME;
  return `${url.pathname}${url.search}`;
}

/** The language switch's target: the page asked for without its `lang` parameter. */
export function withoutLang(raw: string): string {
  const url = new URL(portalRedirectTarget(raw), THIS_SITE);
  url.searchParams.delete('lang');
  return `${url.pathname}${url.search}`;
}
