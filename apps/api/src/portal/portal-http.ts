import { hkdfSync } from 'node:crypto';
import { join } from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyCsrfProtection from '@fastify/csrf-protection';
import fastifyStatic from '@fastify/static';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Eta } from 'eta';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type AppConfig, formatCny, formatRatePercent, parseYuan, storedRateE8 } from '@app/common';
import { isLang, negotiateLang, translator } from './i18n/i18n';
import { withoutLang } from './portal-redirect';
import type { PortalRequest } from './portal-request';
import { formatShanghai } from './shanghai-time';

/** Yuan text the service wrote itself (an OrderView's cny_amount): anything else is a bug, never shown as 0. */
function yuanTextFen(yuan: string): number {
  const fen = parseYuan(yuan);
  if (fen === null) throw new Error(`not a yuan amount: ${JSON.stringify(yuan)}`);
  return fen;
}

/** How views write amounts, rates and times: from integer fen through the money module, times in Asia/Shanghai. */
const VIEW_FORMATS = {
  cny: (fen: number) => formatCny(fen),
  cnyText: (yuan: string) => formatCny(yuanTextFen(yuan)),
  /** A movement of a balance: +¥1.00 in, -¥1.00 out. */
  cnySigned: (fen: number) => (fen > 0 ? `+${formatCny(fen)}` : formatCny(fen)),
  rate: (rate: string) => formatRatePercent(storedRateE8(rate, 'an order shown in the portal')),
  ratePercent: (rateE8: number) => formatRatePercent(rateE8),
  time: (at: Date | number) => formatShanghai(at),
};

export const PORTAL_PATH = '/portal';
export const LANG_COOKIE = 'portal_lang';
const VIEWS_DIR = join(__dirname, 'views');
const STATIC_DIR = join(__dirname, 'static');

/** Keys of their own for the portal's cookies, derived from MASTER_KEY: no new secret to configure. */
function portalKey(config: AppConfig, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', config.masterKey, Buffer.alloc(0), `portal ${purpose}`, 32));
}

function isPortalPath(url: string): boolean {
  return url === PORTAL_PATH || url.startsWith(`${PORTAL_PATH}/`) || url.startsWith(`${PORTAL_PATH}?`);
}

/**
 * The portal's security headers, in one place for every /portal answer (pages, redirects, static
 * files, errors): no inline script, no framing, no MIME sniffing, no referrer outside the site.
 */
export function setPortalSecurityHeaders(reply: FastifyReply): void {
  reply
    .header(
      'content-security-policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('cross-origin-opener-policy', 'same-origin');
}

/**
 * The page the language switch reloads: the one asked for, or for a form's answer (a POST to
 * /portal/developers/test-event, which has no GET) the nearest page above it that has one.
 */
function pageOf(request: FastifyRequest, path: string): string {
  if (request.method === 'GET' || request.method === 'HEAD') return path;
  for (let page = path; page.startsWith(`${PORTAL_PATH}/`); page = page.slice(0, page.lastIndexOf('/'))) {
    const route = request.server.findRoute({ method: 'GET', url: page });
    // The portal's catch-all GET (its 404 page) matches everything: a page is a route of its own.
    if (route && !('*' in route.params)) return page;
  }
  return PORTAL_PATH;
}

/** The request's language: `?lang=` (then remembered in a cookie), else the cookie, else Accept-Language. */
async function portalRequestHook(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const url = request.raw.url ?? '';
  if (!isPortalPath(url)) return;
  setPortalSecurityHeaders(reply);
  if (!url.startsWith(`${PORTAL_PATH}/static/`)) reply.header('cache-control', 'no-store');

  const asked = (request.query as Record<string, unknown> | undefined)?.lang;
  if (request.method === 'GET' && isLang(asked)) {
    reply.setCookie(LANG_COOKIE, asked, { path: PORTAL_PATH, sameSite: 'lax', httpOnly: true, maxAge: 365 * 86400 });
    return reply.redirect(withoutLang(url), 303);
  }
  const remembered = request.cookies?.[LANG_COOKIE];
  const lang = isLang(remembered) ? remembered : negotiateLang(request.headers['accept-language']);
  const portal = request as PortalRequest;
  portal.portalLang = lang;
  portal.portalT = translator(lang);
  portal.portalSession = null;
  const path = url.split('?')[0];
  const page = pageOf(request, path);
  const query = new URLSearchParams(page === path && url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
  const switchTo = (other: string): string => {
    const q = new URLSearchParams(query);
    q.set('lang', other);
    return `${page}?${q.toString()}`;
  };
  reply.locals = { ...reply.locals, lang, t: portal.portalT, path, langLinks: { en: switchTo('en'), 'zh-CN': switchTo('zh-CN') } };
}

/**
 * Registers what the portal needs on the API's Fastify instance: cookies (@fastify/cookie),
 * CSRF tokens (@fastify/csrf-protection, secret in a signed cookie, tokens bound to the
 * session), server-rendered views (@fastify/view with eta, escaping on), its static files and
 * the per-request hook above.
 */
export async function mountPortal(app: NestFastifyApplication, config: AppConfig): Promise<void> {
  const secure = config.publicBaseUrl.startsWith('https:');
  await app.register(fastifyCookie, { secret: portalKey(config, 'cookie signing') });
  await app.register(fastifyCsrfProtection, {
    sessionPlugin: '@fastify/cookie',
    cookieKey: 'portal_csrf',
    cookieOpts: { path: PORTAL_PATH, httpOnly: true, sameSite: 'lax', secure, signed: true },
    getUserInfo: (request) => (request as PortalRequest).portalCsrfUserInfo,
    csrfOpts: { hmacKey: portalKey(config, 'csrf') },
  });
  app.setViewEngine({ engine: { eta: new Eta({ autoEscape: true }) }, templates: VIEWS_DIR, production: true, defaultContext: { fmt: VIEW_FORMATS } });
  await app.register(fastifyStatic, { root: STATIC_DIR, prefix: `${PORTAL_PATH}/static/`, decorateReply: false, maxAge: '1h' });
  app.getHttpAdapter().getInstance().addHook('onRequest', portalRequestHook);
}
