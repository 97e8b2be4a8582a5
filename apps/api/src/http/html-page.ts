import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import { RouteConfig, type NestFastifyApplication } from '@nestjs/platform-fastify';

type CspDirectives = Record<string, string[]>;

/** A server-rendered page: its own inline styles and forms only, no scripts, never framed. */
const PAGE_CSP: CspDirectives = {
  defaultSrc: ["'none'"],
  styleSrc: ["'unsafe-inline'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
};

const PAGE_HEADERS: FastifyHelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: PAGE_CSP },
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  // TLS ends at the operator's proxy: HSTS (with includeSubDomains) is its decision, not a page's.
  strictTransportSecurity: false,
};

/**
 * @fastify/helmet for the pages that opt in with @HtmlPage(), and for nothing else: /docs
 * (Swagger UI) and /admin/queues (Bull Board) run inline scripts, and JSON answers need none
 * of it. Register before app.init(), when the routes are added.
 */
export async function registerHtmlPageHeaders(app: NestFastifyApplication): Promise<void> {
  await app.register(helmet, { ...PAGE_HEADERS, global: false });
}

/**
 * Security headers (SPEC 6, 8a: CSP with frame-ancestors 'none', X-Frame-Options DENY,
 * X-Content-Type-Options, Referrer-Policy no-referrer) on every answer of this route, errors
 * included. `csp` adds or replaces directives for a page that needs more, e.g.
 * `@HtmlPage({ scriptSrc: ["'self'"] })`. `nonces`: each answer gets its own script and style
 * nonces (`reply.cspNonce`), added to script-src and style-src, for a page that runs a script of
 * its own (the cashier's JSAPI call); its `<style>` then carries the style nonce. It sets the
 * route's Fastify config.
 */
export function HtmlPage(csp: CspDirectives = {}, { nonces = false }: { nonces?: boolean } = {}): MethodDecorator {
  return RouteConfig({ helmet: { enableCSPNonces: nonces, contentSecurityPolicy: { useDefaults: false, directives: { ...PAGE_CSP, ...csp } } } });
}
