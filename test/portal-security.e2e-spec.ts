import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SecretBox } from '@app/common';
import { channelConfigContext } from '@app/channels';
import { ChannelRepository } from '@app/db';
import type { Credentials } from '@app/operator';
import { runCli } from '../apps/cli/src/main';
import { type TestApi, merchantWithChannels, post, signed, startTestApi } from './helpers/api';
import { CallbackFixtures, HEARD_WITHIN_MS, waitFor } from './helpers/callbacks';
import { completedOrder, createSellOrder } from './helpers/money-out';
import { sql } from './helpers/orders';
import { INVITATION_PAGE, PASSWORD, type PageAnswer, PortalClient, csrfToken, inviteAndAccept, openInvitation } from './helpers/portal';

interface Shop {
  merchant: Credentials;
  channels: Record<'processor' | 'remotepay' | 'warehouse', number>;
  email: string;
}

/** SPEC 8a's security rules of the portal and orderList, against real PostgreSQL. */
describe('merchant portal security', () => {
  let api: TestApi;
  let fixtures: CallbackFixtures;
  let a: Shop;
  let b: Shop;
  let n = 0;
  const email = (tag: string) => `${tag}-${++n}@shop.example`;

  beforeAll(async () => {
    // Every sign-in here comes from 127.0.0.1: the per-IP limit has a describe of its own below.
    api = await startTestApi({ PORTAL_SIGNIN_PER_MINUTE: '1000' });
    fixtures = await CallbackFixtures.connect(api.databaseUrl);
    a = { ...(await merchantWithChannels(api.operator)), email: email('a') };
    b = { ...(await merchantWithChannels(api.operator)), email: email('b') };
  });
  afterAll(async () => {
    await fixtures?.close();
    await api?.close();
  });

  const signIn = async (client: PortalClient, user: string, password = PASSWORD) => {
    await client.get('/portal/login');
    return client.post('/portal/login', { email: user, password });
  };
  const errorText = (html: string) => /<p class="error"[^>]*>([^<]*)</.exec(html)?.[1] ?? null;

  describe('invitations', () => {
    it('the CLI prints one JSON line with a 24 h single-use invitation URL under PUBLIC_BASE_URL', async () => {
      let out = '';
      const env = {
        DATABASE_URL: api.databaseUrl,
        MASTER_KEY: api.config.masterKey.toString('base64'),
        PUBLIC_BASE_URL: 'https://pay.example',
        LOG_LEVEL: 'silent',
      };
      const code = await runCli(['merchant:user:invite', '--merchant', String(a.merchant.id), '--email', email('cli')], {
        env,
        stdout: (t) => (out += t),
        stderr: () => undefined,
      });
      expect(code).toBe(0);
      const lines = out.trim().split('\n');
      expect(lines).toHaveLength(1);
      const invitation = JSON.parse(lines[0]) as { invitation_url: string; expires_at: string };
      expect(invitation.invitation_url).toMatch(/^https:\/\/pay\.example\/portal\/invite\/[A-Za-z0-9_-]{43}$/);
      const hours = (Date.parse(invitation.expires_at) - Date.now()) / 3_600_000;
      expect(hours).toBeGreaterThan(23.9);
      expect(hours).toBeLessThanOrEqual(24);
      const [row] = await sql(api.app).query(`SELECT token_hash FROM merchant_user_invitations ORDER BY id DESC LIMIT 1`);
      expect(invitation.invitation_url).not.toContain(row.token_hash);

      const refused = await runCli(['merchant:user:invite', '--merchant', String(a.merchant.id), '--email', 'not an email'], {
        env,
        stdout: () => undefined,
        stderr: () => undefined,
      });
      expect(refused).toBe(2);
    });

    it('works once, refuses a short password, and an expired or replaced link shows the invalid page', async () => {
      const user = email('once');
      const first = await api.operator.portalUsers.invite(a.merchant.id, user);
      const second = await api.operator.portalUsers.invite(a.merchant.id, user);
      const client = new PortalClient(api.app);
      expect((await openInvitation(client, first.invitation_url)).status).toBe(404);

      const path = INVITATION_PAGE;
      expect((await openInvitation(client, second.invitation_url)).status).toBe(200);
      const short = await client.post(path, { password: 'short-pass', password_repeat: 'short-pass' });
      expect(short.status).toBe(400);
      expect(errorText(short.html)).toBe('The password must be at least 12 characters long.');
      const differ = await client.post(path, { password: PASSWORD, password_repeat: `${PASSWORD}!` });
      expect(errorText(differ.html)).toBe('The two new passwords differ.');
      const accepted = await client.post(path, { password: PASSWORD, password_repeat: PASSWORD });
      expect([accepted.status, accepted.location]).toEqual([303, '/portal']);
      expect((await openInvitation(new PortalClient(api.app), second.invitation_url)).status).toBe(404);
      // The form page without the link's cookie knows no invitation.
      expect((await new PortalClient(api.app).get(path)).status).toBe(404);

      const late = await api.operator.portalUsers.invite(a.merchant.id, email('late'));
      await sql(api.app).query(`UPDATE merchant_user_invitations SET expires_at = now() - interval '1 second' WHERE email = $1`, [late.email]);
      expect((await openInvitation(new PortalClient(api.app), late.invitation_url)).status).toBe(404);
    });

    it("refuses an email of another merchant's user", async () => {
      const user = email('taken');
      await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      await expect(api.operator.portalUsers.invite(b.merchant.id, user.toUpperCase())).rejects.toThrow('already a user of another merchant');
    });
  });

  describe('sessions', () => {
    let session: string;
    it('the session cookie is HttpOnly, SameSite=Lax, path /, not Secure over http, and stores only a hash', async () => {
      const client = await inviteAndAccept(api.app, api.operator, a.merchant.id, a.email);
      const signedIn = await signIn(new PortalClient(api.app), a.email.toUpperCase());
      const cookie = signedIn.setCookies.find((c) => c.startsWith('portal_session='))!;
      expect(cookie).toMatch(/; HttpOnly/);
      expect(cookie).toMatch(/; SameSite=Lax/);
      expect(cookie).toMatch(/; Path=\//);
      expect(cookie).not.toMatch(/; Secure/);
      session = client.cookies.get('portal_session')!;
      const rows = await sql(api.app).query(`SELECT id_hash FROM portal_sessions`);
      expect(rows.map((r: { id_hash: string }) => r.id_hash)).not.toContain(session);
    });

    it('is Secure under an https PUBLIC_BASE_URL', async () => {
      const https = await startTestApi({ PUBLIC_BASE_URL: 'https://pay.example' });
      try {
        const shop = await merchantWithChannels(https.operator);
        const user = email('https');
        await inviteAndAccept(https.app, https.operator, shop.merchant.id, user);
        const client = new PortalClient(https.app);
        const page = await client.get('/portal/login');
        expect(page.setCookies.find((c) => c.startsWith('portal_csrf='))).toMatch(/; Secure/);
        const signedIn = await client.post('/portal/login', { email: user, password: PASSWORD });
        expect(signedIn.setCookies.find((c) => c.startsWith('portal_session='))).toMatch(/; HttpOnly; SameSite=Lax; Secure|; Secure/);
      } finally {
        await https.close();
      }
    });

    it('rotates the id at sign-in: a planted id is never adopted and the previous session ends', async () => {
      const client = new PortalClient(api.app);
      const planted = 'A'.repeat(43);
      client.cookies.set('portal_session', planted);
      const loginPage = await client.get('/portal/login');
      const anonymousToken = csrfToken(loginPage.html)!;
      await client.post('/portal/login', { email: a.email, password: PASSWORD });
      const first = client.cookies.get('portal_session')!;
      expect(first).not.toBe(planted);

      await client.post('/portal/login', { _csrf: anonymousToken, email: a.email, password: PASSWORD });
      const second = client.cookies.get('portal_session')!;
      expect(second).not.toBe(first);
      const stale = new PortalClient(api.app);
      stale.cookies.set('portal_session', first);
      expect((await stale.get('/portal')).location).toBe('/portal/login');
      expect((await client.get('/portal')).status).toBe(200);
    });

    it('every page without a session redirects to sign-in; an idled-out session counts as none', async () => {
      for (const path of [
        '/portal',
        '/portal/orders',
        '/portal/orders/20250101000000123',
        '/portal/ledger',
        '/portal/channels',
        '/portal/developers',
        '/portal/help',
        '/portal/account',
        '/portal/orders/export.csv',
      ]) {
        const res = await new PortalClient(api.app).get(path);
        expect([path, res.status, res.location?.startsWith('/portal/login')]).toEqual([path, 303, true]);
      }
      const client = new PortalClient(api.app);
      await signIn(client, a.email);
      expect((await client.get('/portal')).status).toBe(200);
      await sql(api.app).query(`UPDATE portal_sessions SET expires_at = now() - interval '1 second'`);
      expect((await client.get('/portal')).location).toBe('/portal/login');
    });

    it('sign out everywhere ends every session of the user, on every device', async () => {
      const user = email('everywhere');
      const phone = await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      const laptop = new PortalClient(api.app);
      await signIn(laptop, user);
      // The password is asked again: a stolen session cannot sign its owner out everywhere.
      for (const password of [null, 'not the password']) {
        await laptop.get('/portal/account');
        const refused = await laptop.post('/portal/account/sign-out-everywhere', { password });
        expect([refused.status, errorText(refused.html)]).toEqual([400, 'The password is wrong. Nothing was changed.']);
      }
      expect((await phone.get('/portal')).status).toBe(200);
      await laptop.get('/portal/account');
      const out = await laptop.post('/portal/account/sign-out-everywhere', { password: PASSWORD });
      expect(out.location).toBe('/portal/login?signed_out=1');
      expect((await phone.get('/portal')).location).toBe('/portal/login');
      expect((await laptop.get('/portal')).location).toBe('/portal/login');
    });

    it('a password asked again counts toward the sign-in lock: 5 wrong guesses lock the email, the right one then too', async () => {
      const user = email('guesser');
      const client = await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      const answers: number[] = [];
      for (let i = 0; i < 6; i++) {
        await client.get('/portal/account');
        answers.push((await client.post('/portal/account/sign-out-everywhere', { password: i === 5 ? PASSWORD : `guess ${i}` })).status);
      }
      expect(answers).toEqual([400, 400, 400, 400, 429, 429]);
      expect((await client.get('/portal')).status).toBe(200);
      expect((await signIn(new PortalClient(api.app), user)).status).toBe(429);
    });

    it('a disabled user is out at once: pages, orderList and sign-in', async () => {
      const user = email('disabled');
      const client = await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      expect((await client.get('/portal')).status).toBe(200);
      const disabled = await api.operator.portalUsers.disable(user);
      expect(disabled.sessions_ended).toBe(1);
      expect((await client.get('/portal')).location).toBe('/portal/login');
      const again = await signIn(new PortalClient(api.app), user);
      expect([again.status, errorText(again.html)]).toEqual([401, 'The email or the password is wrong.']);

      // Even a session row left behind is refused on the next request, since the user is read every time.
      const other = email('disabled-late');
      const late = await inviteAndAccept(api.app, api.operator, a.merchant.id, other);
      await sql(api.app).query(`UPDATE merchant_users SET status = 'disabled' WHERE email = $1`, [other]);
      const list = await api.app.inject({
        method: 'POST',
        url: '/api/merchant/orderList',
        headers: { cookie: late.cookieHeader(), 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(list.json().code).toBe(40100);
      expect((await late.get('/portal')).location).toBe('/portal/login');
    });

    it('ends 7 days after sign-in whatever the activity', async () => {
      const user = email('week');
      const client = await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      const sessionOf = `FROM merchant_users u WHERE u.id = s.user_id AND u.email = $1`;
      // Used a minute ago, so the 12-hour idle expiry is far: only the age decides.
      await sql(api.app).query(`UPDATE portal_sessions s SET created_at = now() - interval '7 days' + interval '1 minute', last_seen_at = now() ${sessionOf}`, [
        user,
      ]);
      expect((await client.get('/portal')).status).toBe(200);
      await sql(api.app).query(
        `UPDATE portal_sessions s SET created_at = now() - interval '7 days' - interval '1 second', expires_at = now() + interval '12 hours' ${sessionOf}`,
        [user],
      );
      const list = await api.app.inject({
        method: 'POST',
        url: '/api/merchant/orderList',
        headers: { cookie: client.cookieHeader(), 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(list.json().code).toBe(40100);
      expect((await client.get('/portal')).location).toBe('/portal/login');
    });

    it('a changed password signs out the other sessions; a wrong current password changes nothing', async () => {
      const user = email('pw');
      const client = await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      const other = new PortalClient(api.app);
      await signIn(other, user);
      await client.get('/portal/account');
      const wrong = await client.post('/portal/account/password', {
        current_password: 'not the password',
        new_password: 'a brand new password',
        new_password_repeat: 'a brand new password',
      });
      expect([wrong.status, errorText(wrong.html)]).toEqual([400, 'The current password is wrong.']);
      await client.get('/portal/account');
      const changed = await client.post('/portal/account/password', {
        current_password: PASSWORD,
        new_password: 'a brand new password',
        new_password_repeat: 'a brand new password',
      });
      expect(changed.location).toBe('/portal/account?notice=password');
      expect((await client.get('/portal')).status).toBe(200);
      expect((await other.get('/portal')).location).toBe('/portal/login');
      expect((await signIn(new PortalClient(api.app), user, 'a brand new password')).location).toBe('/portal');
      expect((await signIn(new PortalClient(api.app), user)).status).toBe(401);
    });
  });

  describe('sign-in per client IP (PORTAL_SIGNIN_PER_MINUTE, 20 by default)', () => {
    it('40 sign-ins from one IP with 40 emails: 20 are checked, 20 refused 429 before any check; another IP still signs in', async () => {
      const limited = await startTestApi();
      try {
        const shop = await merchantWithChannels(limited.operator);
        const owner = email('ip-owner');
        await inviteAndAccept(limited.app, limited.operator, shop.merchant.id, owner);
        const guesser = new PortalClient(limited.app, '198.51.100.7');
        await guesser.get('/portal/login');
        const answers: PageAnswer[] = [];
        for (let i = 0; i < 40; i++) answers.push(await guesser.post('/portal/login', { email: `guess-${i}@victim.example`, password: `a guess ${i}` }));
        expect(answers.map((a) => a.status)).toEqual([...Array<number>(20).fill(401), ...Array<number>(20).fill(429)]);
        const refused = answers[39];
        expect(errorText(refused.html)).toBe('Too many sign-in attempts from your network. Wait a minute, then try again.');
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
        expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
        // Refused before the email was looked at: only the 20 checked emails have a failure counted.
        const [{ counted }] = await sql(limited.app).query(
          `SELECT count(DISTINCT email)::int AS counted FROM portal_sign_in_failures WHERE email LIKE 'guess-%'`,
        );
        expect(counted).toBe(20);
        // The right password from that address waits too; from another address it signs in.
        expect((await guesser.post('/portal/login', { email: owner, password: PASSWORD })).status).toBe(429);
        const owners = new PortalClient(limited.app, '203.0.113.9');
        expect((await signIn(owners, owner)).location).toBe('/portal');
      } finally {
        await limited.close();
      }
    });
  });

  describe('sign-in lockout', () => {
    /** Five wrong passwords, then the right one: each answer's status and message. */
    async function attempts(user: string, rightPassword: string): Promise<[number, string | null][]> {
      const client = new PortalClient(api.app);
      const answers: [number, string | null][] = [];
      for (let i = 0; i < 5; i++) {
        const res = await signIn(client, user, `wrong password ${i}`);
        answers.push([res.status, errorText(res.html)]);
      }
      const last = await signIn(client, user, rightPassword);
      answers.push([last.status, errorText(last.html)]);
      return answers;
    }

    it('locks an email after 5 failures within 15 minutes, even for the right password, and an unknown email answers the same', async () => {
      const user = email('lock');
      await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      const known = await attempts(user, PASSWORD);
      const failed: [number, string] = [401, 'The email or the password is wrong.'];
      const locked: [number, string] = [429, 'Too many failed attempts: sign-in for this email is locked for 15 minutes.'];
      expect(known).toEqual([failed, failed, failed, failed, locked, locked]);
      expect(await attempts(email('nobody'), PASSWORD)).toEqual(known);

      // 15 minutes later (the lock's end moved into the past) the right password works again.
      await sql(api.app).query(`UPDATE portal_sign_in_locks SET locked_until = now() - interval '1 second' WHERE email = lower($1)`, [user]);
      expect((await signIn(new PortalClient(api.app), user)).location).toBe('/portal');
    });

    it('counts sign-ins sent at the same moment before checking them: of 30 at once, 5 are checked, and the right password is then locked out too', async () => {
      const user = email('burst');
      await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      const burst = async (password: (i: number) => string): Promise<number[]> => {
        const clients = await Promise.all(
          Array.from({ length: 30 }, async () => {
            const client = new PortalClient(api.app);
            await client.get('/portal/login');
            return client;
          }),
        );
        const answers = await Promise.all(clients.map((client, i) => client.post('/portal/login', { email: user, password: password(i) })));
        return answers.map((res) => res.status);
      };
      // Sequentially 4 answers say "wrong" and the 5th failure locks: sent at once, exactly the same.
      const first = await burst((i) => `wrong password ${i}`);
      expect([first.filter((s) => s === 401).length, first.filter((s) => s === 429).length]).toEqual([4, 26]);
      // The attack the review ran: the right password at position 20 of a burst; every answer is the lock.
      const second = await burst((i) => (i === 19 ? PASSWORD : `wrong password ${i}`));
      expect(second).toEqual(Array(30).fill(429));
    });

    it('failures older than 15 minutes do not count', async () => {
      const user = email('old-failures');
      await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      const client = new PortalClient(api.app);
      for (let i = 0; i < 4; i++) await signIn(client, user, 'wrong password!');
      await sql(api.app).query(`UPDATE portal_sign_in_failures SET failed_at = now() - interval '16 minutes' WHERE email = lower($1)`, [user]);
      expect((await signIn(client, user, 'wrong password!')).status).toBe(401);
      expect((await signIn(client, user)).location).toBe('/portal');
    });
  });

  describe('redirects', () => {
    it('after sign-in go to a portal path of this service only, percent-encoded; a non-ASCII next is encoded, never a 500', async () => {
      const user = email('next');
      await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      const [{ id: userId }] = await sql(api.app).query(`SELECT id FROM merchant_users WHERE email = $1`, [user]);
      const cases: [string, string][] = [
        ['/portal/orders?x=中文', '/portal/orders?x=%E4%B8%AD%E6%96%87'],
        ['/portal/orders/订单?status=paid', '/portal/orders/%E8%AE%A2%E5%8D%95?status=paid'],
        ['/portal/orders?status=paid&page=2', '/portal/orders?status=paid&page=2'],
        ['//evil.example/portal', '/portal'],
        ['/\\evil.example/portal', '/portal'],
        ['https://evil.example/portal', '/portal'],
        ['/portal/../admin/queues', '/portal'],
        ['/portal/%2e%2e//evil.example/x', '/portal'],
        ['/portal\r\nSet-Cookie: x=1', '/portal'],
        ['javascript:alert(1)', '/portal'],
      ];
      for (const [next, location] of cases) {
        const client = new PortalClient(api.app);
        await client.get('/portal/login');
        const sessionsBefore = (await sql(api.app).query(`SELECT count(*)::int AS n FROM portal_sessions WHERE user_id = $1`, [userId]))[0].n;
        const res = await client.post('/portal/login', { email: user, password: PASSWORD, next });
        expect([next, res.status, res.location]).toEqual([next, 303, location]);
        const sessionsAfter = (await sql(api.app).query(`SELECT count(*)::int AS n FROM portal_sessions WHERE user_id = $1`, [userId]))[0].n;
        expect(sessionsAfter).toBe(sessionsBefore + 1);
        // Signed in already, the sign-in page sends the browser on by the same rule.
        const again = await client.get(`/portal/login?next=${encodeURIComponent(next)}`);
        expect([next, again.status, again.location]).toEqual([next, 303, location]);
      }
    });

    it('the language switch goes to a normalised path under /portal only', async () => {
      // Over a real socket: app.inject would normalise the path before the portal sees it.
      await api.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = api.app.getHttpServer().address() as AddressInfo;
      const get = (path: string) =>
        new Promise<{ status: number; location: string | undefined }>((done, fail) => {
          request({ host: '127.0.0.1', port, path }, (res) => {
            res.resume();
            done({ status: res.statusCode!, location: res.headers.location });
          })
            .on('error', fail)
            .end();
        });
      for (const [url, location] of [
        ['/portal/..//evil.example/x?lang=en', '/portal'],
        ['/portal/%2e%2e//evil.example/x?lang=en', '/portal'],
        ['/portal/%2E%2E/%2E%2E//evil.example/x?lang=zh-CN', '/portal'],
        ['/portal/..\\/evil.example/x?lang=en', '/portal'],
        ['/portal/..%2f..%2f/evil.example?lang=en', '/portal/..%2f..%2f/evil.example'],
        ['/portal/orders?status=paid&lang=en', '/portal/orders?status=paid'],
        ['/portal?lang=zh-CN', '/portal'],
      ]) {
        const res = await get(url);
        expect([url, res.status, res.location]).toEqual([url, 303, location]);
      }
    });
  });

  describe('CSRF', () => {
    it('refuses every state-changing form without a token, or with a token of another session, and changes nothing', async () => {
      const user = email('csrf');
      const client = await inviteAndAccept(api.app, api.operator, a.merchant.id, user);
      const intruder = await inviteAndAccept(api.app, api.operator, a.merchant.id, email('intruder'));
      const foreignToken = csrfToken((await intruder.get('/portal/account')).html)!;
      const { orderNo, orderId } = await fixtures.insertOrder(a.merchant.id, a.channels.processor);
      await fixtures.insertEvent(orderId);
      const invitation = await api.operator.portalUsers.invite(a.merchant.id, email('csrf-invite'));
      await openInvitation(client, invitation.invitation_url);
      const invitePath = INVITATION_PAGE;
      const deliveriesBefore = (await fixtures.deliveriesOfOrder(orderId)).length;

      const forms: [string, Record<string, string>][] = [
        ['/portal/login', { email: user, password: PASSWORD }],
        [invitePath, { password: PASSWORD, password_repeat: PASSWORD }],
        ['/portal/logout', {}],
        [`/portal/orders/${orderNo}/resend`, {}],
        ['/portal/developers/rotate-secret', { confirm: 'yes' }],
        ['/portal/developers/notify-url', { notify_url: 'https://evil.example/hook' }],
        ['/portal/developers/test-event', {}],
        ['/portal/account/password', { current_password: PASSWORD, new_password: 'an attacker password', new_password_repeat: 'an attacker password' }],
        ['/portal/account/sign-out-everywhere', {}],
      ];
      for (const [path, form] of forms) {
        for (const token of [null, foreignToken, 'x'.repeat(40)]) {
          await client.get('/portal/account');
          const res = await client.post(path, { ...form, _csrf: token });
          expect([path, token === foreignToken, res.status]).toEqual([path, token === foreignToken, 403]);
          expect(res.html).toContain('This form has expired');
        }
      }
      // Nothing happened: still signed in with the same password and secret, no new delivery, invitation unused.
      expect((await client.get('/portal')).status).toBe(200);
      expect((await post(api.app, '/api/merchant/getPayChannels', signed(a.merchant))).body.code).toBe(1);
      expect((await fixtures.deliveriesOfOrder(orderId)).length).toBe(deliveriesBefore);
      expect((await sql(api.app).query(`SELECT notify_url FROM merchants WHERE id = $1`, [a.merchant.id]))[0].notify_url).toBeNull();
      expect((await openInvitation(new PortalClient(api.app), invitation.invitation_url)).status).toBe(200);
      expect((await signIn(new PortalClient(api.app), user)).location).toBe('/portal');
    });
  });

  describe('pages', () => {
    it('answer with the security headers: CSP without inline scripts, no framing, nosniff, a referrer policy', async () => {
      const client = new PortalClient(api.app);
      await signIn(client, a.email);
      for (const path of ['/portal/login', '/portal', '/portal/orders', '/portal/developers', '/portal/nope', '/portal/static/portal.css']) {
        const res = await client.get(path);
        const csp = String(res.headers['content-security-policy']);
        expect([path, csp]).toEqual([path, expect.stringContaining("frame-ancestors 'none'")]);
        expect(csp).toContain("script-src 'self'");
        expect(csp).not.toContain('unsafe-inline');
        expect(res.headers['x-content-type-options']).toBe('nosniff');
        expect(res.headers['referrer-policy']).toBe('same-origin');
      }
      const anonymous = await new PortalClient(api.app).get('/portal');
      expect(anonymous.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    });

    it("never show the api_secret, a channel config value or a full payee account, and show none of another merchant's data", async () => {
      const client = new PortalClient(api.app);
      await signIn(client, a.email);
      const mine = await fixtures.insertOrder(a.merchant.id, a.channels.processor);
      await fixtures.insertEvent(mine.orderId);
      const theirs = await fixtures.insertOrder(b.merchant.id, b.channels.processor);
      await fixtures.insertEvent(theirs.orderId);

      const box = api.app.get(SecretBox);
      const configValues: string[] = [];
      for (const id of [...Object.values(a.channels), ...Object.values(b.channels)]) {
        const channel = (await api.app.get(ChannelRepository).findById(id))!;
        const config = JSON.parse(box.open(channel.configEnc, channelConfigContext(id))) as Record<string, string>;
        configValues.push(...Object.values(config));
      }
      expect(configValues.length).toBeGreaterThan(0);

      // A sell order of each merchant: the payee account is stored sealed and shown only masked.
      const sellOrders: { orderNo: string; account: string; sealed: string }[] = [];
      for (const [shop, account] of [
        [a, '6222021111112222'],
        [b, '6217003333334444'],
      ] as const) {
        await completedOrder(api.app, shop.merchant, { cny_amount: '500.00', paychannel_id: shop.channels.remotepay });
        const sell = await createSellOrder(api.app, shop.merchant, { cny_amount: '50.00', paychannel_id: shop.channels.remotepay, payee_account: account });
        expect(sell.body.code).toBe(1);
        const [row] = await sql(api.app).query(`SELECT p.payee_account_enc FROM payouts p JOIN orders o ON o.id = p.order_id WHERE o.order_no = $1`, [
          sell.body.data.order_no,
        ]);
        sellOrders.push({ orderNo: sell.body.data.order_no, account, sealed: row.payee_account_enc });
      }
      const [mySell, theirSell] = sellOrders;
      const sellPage = await client.get(`/portal/orders/${mySell.orderNo}`);
      expect(sellPage.html).toContain('6222********2222');
      // Not even the digits the mask hides, in any run of the page's text.
      expect(sellPage.html.replace(/<[^>]+>|\s/g, '')).not.toContain(mySell.account.slice(4, 12));

      const pages = [
        '/portal',
        '/portal/orders',
        `/portal/orders/${mine.orderNo}`,
        `/portal/orders/${mySell.orderNo}`,
        '/portal/ledger',
        '/portal/channels',
        '/portal/developers',
        '/portal/help',
        '/portal/account',
      ];
      const never = [
        a.merchant.api_secret,
        b.merchant.api_secret,
        b.merchant.api_key,
        theirs.orderNo,
        theirSell.orderNo,
        ...configValues,
        ...sellOrders.flatMap((o) => [o.account, o.sealed]),
      ];
      for (const path of pages) {
        const { status, html } = await client.get(path);
        expect([path, status]).toEqual([path, 200]);
        for (const secret of never) expect([path, html.includes(secret)]).toEqual([path, false]);
      }
      const csv = await client.get('/portal/orders/export.csv');
      expect(csv.html).toContain(mine.orderNo);
      expect(csv.html).toContain(mySell.orderNo);
      for (const secret of [theirs.orderNo, ...never]) expect(csv.html.includes(secret)).toBe(false);
      expect((await client.get(`/portal/orders/${theirSell.orderNo}`)).status).toBe(404);

      // Another merchant's order is a 404, like an unknown one; its Resend queues nothing.
      for (const orderNo of [theirs.orderNo, '20250101000000999999', '<script>']) {
        expect((await client.get(`/portal/orders/${encodeURIComponent(orderNo)}`)).status).toBe(404);
      }
      const before = (await fixtures.deliveriesOfOrder(theirs.orderId)).length;
      await client.get(`/portal/orders/${mine.orderNo}`);
      expect((await client.post(`/portal/orders/${theirs.orderNo}/resend`)).status).toBe(404);
      expect((await fixtures.deliveriesOfOrder(theirs.orderId)).length).toBe(before);
    });

    it('Resend queues a delivery of the latest event through the callbackResend service, and nothing while one is pending', async () => {
      const client = new PortalClient(api.app);
      await signIn(client, a.email);
      // An address: the delivery is pending (without one it would be no_address, SPEC 7 Address).
      const order = await fixtures.insertOrder(a.merchant.id, a.channels.processor, { notifyUrl: 'https://shop.example/notify' });
      const { eventId, deliveryId } = await fixtures.insertEvent(order.orderId);
      await client.get(`/portal/orders/${order.orderNo}`);
      const pending = await client.post(`/portal/orders/${order.orderNo}/resend`);
      expect(pending.location).toBe(`/portal/orders/${order.orderNo}?notice=resendPending&event=order.paid`);
      expect((await fixtures.deliveriesOfEvent(eventId)).length).toBe(1);
      expect((await client.get(pending.location!)).html).toContain('A delivery of the latest event (order.paid) is still pending; nothing new was queued.');

      await fixtures.db.query(`UPDATE callback_deliveries SET status = 'failed' WHERE id = $1`, [deliveryId]);
      await client.get(`/portal/orders/${order.orderNo}`);
      const res = await client.post(`/portal/orders/${order.orderNo}/resend`);
      expect(res.location).toBe(`/portal/orders/${order.orderNo}?notice=resent&event=order.paid`);
      expect((await fixtures.deliveriesOfEvent(eventId)).length).toBe(2);
      const page = await client.get(res.location!);
      expect(page.html).toContain('The latest event (order.paid) was queued again with the same event_id.');
    });

    it('the rotated secret is shown once, on the answer to the rotation only; the old one works 24 h by default, or stops at once', async () => {
      const shop = await merchantWithChannels(api.operator);
      const client = await inviteAndAccept(api.app, api.operator, shop.merchant.id, email('rotate'));
      await client.get('/portal/developers');
      const unconfirmed = await client.post('/portal/developers/rotate-secret', { password: PASSWORD });
      expect(unconfirmed.status).toBe(400);
      // The password is asked again, for a routine rotation and a revocation alike: the answer shows the new secret.
      for (const [grace, password] of [
        ['24h', null],
        ['0', null],
        ['24h', 'not the password'],
        ['0', 'not the password'],
      ]) {
        await client.get('/portal/developers');
        const refused = await client.post('/portal/developers/rotate-secret', { confirm: 'yes', grace, password });
        expect([grace, refused.status, errorText(refused.html)]).toEqual([grace, 400, 'The password is wrong. Nothing was changed.']);
        expect(refused.html).not.toContain('id="new-secret"');
      }
      expect(
        (await sql(api.app).query(`SELECT api_secret_previous_until FROM merchants WHERE id = $1`, [shop.merchant.id]))[0].api_secret_previous_until,
      ).toBeNull();
      await client.get('/portal/developers');
      const badGrace = await client.post('/portal/developers/rotate-secret', { confirm: 'yes', grace: '30d', password: PASSWORD });
      expect(badGrace.status).toBe(400);
      expect(errorText(badGrace.html)).toBe('Choose how long the current secret keeps working.');
      expect((await post(api.app, '/api/merchant/getPayChannels', signed(shop.merchant))).body.code).toBe(1);

      // The form and its answer say what a rotation does to a receiver checking the body signature (issue 28).
      const form = await client.get('/portal/developers');
      expect(form.html).toMatch(
        /id="rotate-callbacks">Until the grace ends, callbacks are still signed with your current secret [^<]*so your receiver keeps accepting them while you deploy the new one[^<]* <a href="\/portal\/help#rotation">/,
      );
      const answer = await client.post('/portal/developers/rotate-secret', { confirm: 'yes', password: PASSWORD });
      expect(answer.status).toBe(200);
      expect(answer.html).toMatch(
        /id="rotate-callbacks">Until \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \(China time\) callbacks are still signed with the previous secret, so a receiver that has only the previous one keeps accepting them/,
      );
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.html).toMatch(/the previous secret keeps working until \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \(China time\)/);
      const secret = /id="new-secret"[^>]*>([^<]+)</.exec(answer.html)![1];
      expect(secret).not.toBe(shop.merchant.api_secret);
      // Heard by the API (NOTIFY); the old secret keeps working meanwhile and after.
      await waitFor(
        async () => (await post(api.app, '/api/merchant/getPayChannels', signed({ ...shop.merchant, api_secret: secret }))).body.code === 1,
        HEARD_WITHIN_MS,
        'the new secret',
      );
      expect((await post(api.app, '/api/merchant/getPayChannels', signed(shop.merchant))).body.code).toBe(1);
      for (const path of ['/portal', '/portal/developers', '/portal/account']) expect((await client.get(path)).html).not.toContain(secret);

      await client.get('/portal/developers');
      const revoked = await client.post('/portal/developers/rotate-secret', { confirm: 'yes', grace: '0', password: PASSWORD });
      expect(revoked.html).toContain('the previous secret no longer works');
      expect(revoked.html).not.toContain('id="rotate-callbacks"');
      const newest = /id="new-secret"[^>]*>([^<]+)</.exec(revoked.html)![1];
      await waitFor(
        async () => (await post(api.app, '/api/merchant/getPayChannels', signed({ ...shop.merchant, api_secret: secret }))).body.code === 40102,
        1000,
        'the revoked secret refused',
      );
      expect((await post(api.app, '/api/merchant/getPayChannels', signed({ ...shop.merchant, api_secret: newest }))).body.code).toBe(1);
    });

    it('Send test event: needs a notify URL, and shows the attempt, here refused as a private address (CALLBACK_ALLOW_PRIVATE off)', async () => {
      const shop = await merchantWithChannels(api.operator);
      const client = await inviteAndAccept(api.app, api.operator, shop.merchant.id, email('test-event'));
      await client.get('/portal/developers');
      const none = await client.post('/portal/developers/test-event', {});
      expect(none.status).toBe(400);
      expect(errorText(none.html)).toBe('Set a notify URL first: the test event is sent there.');

      // Set before private hosts were refused at input (SPEC 7 Address): the test event is still refused when sent.
      await sql(api.app).query(`UPDATE merchants SET notify_url = $1 WHERE id = $2`, ['http://10.0.0.7/notify', shop.merchant.id]);
      await client.get('/portal/developers');
      const sent = await client.post('/portal/developers/test-event', {});
      expect(sent.status).toBe(200);
      expect(sent.html).toContain('id="test-result"');
      expect(errorText(sent.html)).toBe('The test event was not accepted. Real callbacks would be retried; this one is not.');
      expect(sent.html).toContain('http://10.0.0.7/notify');
      expect(sent.html).toMatch(/private/);

      // The language switch on the answer reloads the page the form is on: the test-event path has no page of its own (a 404 before).
      const switchLink = /href="([^"]+)" lang="zh-CN"/.exec(sent.html)![1];
      expect(switchLink).toBe('/portal/developers?lang=zh-CN');
      const switched = await client.get(switchLink);
      expect([switched.status, switched.location]).toEqual([303, '/portal/developers']);
      const page = await client.get(switched.location!);
      expect(page.status).toBe(200);
      expect(page.html).toContain('<html lang="zh-CN">');
    });

    it('the notify URL is changed only to an http(s) URL of at most 512 characters', async () => {
      const client = new PortalClient(api.app);
      await signIn(client, a.email);
      for (const bad of ['ftp://x.example/cb', 'not a url', `https://x.example/${'a'.repeat(500)}`]) {
        await client.get('/portal/developers');
        const res = await client.post('/portal/developers/notify-url', { notify_url: bad });
        expect([bad, res.status]).toEqual([bad, 400]);
      }
      await client.get('/portal/developers');
      expect((await client.post('/portal/developers/notify-url', { notify_url: 'https://shop.example/notify' })).location).toBe(
        '/portal/developers?notice=saved',
      );
      expect((await sql(api.app).query(`SELECT notify_url FROM merchants WHERE id = $1`, [a.merchant.id]))[0].notify_url).toBe('https://shop.example/notify');
    });
  });

  describe('orderList', () => {
    const orderList = (cookie: string | null, body: Record<string, unknown> = {}) =>
      api.app.inject({
        method: 'POST',
        url: '/api/merchant/orderList',
        headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
        payload: JSON.stringify(body),
      });

    it('is 40100 without a session, with a made-up one and with an expired one', async () => {
      expect((await orderList(null)).json()).toMatchObject({ code: 40100, data: null });
      expect((await orderList(`portal_session=${'B'.repeat(43)}`)).json().code).toBe(40100);
      const client = new PortalClient(api.app);
      await inviteAndAccept(api.app, api.operator, b.merchant.id, b.email);
      await signIn(client, b.email);
      expect((await orderList(client.cookieHeader())).json().code).toBe(1);
      await sql(api.app).query(`UPDATE portal_sessions SET expires_at = now() - interval '1 second'`);
      const expired = await orderList(client.cookieHeader());
      expect([expired.statusCode, expired.json().code]).toEqual([401, 40100]);
    });

    it('answers the same data as orderQueryList for the same filters, and the same 40000 for bad ones', async () => {
      const client = new PortalClient(api.app);
      await signIn(client, a.email);
      for (let i = 0; i < 3; i++) await fixtures.insertOrder(a.merchant.id, a.channels.remotepay, { status: i === 0 ? 'pending' : 'paid' });
      for (const filters of [{}, { status: 'paid', page: 1, limit: 2 }, { page: '2', limit: '2' }, { order_type: 1, start_time: 0, end_time: 4102444800 }]) {
        const session = (await orderList(client.cookieHeader(), filters)).json();
        const signedAnswer = (await post(api.app, '/api/merchant/orderQueryList', signed(a.merchant, filters))).body;
        expect(session.code).toBe(1);
        expect(session.data).toEqual(signedAnswer.data);
        for (const order of session.data.list) expect(order).toHaveProperty('merchant_order_no');
      }
      const bad = (await orderList(client.cookieHeader(), { limit: 500 })).json();
      expect(bad.code).toBe(40000);
      expect(bad.data.errors[0].field).toBe('limit');
    });

    it('is in the OpenAPI document with a cookie security scheme', async () => {
      const doc = (await api.app.inject({ method: 'GET', url: '/docs-json' })).json();
      expect(doc.components.securitySchemes.portal_session).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'portal_session' });
      expect(doc.paths['/api/merchant/orderList'].post.security).toEqual([{ portal_session: [] }]);
    });
  });
});
