import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runCli } from '../apps/cli/src/main';
import { signed } from './helpers/api';
import { waitFor } from './helpers/callbacks';
import { freePort } from './helpers/free-port';

const MAIN = resolve(__dirname, '../dist/apps/embedded/src/main.js');

interface Running {
  child: ChildProcess;
  output: () => string;
}

/**
 * `npm start`'s entry point in `dir`, with nothing configured, in a process group of its own as
 * in a terminal; resolves once the banner is printed.
 */
function start(dir: string, port: number, pgPort: number): Promise<Running> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, PORT: String(port), EMBEDDED_PG_PORT: String(pgPort) };
  const child = spawn(process.execPath, [MAIN], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`no banner within 90 s:\n${output}`)), 90_000);
    const check = setInterval(() => {
      if (output.includes('merchant-pay is running')) {
        clearTimeout(timer);
        clearInterval(check);
        done({ child, output: () => output });
      }
    }, 100);
    child.once('exit', (code) => {
      clearTimeout(timer);
      clearInterval(check);
      fail(new Error(`exited with ${code} before the banner:\n${output}`));
    });
  });
}

/** Ctrl-C, which a terminal sends to its whole foreground process group: resolves when the process exited. */
async function stop(running: Running): Promise<void> {
  const exited = new Promise<void>((done) => running.child.once('exit', () => done()));
  process.kill(-running.child.pid!, 'SIGINT');
  await exited;
}

