import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { OperatorServices } from './operator-services';

export interface PageAnswer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  html: string;
  location: string | null;
  setCookies: string[];
}

/** A browser's cookie jar and form habits over app.inject: cookies kept, forms posted with the page's CSRF token. */
export class PortalClient {
  readonly cookies = new Map<string, string>();
  lastHtml = '';

  /** `remoteAddress`: the client IP the API sees (127.0.0.1 unless given). */
  constructor(
    private readonly app: NestFastifyApplication,
    private readonly remoteAddress?: string,
  ) {}

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(url: string, headers: Record<string, string> = {}): Promise<PageAnswer> {
    return this.request('GET', url, undefined, headers);
  }

  /** POSTs a form; `_csrf` is the token of the last page read unless the form names its own (or null to leave it out). */
  async post(url: string, form: Record<string, string | null> = {}, headers: Record<string, string> = {}): Promise<PageAnswer> {
    const fields: Record<string, string> = {};
    const csrf = '_csrf' in form ? form._csrf : csrfToken(this.lastHtml);
    if (csrf) fields._csrf = csrf;
    for (const [k, v] of Object.entries(form)) if (k !== '_csrf' && v !== null) fields[k] = v;
    return this.request('POST', url, new URLSearchParams(fields).toString(), { 'content-type': 'application/x-www-form-urlencoded', ...headers });
  }

  private async request(method: 'GET' | 'POST', url: string, payload: string | undefined, headers: Record<string, string>): Promise<PageAnswer> {
    const res = await this.app.inject({
      method,
      url,
      payload,
      headers: { ...(this.cookies.size ? { cookie: this.cookieHeader() } : {}), ...headers },
      ...(this.remoteAddress ? { remoteAddress: this.remoteAddress } : {}),
    });
    const raw = res.headers['set-cookie'];
    const setCookies = raw === undefined ? [] : Array.isArray(raw) ? raw : [String(raw)];
    for (const line of setCookies) {
      const [pair] = line.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    if (String(res.headers['content-type'] ?? '').startsWith('text/html')) this.lastHtml = res.body;
    return { status: res.statusCode, headers: res.headers, html: res.body, location: (res.headers.location as string | undefined) ?? null, setCookies };
  }
}

export function csrfToken(html: string): string | null {
  return /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? null;
}

export const PASSWORD = 'correct horse battery staple';

/** Where an invitation link sends the browser, its token kept in a cookie (SPEC 8a). */
export const INVITATION_PAGE = '/portal/invite';

/** Follows an invitation link as a browser does: the link answers 303 to the token-free page, which is returned. */
export async function openInvitation(client: PortalClient, invitationUrl: string): Promise<PageAnswer> {
  const link = await client.get(new URL(invitationUrl).pathname);
  if (link.status !== 303 || link.location !== INVITATION_PAGE) throw new Error(`the invitation link answered ${link.status} ${link.location}`);
  return client.get(INVITATION_PAGE);
}

/** An invitation through the operator service, accepted in `client`: the client ends up signed in. */
export async function inviteAndAccept(
  app: NestFastifyApplication,
  operator: OperatorServices,
  merchantId: number,
  email: string,
  client = new PortalClient(app),
): Promise<PortalClient> {
  const { invitation_url } = await operator.portalUsers.invite(merchantId, email);
  const page = await openInvitation(client, invitation_url);
  if (page.status !== 200) throw new Error(`invitation page answered ${page.status}`);
  const done = await client.post(INVITATION_PAGE, { password: PASSWORD, password_repeat: PASSWORD });
  if (done.status !== 303 || done.location !== '/portal') throw new Error(`accepting answered ${done.status} ${done.html.slice(0, 300)}`);
  return client;
}
