import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { createTestDatabase } from './helpers/database';
import { TEST_REDIS_URL } from './helpers/config';
import { freePort } from './helpers/free-port';
import { PASSWORD } from './helpers/portal';
import { type Running, launch, stopProcess } from './helpers/processes';
import { removeTestKeys, testQueuePrefix } from './helpers/redis-keys';
import { waitFor } from './helpers/callbacks';

const API_MAIN = resolve(__dirname, '../dist/apps/api/src/main.js');
const CLI_MAIN = resolve(__dirname, '../dist/apps/cli/src/main.js');

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The compiled CLI as an operator runs it: its answer on stdout, every message and log line on stderr. */
function cli(env: Record<string, string>, ...argv: string[]): Promise<CliRun> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI_MAIN, ...argv], { env: { PATH: process.env.PATH ?? '', ...env } }, (err, stdout, stderr) =>
      done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A browser over real HTTP: its cookies kept, redirects not followed (each hop is looked at). */
class Browser {
  private readonly cookies = new Map<string, string>();
  constructor(private readonly base: string) {}

  async request(method: 'GET' | 'POST', path: string, form?: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        ...(this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {}),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...headers,
      },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }
}

/**
 * SPEC 8a: an invitation token is the whole merchant (it sets a password, then the API secret
 * can be rotated), so it never reaches a log line, a metric or a Referer. The compiled API and
 * CLI, as production runs them at LOG_LEVEL=trace, through an invitation's whole life: invite,
 * open (with a language switch), a wrong password, accept, open again once used, re-invite (a
 * password reset), accept again; every captured line is then searched for the tokens.
 */
describe("an invitation's token in no log line, metric or Referer (compiled API and CLI)", () => {
  let api: Running;
  let base: string;
  let env: Record<string, string>;
  const cliErr: string[] = [];

  beforeAll(async () => {
    for (const main of [API_MAIN, CLI_MAIN]) if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first (npm test does)`);
    const databaseUrl = await createTestDatabase();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = {
      DATABASE_URL: databaseUrl,
      REDIS_URL: TEST_REDIS_URL,
      MASTER_KEY: createHash('sha256').update(`master key of ${databaseUrl}`).digest('base64'),
      QUEUE_PREFIX: testQueuePrefix(),
      PUBLIC_BASE_URL: base,
      LOG_LEVEL: 'trace',
    };
    api = launch('api', API_MAIN, { ...env, PORT: String(port) });
    await waitFor(
      () =>
        fetch(`${base}/ready`).then(
          (r) => r.ok,
          () => false,
        ),
      60_000,
      'the API ready',
    ).catch((err: Error) => {
      throw new Error(`${err.message}; it printed:\n${api.output().slice(-3000)}`);
    });
  }, 90_000);

  afterAll(async () => {
    if (api) await stopProcess(api);
    if (env) await removeTestKeys(env.QUEUE_PREFIX, env.DATABASE_URL);
  });

  async function invite(merchantId: number, email: string): Promise<string> {
    const run = await cli(env, 'merchant:user:invite', '--merchant', String(merchantId), '--email', email);
    cliErr.push(run.stderr);
    expect(run.code).toBe(0);
    return (JSON.parse(run.stdout) as { invitation_url: string }).invitation_url;
  }

  /** Opens the link as a browser does; answers the form page's HTML. */
  async function open(browser: Browser, url: string, query = ''): Promise<Response> {
    const path = new URL(url).pathname;
    let hop = await browser.request('GET', `${path}${query}`);
    // ?lang=en is remembered first, then the link itself.
    if (query) {
      expect([hop.status, hop.headers.get('location')]).toEqual([303, path]);
      hop = await browser.request('GET', path);
    }
    expect([hop.status, hop.headers.get('location'), hop.headers.get('referrer-policy')]).toEqual([303, '/portal/invite', 'no-referrer']);
    return browser.request('GET', '/portal/invite');
  }

  async function accept(browser: Browser, page: Response, password: string): Promise<Response> {
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    return browser.request('POST', '/portal/invite', { _csrf: csrf, password, password_repeat: password });
  }

  it('invite, open, accept, re-invite (a password reset) and accept again: the tokens appear nowhere', async () => {
    const created = await cli(env, 'merchant:create', '--name', 'Invited shop', '--mode', 'test');
    cliErr.push(created.stderr);
    const merchant = JSON.parse(created.stdout) as { id: number };

    const first = await invite(merchant.id, 'owner@invited.example');
    const browser = new Browser(base);
    const page = await open(browser, first, '?lang=en');
    expect(page.status).toBe(200);
    const pageHtml = await page.clone().text();
    expect(pageHtml).toContain('Set your password');
    const short = await accept(browser, page, 'too short');
    expect(short.status).toBe(400);
    const accepted = await accept(browser, await browser.request('GET', '/portal/invite'), PASSWORD);
    expect([accepted.status, accepted.headers.get('location')]).toEqual([303, '/portal']);
    // Used: the link opens the invalid page.
    expect((await open(new Browser(base), first)).status).toBe(404);

    const second = await invite(merchant.id, 'owner@invited.example');
    const again = new Browser(base);
    const resetPage = await open(again, second);
    expect(await resetPage.clone().text()).toContain('resets the password of owner@invited.example');
    expect((await accept(again, resetPage, `${PASSWORD} 2`)).status).toBe(303);

    const scrape = await (await fetch(`${base}/metrics`)).text();
    const apiLog = api.output();
    const tokens = [first, second].map((url) => url.split('/').pop()!);
    for (const token of tokens) {
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(apiLog.includes(token)).toBe(false);
      expect(cliErr.join('').includes(token)).toBe(false);
      expect(scrape.includes(token)).toBe(false);
    }
    // The lines are there, with the route's pattern in place of the token.
    const access = apiLog
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; route?: string; path?: string })
      .filter((l) => l.msg === 'request completed');
    const links = access.filter((l) => l.route === '/portal/invite/:token');
    expect(links.length).toBeGreaterThanOrEqual(4);
    expect(new Set(links.map((l) => l.path))).toEqual(new Set(['/portal/invite/:token']));
    expect(access.filter((l) => l.path === '/portal/invite').length).toBeGreaterThanOrEqual(6);
  });
});