/** What a newcomer would find alarming in the terminal: a warning, an error, a stack trace. */
function alarming(output: string): string[] {
  // eslint-disable-next-line no-control-regex
  const plain = output.replace(/\x1b\[[0-9;]*m/g, '');
  return plain.split('\n').filter((line) => /\b(WARN|ERROR|FATAL)\b|^error:|^\s+at /i.test(line));
}

/** A PostgreSQL left running on `pgDir` (a failed test): stopped, as it runs in a session of its own. */
function stopLeftOverPostgres(pgDir: string): void {
  const pidFile = join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  try {
    process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGINT');
  } catch {
    // Already gone.
  }
}

describe('embedded default (npm start with nothing configured)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mp-embedded-'));
  let port: number;
  let pgPort: number;

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first (npm test does)`);
    // As root, PostgreSQL runs as an unprivileged user that must reach the data folder (mkdtemp makes it 0700).
    chmodSync(dir, 0o755);
    port = await freePort();
    pgPort = await freePort();
  });
  afterAll(async () => {
    const pidFile = join(dir, '.data/pg/postmaster.pid');
    stopLeftOverPostgres(join(dir, '.data/pg'));
    // PostgreSQL removes its pid file last, on its way out.
    await waitFor(() => !existsSync(pidFile), 10_000, 'PostgreSQL stopped').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  async function getPayChannels(demo: { api_key: string; api_secret: string }) {
    const res = await fetch(`http://127.0.0.1:${port}/api/merchant/getPayChannels`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(signed(demo)),
    });
    return (await res.json()) as { code: number; data: { total: number; list: { id: number; category: string }[] } };
  }

  /** A browser's visit: accept the invitation, then rotate the secret on the developers page; answers the new secret. */
  async function rotateInThePortal(invitation: string): Promise<string> {
    const cookies = new Map<string, string>();
    const visit = async (url: string, form?: Record<string, string>) => {
      const res = await fetch(new URL(url, `http://127.0.0.1:${port}`), {
        method: form ? 'POST' : 'GET',
        redirect: 'manual',
        headers: {
          cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
          'accept-language': 'en',
          ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body: form ? new URLSearchParams(form).toString() : undefined,
      });
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
      }
      const html = await res.text();
      return { status: res.status, html, csrf: /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '' };
    };
    // The link hands its token to a cookie and sends the browser on to the bare /portal/invite (SPEC 8a).
    expect((await visit(invitation)).status).toBe(303);
    const invite = await visit('/portal/invite');
    const password = 'demo password for the test';
    expect((await visit('/portal/invite', { _csrf: invite.csrf, password, password_repeat: password })).status).toBe(303);
    const developers = await visit('/portal/developers');
    const answer = await visit('/portal/developers/rotate-secret', { _csrf: developers.csrf, confirm: 'yes', grace: '24h', password });
    const secret = /id="new-secret"[^>]*>([^<]+)</.exec(answer.html)?.[1];
    if (!secret) throw new Error(`no new secret on the rotation's answer (${answer.status})`);
    return secret.trim();
  }

  /** The "done when": create an order, pay it on the sandbox page, receive its callbacks on localhost. */
  async function payOnTheSandboxAndReceiveCallbacks(demo: { api_key: string; api_secret: string; channel_ids: number[] }): Promise<void> {
    const received: Record<string, unknown>[] = [];
    const receiver = createHttpServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        received.push(JSON.parse(raw) as Record<string, unknown>);
        res.end('success');
      });
    });
    const receiverPort = await freePort();
    await new Promise<void>((done) => receiver.listen(receiverPort, '127.0.0.1', done));
    try {
      const params = {
        order_type: 1,
        cny_amount: '100.00',
        paychannel_id: demo.channel_ids[1],
        paychannel_paymethod: 'alipay',
        notify_url: `http://127.0.0.1:${receiverPort}/cb`,
      };
      const created = (await (
        await fetch(`http://127.0.0.1:${port}/api/merchant/createOrder`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(signed(demo, params)),
        })
      ).json()) as { code: number; data: { order_no: string; pay_url: string; merchant_actual_amount: number } };
      expect(created.code).toBe(1);
      const page = await (await fetch(created.data.pay_url)).text();
      const token = /name="token" value="([^"]+)"/.exec(page)?.[1];
      expect(token).toBeDefined();
      const paid = await fetch(`http://127.0.0.1:${port}/sandbox/checkout/${created.data.order_no}/pay`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: token! }).toString(),
      });
      expect(paid.status).toBe(200);
      await waitFor(() => received.some((c) => c.event === 'order.completed'), 60_000, 'order.completed at the shop').catch(() => undefined);
      expect(received.map((c) => c.event)).toEqual(expect.arrayContaining(['order.paid', 'order.completed']));
      expect(received.every((c) => c.order_no === created.data.order_no)).toBe(true);
      // Without Redis the callbacks' nonces are spent in the nonces table: a callback sent back is no request.
      for (const callback of received) {
        const replayed = await fetch(`http://127.0.0.1:${port}/api/merchant/orderQueryList`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(callback),
        });
        expect([replayed.status, ((await replayed.json()) as { code: number }).code]).toEqual([401, 40104]);
      }

      // The operator CLI beside a running `npm start` finds the embedded database by itself.
      let out = '';
      const code = await runCli(['merchant:balance', '--merchant', '1'], {
        env: { DATA_DIR: join(dir, '.data'), EMBEDDED_PG_PORT: String(pgPort) },
        stdout: (t) => (out += t),
        stderr: () => undefined,
      });
      expect(code).toBe(0);
      expect(JSON.parse(out)).toEqual({ available_fen: created.data.merchant_actual_amount, deposit_fen: 0 });
    } finally {
      receiver.close();
    }
  }

  it('starts, serves the demo merchant, stops on Ctrl-C, and a restart reuses the data', async () => {
    const first = await start(dir, port, pgPort);
    let demo: { api_key: string; api_secret: string; channel_ids: number[] };
    let invitation: string | undefined;
    try {
      demo = JSON.parse(readFileSync(join(dir, '.data/demo-merchant.json'), 'utf8'));
      expect(Object.keys(demo).sort()).toEqual(['api_key', 'api_secret', 'channel_ids']);
      // A clean start: the banner is the first thing printed.
      expect(first.output().trimStart()).toMatch(/^merchant-pay is running/);
      // A test merchant: its sandbox money never counts as live (SPEC 5).
      expect(demo.api_key).toMatch(/^mk_test_[0-9A-Za-z]{24}$/);
      expect(first.output()).toContain(demo.api_key);
      expect(first.output()).toContain(demo.api_secret);
      expect(first.output()).toContain('CALLBACK_ALLOW_PRIVATE=true');
      // The demo portal user's invitation, ready to open.
      invitation =
        new RegExp(`portal\\s+(http://127\\.0\\.0\\.1:${port}/portal/invite/[A-Za-z0-9_-]{43})\\s+\\(demo@example\\.com`).exec(first.output())?.[1] ?? '';
      // The link keeps its token in a cookie for /portal/invite and sends the browser there (SPEC 8a).
      const link = await fetch(invitation, { redirect: 'manual' });
      expect([link.status, link.headers.get('location')]).toEqual([303, '/portal/invite']);
      const cookie = link.headers
        .getSetCookie()
        .find((c) => c.startsWith('portal_invite='))!
        .split(';')[0];
      const invitePage = await fetch(`http://127.0.0.1:${port}/portal/invite`, { headers: { cookie } });
      expect(invitePage.status).toBe(200);
      expect(await invitePage.text()).toContain('demo@example.com');
      const res = await getPayChannels(demo);
      expect(res.code).toBe(1);
      expect(res.data.list.map((c) => c.category)).toEqual(['processor', 'remotepay', 'warehouse']);
      expect(res.data.list.map((c) => c.id)).toEqual(demo.channel_ids);
      expect((await fetch(`http://127.0.0.1:${port}/ready`)).status).toBe(200);
      await payOnTheSandboxAndReceiveCallbacks(demo);
    } finally {
      await stop(first);
    }
    // A clean stop: the apps first, then the database, with nothing alarming on the way.
    expect(first.child.exitCode).toBe(0);
    expect(alarming(first.output())).toEqual([]);
    expect(existsSync(join(dir, '.data/pg/postmaster.pid'))).toBe(false);

    const second = await start(dir, port, pgPort);
    try {
      const again = JSON.parse(readFileSync(join(dir, '.data/demo-merchant.json'), 'utf8'));
      expect(again).toEqual(demo);
      expect((await getPayChannels(demo)).data.total).toBe(3);
      // Not used yet and not expired: the same link again.
      expect(second.output()).toContain(invitation!);
      // A rotation in the portal: .data/demo-merchant.json holds the new secret, which signs (issue 38).
      const rotated = await rotateInThePortal(invitation!);
      expect(JSON.parse(readFileSync(join(dir, '.data/demo-merchant.json'), 'utf8'))).toEqual({ ...demo, api_secret: rotated });
      expect((await getPayChannels({ ...demo, api_secret: rotated })).code).toBe(1);
    } finally {
      await stop(second);
    }
    expect(second.child.exitCode).toBe(0);
    expect(alarming(second.output())).toEqual([]);
  }, 240_000);

  // As root the server runs as postgres; a data folder it cannot reach is refused with what to do, not initdb's EACCES.
  (process.getuid?.() === 0 ? it : it.skip)(
    'as root, a DATA_DIR the server user cannot reach is refused with what to do',
    async () => {
      const closed = mkdtempSync(join(tmpdir(), 'mp-embedded-closed-'));
      try {
        chmodSync(closed, 0o700);
        const failed = await start(closed, await freePort(), await freePort()).then(
          (running) => stop(running).then(() => 'started'),
          (err: Error) => err.message,
        );
        expect(failed).toMatch(/exited with 1 before the banner/);
        expect(failed).toMatch(/runs as the user postgres .* cannot reach .*\.data: .*DATA_DIR/);
      } finally {
        rmSync(closed, { recursive: true, force: true });
      }
    },
    60_000,
  );
});
