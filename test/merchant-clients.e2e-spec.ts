import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AppConfig } from '@app/common';
import { sign } from '@app/signature';
import { type Credentials, OperatorModule } from '@app/operator';
import { CallbackReceiver, type ReceivedCallback, flushQueueKeys, waitFor } from './helpers/callbacks';
import { testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';
import { freePort } from './helpers/free-port';
import { type Running, launch, stopProcess } from './helpers/processes';
import { type OperatorServices, operatorServices } from './helpers/operator-services';
import { MerchantClient } from '../examples/merchant-client';

const ROOT = resolve(__dirname, '..');
const API_MAIN = join(ROOT, 'dist/apps/api/src/main.js');
const WORKER_MAIN = join(ROOT, 'dist/apps/worker/src/main.js');

interface Vectors {
  api_secret: string;
  cases: { name: string; query: Record<string, unknown>; body: Record<string, unknown>; signature: string }[];
}
const vectors = JSON.parse(readFileSync(join(ROOT, '../shared/vectors/signature.json'), 'utf8')) as Vectors;

/** One of the clients of examples/: how to install or build it, and whether this machine can. */
interface Language {
  name: string;
  /** Where its source is. */
  folder: string;
  /** Why it cannot run here (a tool missing or too old), or null when it can. */
  missing: () => string | null;
  /** Once, before the language's tests: installs or builds it, and answers the argv prefix that runs its command. */
  prepare: () => string[];
  /** How its typed answers print a yuan amount, a fen amount and a whole number, by the JSON field's name (PHP's answers are plain arrays: none). */
  typed?: { yuan: (field: string, value: string) => string; fen: (field: string, value: number) => string; whole: (field: string, value: number) => string };
}

/** The first ```lang block of the section under `heading` in a README of the repository. */
function readmeSnippet(file: string, heading: string, lang: string): string {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`${file} has no section ${heading}`);
  const section = text.slice(start + heading.length + 2).split(/\n#{2,3} /)[0];
  const block = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(section);
  if (!block) throw new Error(`${file} ${heading} has no ${lang} block`);
  return block[1];
}

const work = mkdtempSync(join(tmpdir(), 'mp-clients-'));

/** Runs a tool for the set-up; its output in the error when it fails. */
function tool(program: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const done = spawnSync(program, args, { encoding: 'utf8', timeout: 300_000, ...options });
  if (done.status !== 0) throw new Error(`${program} ${args.join(' ')} failed (${done.status ?? done.error?.message}):\n${done.stdout}\n${done.stderr}`);
  return done.stdout;
}

/**
 * The Python that can build the package offline: 3.8 or later with venv (ensurepip) and the build
 * backend, setuptools and wheel (Debian's python3-venv, python3-setuptools, python3-wheel); the
 * first python3 on PATH, else Debian's own.
 */
function buildPython(): { python: string } | { why: string } {
  const reasons: string[] = [];
  for (const python of ['python3', '/usr/bin/python3']) {
    const probe = spawnSync(python, ['-c', 'import sys, ensurepip, setuptools, wheel; sys.exit(0 if sys.version_info >= (3, 8) else 3)'], { encoding: 'utf8' });
    if (probe.status === 0) return { python };
    reasons.push(
      `${python}: ${probe.error ? (probe.error as NodeJS.ErrnoException).code : probe.status === 3 ? 'older than 3.8' : probe.stderr.trim().split('\n').pop()}`,
    );
  }
  return { why: `no python3 with venv, setuptools and wheel (${reasons.join('; ')})` };
}

const LANGUAGES: Language[] = [
  {
    name: 'PHP',
    folder: 'examples/php',
    missing: () => probe('php', ['-r', 'exit(PHP_VERSION_ID >= 80100 ? 0 : 1);']),
    prepare: () => ['php', join(ROOT, 'examples/php/MerchantClient.php')],
  },
  {
    name: 'Python',
    folder: 'examples/python',
    missing: () => {
      const found = buildPython();
      return 'why' in found ? found.why : null;
    },
    // As a merchant installs it: into a fresh venv, offline, from the folder (a copy: the build writes beside the sources).
    prepare: () => {
      const found = buildPython() as { python: string };
      const source = join(work, 'python-src');
      cpSync(join(ROOT, 'examples/python'), source, { recursive: true, filter: (path) => !/(__pycache__|\.egg-info|\/build)$/.test(path) });
      const venv = join(work, 'venv');
      // The venv sees the system's packages for the build backend only (--no-build-isolation takes setuptools and wheel from there).
      tool(found.python, ['-m', 'venv', '--system-site-packages', venv]);
      const env = { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_NO_INPUT: '1' };
      tool(join(venv, 'bin/python'), ['-m', 'pip', 'install', '--no-build-isolation', '--no-index', source], { env });
      // Nothing to install beside it: the package declares no dependency.
      const requires = tool(join(venv, 'bin/python'), ['-c', 'import importlib.metadata as m; print(m.requires("merchant-pay-client"))']).trim();
      if (requires !== 'None') throw new Error(`merchant-pay-client declares dependencies: ${requires}`);
      // Its own offline tests, as a publisher runs them.
      tool(join(venv, 'bin/python'), ['-m', 'unittest', 'discover', '-s', join(source, 'tests')], { cwd: work });
      return [join(venv, 'bin/merchant-pay-client')];
    },
    typed: { yuan: (field, value) => `${field}=Decimal('${value}')`, fen: (field, value) => `${field}=${value}`, whole: (field, value) => `${field}=${value}` },
  },
  {
    name: 'Java',
    folder: 'examples/java',
    missing: () => probe('javac', ['-version'], /^javac (1[7-9]|[2-9]\d)\b/m),
    // Maven's layout compiled with javac (no Maven Central here for the plugins): what `mvn package` compiles.
    prepare: () => {
      const classes = join(work, 'java-classes');
      const sources = readdirSync(join(ROOT, 'examples/java/src/main/java'), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.java'))
        .map((f) => join(ROOT, 'examples/java/src/main/java', f));
      tool('javac', ['--release', '17', '-Xlint:all', '-Werror', '-d', classes, ...sources]);
      return ['java', '-cp', classes, 'com.merchantpay.client.Cli'];
    },
    // Java names: camelCase, and a fen amount says so (serviceAmountFen) beside the BigDecimal yuan.
    typed: {
      yuan: (field, value) => `${camel(field)}=${value}`,
      fen: (field, value) => `${camel(field)}${field.endsWith('_fen') ? '' : 'Fen'}=${value}`,
      whole: (field, value) => `${camel(field)}=${value}`,
    },
  },
];

const camel = (field: string) => field.replace(/_(\w)/g, (_m, c: string) => c.toUpperCase());

/** Why a tool cannot run here (missing, or its version too old), or null when it can. */
function probe(program: string, args: string[], version?: RegExp): string | null {
  const run = spawnSync(program, args, { encoding: 'utf8' });
  if (run.error) return `${program} is not installed (${(run.error as NodeJS.ErrnoException).code})`;
  if (run.status !== 0) return `${program} ${args.join(' ')} exited ${run.status}: ${run.stderr.trim()}`;
  const printed = `${run.stdout}${run.stderr}`.trim();
  if (version && !version.test(printed)) return `${program} is too old (${printed})`;
  return null;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('merchant clients in other languages, against the compiled API and worker', () => {
  const processes: Running[] = [];
  let config: AppConfig;
  let cli: INestApplicationContext;
  let operator: OperatorServices;
  let receiver: CallbackReceiver;
  let baseUrl: string;
  let channelIds: number[];

  beforeAll(async () => {
    for (const main of [API_MAIN, WORKER_MAIN]) if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first (npm test does)`);
    // Its callbacks go to receivers on this machine: the operator takes their 127.0.0.1 notify URLs (SPEC 7 Address).
    config = testConfig(await createTestDatabase(), { CALLBACK_ALLOW_PRIVATE: 'true' });
    cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    operator = operatorServices(cli);
    receiver = await CallbackReceiver.start();
    channelIds = [];
    for (const category of ['processor', 'remotepay', 'warehouse']) {
      const { id } = await operator.channels.create({
        category,
        name: `Sandbox ${category}`,
        payMethod: 'alipay,wxpay,bank',
        adapter: 'sandbox',
        rate: '0.006',
      });
      channelIds.push(id);
    }
    const port = await freePort();
    const env = {
      DATABASE_URL: config.databaseUrl,
      REDIS_URL: config.redisUrl!,
      MASTER_KEY: config.masterKey.toString('base64'),
      QUEUE_PREFIX: config.queuePrefix,
      CALLBACK_ALLOW_PRIVATE: 'true',
      SANDBOX_ENABLED: 'true',
      CALLBACK_RETRY_SCHEDULE: '1s,1s,2s',
      LOG_LEVEL: 'info',
    };
    processes.push(launch('api', API_MAIN, { ...env, PORT: String(port) }), launch('worker', WORKER_MAIN, env));
    await waitFor(
      () =>
        fetch(`http://127.0.0.1:${port}/ready`).then(
          (r) => r.status === 200,
          () => false,
        ),
      30_000,
      'the API ready',
    );
    await waitFor(() => processes[1].output().includes('taking jobs'), 30_000, 'the worker taking jobs');
    baseUrl = `http://127.0.0.1:${port}/api`;
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => stopProcess(p)));
    await receiver?.close();
    await cli?.close();
    if (config) await flushQueueKeys(config.queuePrefix);
    rmSync(work, { recursive: true, force: true });
  }, 30_000);

  for (const language of LANGUAGES) {
    const why = language.missing();
    const suite = why === null ? describe : describe.skip;
    // Loud in any run, not only a verbose one: a skipped language is never mistaken for a passed one.
    if (why !== null) console.warn(`merchant clients: the ${language.name} client's tests are SKIPPED: ${why}`);
    suite(`${language.name} (${language.folder})${why === null ? '' : `: SKIPPED, ${why}`}`, () => {
      let command: string[];
      let merchant: Credentials;

      /** The client as a command, with the merchant's credentials in its environment. */
      const run = (args: string[], options: { stdin?: string; env?: Record<string, string>; as?: string[] } = {}): Promise<Run> =>
        new Promise((done) => {
          const env = {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? tmpdir(),
            LANG: 'C.UTF-8',
            MERCHANT_BASE_URL: baseUrl,
            MERCHANT_API_KEY: merchant?.api_key ?? '',
            MERCHANT_API_SECRET: merchant?.api_secret ?? '',
            ...options.env,
          };
          const [program, ...prefix] = options.as ?? command;
          const child = execFile(program, [...prefix, ...args], { env, encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) =>
            done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
          );
          child.stdin!.end(options.stdin ?? '');
        });
      const call = async (operation: string, params: Record<string, unknown>, env?: Record<string, string>) => {
        const out = await run(['call', operation, JSON.stringify(params)], { env });
        return { ...out, answer: JSON.parse(out.stdout) as { code: number; msg: string; data: Record<string, unknown> | null } };
      };
      const verify = async (callback: ReceivedCallback, raw = callback.raw, env?: Record<string, string>) => {
        const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [h, String(callback.headers[h])]));
        const out = await run(['verify', JSON.stringify(headers)], { stdin: raw, env });
        return { code: out.code, result: JSON.parse(out.stdout) as { body_signature: boolean; webhook_signature: boolean } };
      };
      const ofMerchant = (event: string) => receiver.received.filter((c) => c.body.api_key === merchant.api_key && c.body.event === event);

      beforeAll(async () => {
        command = language.prepare();
        merchant = await operator.merchants.create({ name: `${language.name} shop`, mode: 'test', notifyUrl: `${receiver.url}/notify` });
        for (const id of channelIds) await operator.channels.link(merchant.id, id);
      }, 120_000);

      it('signs every case of the shared signature vectors', async () => {
        for (const c of vectors.cases) {
          const out = await run(['sign', JSON.stringify({ ...c.query, ...c.body })], { env: { MERCHANT_API_SECRET: vectors.api_secret } });
          expect([c.name, out.stdout.trim()]).toEqual([c.name, c.signature]);
        }
      }, 60_000);

      it("runs the demo: create, pay on the sandbox page, order.paid and order.completed verified both ways; then a refund, its callback verified, and the day's statement", async () => {
        const callbackPort = await freePort();
        const demo = spawn(command[0], [...command.slice(1), 'demo'], {
          env: {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? tmpdir(),
            LANG: 'C.UTF-8',
            MERCHANT_BASE_URL: baseUrl,
            MERCHANT_API_KEY: merchant.api_key,
            MERCHANT_API_SECRET: merchant.api_secret,
            DEMO_CALLBACK_PORT: String(callbackPort),
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        demo.stdout.on('data', (d: Buffer) => (output += d.toString()));
        demo.stderr.on('data', (d: Buffer) => (output += d.toString()));
        const exited = new Promise<number | null>((done) => demo.once('exit', (code) => done(code)));
        try {
          const payUrl = await waitFor(
            () => /^pay_url (\S+)$/m.exec(output)?.[1] ?? (demo.exitCode !== null && output),
            60_000,
            'the demo printing its pay_url',
          );
          expect(payUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/sandbox\/checkout\/\d{22}\?token=/);
          const orderNo = /checkout\/(\d{22})/.exec(payUrl)![1];
          const token = new URL(payUrl).searchParams.get('token')!;
          const paid = await fetch(new URL(`/sandbox/checkout/${orderNo}/pay`, payUrl), {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ token }).toString(),
          });
          expect(await paid.text()).toContain('Payment succeeded');
          expect(
            await Promise.race([exited, waitFor(() => demo.exitCode !== null, 60_000, 'the demo ending after order.completed').then(() => demo.exitCode)]),
          ).toBe(0);
          const lines = output.split('\n').filter((l) => l.startsWith('callback '));
          expect(lines).toEqual([
            `callback order.paid order ${orderNo} status paid body-signature valid webhook-signature valid`,
            `callback order.completed order ${orderNo} status completed body-signature valid webhook-signature valid`,
          ]);

          const refund = await call('refundCreate', {
            order_no: orderNo,
            refund_amount: '30.00',
            merchant_refund_no: `${language.name}-refund-1`,
            notify_url: `${receiver.url}/refund`,
          });
          expect([refund.code, refund.answer.code, refund.answer.data?.status, refund.answer.data?.refund_amount]).toEqual([0, 1, 'processing', '30.00']);
          await waitFor(
            async () => (await call('refundQuery', { merchant_refund_no: `${language.name}-refund-1` })).answer.data?.status === 'succeeded',
            30_000,
            'the refund succeeded',
          );
          const [refunded] = await waitFor(
            () => ofMerchant('refund.succeeded').length > 0 && ofMerchant('refund.succeeded'),
            30_000,
            'the refund.succeeded callback',
          );
          expect(refunded.body).toMatchObject({ order_no: orderNo, refund_no: refund.answer.data?.refund_no, status: 'succeeded' });
          expect(await verify(refunded)).toEqual({ code: 0, result: { body_signature: true, webhook_signature: true } });

          // The day's statement through the client: this order's credit and the refund's debit, and the movements add up.
          const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Shanghai' }).format(new Date());
          const statement = await call('statementQuery', { date: today });
          expect([statement.code, statement.answer.code]).toEqual([0, 1]);
          const day = statement.answer.data as {
            opening_balance: { available_fen: number; deposit_fen: number };
            closing_balance: { available_fen: number; deposit_fen: number };
            movements: { order_no: string; refund_no: string | null; account: string; amount_fen: number }[];
          };
          const mine = day.movements.filter((m) => m.order_no === orderNo);
          expect(mine.some((m) => m.refund_no === null && m.amount_fen > 0)).toBe(true);
          expect(mine.some((m) => m.refund_no === refund.answer.data?.refund_no && m.amount_fen === -3000)).toBe(true);
          const moved = (account: string) => day.movements.filter((m) => m.account === account).reduce((sum, m) => sum + m.amount_fen, 0);
          expect(day.closing_balance.available_fen - day.opening_balance.available_fen).toBe(moved('available'));
          expect(day.closing_balance.deposit_fen - day.opening_balance.deposit_fen).toBe(moved('deposit'));
          // balanceQuery through the client: the balances today's statement closes on (SPEC 6).
          const balance = await call('balanceQuery', {});
          expect([balance.code, balance.answer.code]).toEqual([0, 1]);
          expect(balance.answer.data).toEqual({ ...day.closing_balance, as_of: expect.any(Number) });
        } finally {
          if (demo.exitCode === null) demo.kill();
        }
      }, 120_000);

      it('surfaces an error answer as its error type with the code and msg', async () => {
        const unknown = await call('orderQueryDetail', { order_no: '2000010101000000000000' });
        expect([unknown.code, unknown.answer.code]).toEqual([1, 40400]);
        expect(unknown.stderr).toContain(`MerchantError 40400: ${unknown.answer.msg}`);
        // A wrong secret: the service refuses the signature.
        const forged = await call('getPayChannels', {}, { MERCHANT_API_SECRET: 'not-the-secret-of-this-merchant' });
        expect([forged.code, forged.answer.code]).toEqual([1, 40102]);
        expect(forged.stderr).toContain('MerchantError 40102');
        // No base URL: one clear line, not a stack trace or a call to some default address.
        const nowhere = await run(['call', 'getPayChannels', '{}'], { env: { MERCHANT_BASE_URL: '' } });
        expect([nowhere.code, nowhere.stdout, nowhere.stderr.trim()]).toEqual([
          2,
          '',
          'MERCHANT_BASE_URL is not set (your {base_url}, e.g. http://127.0.0.1:3000/api)',
        ]);
      }, 60_000);

      if (language.typed) {
        const { yuan, fen, whole } = language.typed;
        it('answers typed values: yuan as decimals, fen as integers, the same as the JSON answer', async () => {
          const typed = async (operation: string, params: Record<string, unknown>) => {
            const out = await run(['typed', operation, JSON.stringify(params)]);
            expect([operation, out.code, out.stderr]).toEqual([operation, 0, '']);
            return out.stdout.trim();
          };
          const merchantOrderNo = `${language.name}-typed-1`;
          const created = await typed('createOrder', {
            cny_amount: '12.34',
            paychannel_id: channelIds[0],
            paychannel_paymethod: 'alipay',
            merchant_order_no: merchantOrderNo,
          });
          const raw = (await call('orderQueryDetail', { merchant_order_no: merchantOrderNo })).answer.data as {
            order_no: string;
            cny_amount: string;
            service_rate: string;
            service_amount: number;
            merchant_actual_amount: number;
          };
          expect(raw.cny_amount).toBe('12.34');
          for (const shown of [created, await typed('orderQueryDetail', { merchant_order_no: merchantOrderNo })]) {
            expect(shown).toContain(raw.order_no);
            expect(shown).toContain(yuan('cny_amount', '12.34'));
            expect(shown).toContain(fen('service_amount', raw.service_amount));
            expect(shown).toContain(fen('merchant_actual_amount', raw.merchant_actual_amount));
          }
          expect(created).toContain(yuan('merchant_amount', ((1234 - raw.service_amount) / 100).toFixed(2)));
          // An amount with a third decimal place is refused before anything is sent, never rounded.
          const fraction = await run([
            'typed',
            'createOrder',
            JSON.stringify({ cny_amount: '1.005', paychannel_id: channelIds[0], paychannel_paymethod: 'alipay' }),
          ]);
          expect([fraction.code, fraction.stderr]).toEqual([2, expect.stringContaining('more than two decimal places')]);
          // An error answer through a typed method: the same error type.
          const unknown = await run(['typed', 'orderQueryDetail', JSON.stringify({ order_no: '2000010101000000000000' })]);
          expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringContaining('MerchantError 40400')]);
          const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Shanghai' }).format(new Date());
          const day = (await call('statementQuery', { date: today })).answer.data as {
            closing_balance: { available_fen: number; deposit_fen: number };
            total: number;
          };
          const statement = await typed('statementQuery', { date: today });
          expect(statement).toContain(fen('available_fen', day.closing_balance.available_fen));
          expect(statement).toContain(whole('total', day.total));
          const balance = await typed('balanceQuery', {});
          expect(balance).toContain(fen('available_fen', day.closing_balance.available_fen));
          expect(balance).toContain(fen('deposit_fen', day.closing_balance.deposit_fen));
        }, 60_000);
      }

      it('refuses a tampered callback and a stale webhook-timestamp', async () => {
        const sent = await call('callbackTest', { url: `${receiver.url}/test` });
        expect([sent.code, sent.answer.data?.success]).toEqual([0, true]);
        const [test] = ofMerchant('webhook.test').slice(-1);
        expect(await verify(test)).toEqual({ code: 0, result: { body_signature: true, webhook_signature: true } });

        const tampered = test.raw.replace(/"api_key"/, '"extra":"1","api_key"');
        expect(tampered).not.toBe(test.raw);
        expect(await verify(test, tampered)).toEqual({ code: 1, result: { body_signature: false, webhook_signature: false } });

        // Signed correctly, but an hour old: a replay.
        const old = String(Math.floor(Date.now() / 1000) - 3600);
        const resigned = createHmac('sha256', merchant.api_secret)
          .update(`${String(test.headers['webhook-id'])}.${old}.${test.raw}`)
          .digest('base64');
        const stale = { ...test, headers: { ...test.headers, 'webhook-timestamp': old, 'webhook-signature': `v1,${resigned}` } };
        expect((await verify(stale)).result.webhook_signature).toBe(false);
      }, 60_000);

      if (language.name === 'Python') {
        const found = buildPython();
        const frameworks = 'why' in found ? found.why : probe(found.python, ['-c', 'import flask, django']);
        if (frameworks !== null) console.warn(`merchant clients: the Flask and Django receivers are SKIPPED: ${frameworks}`);
        (frameworks === null ? it : it.skip)(
          `runs examples/python/README.md's Flask and Django receivers: a real callback accepted, a repeat answered success, a tampered one refused${frameworks === null ? '' : `: SKIPPED, ${frameworks}`}`,
          async () => {
            const python = join(command[0], '../python');
            const dir = mkdtempSync(join(work, 'receivers-'));
            mkdirSync(join(dir, 'shop'));
            writeFileSync(join(dir, 'flask_receiver.py'), readmeSnippet('examples/python/README.md', '### Flask', 'python'));
            writeFileSync(join(dir, 'shop/__init__.py'), '');
            writeFileSync(join(dir, 'shop/views.py'), readmeSnippet('examples/python/README.md', '### Django', 'python'));
            // The shop's own Django project around the view: its model (a stand-in keeping event ids, as a unique key would), settings and URLs.
            writeFileSync(
              join(dir, 'shop/models.py'),
              'from django.db import IntegrityError\n\nclass _Objects:\n    seen = set()\n\n    def create(self, event_id):\n        if event_id in self.seen:\n            raise IntegrityError("duplicate event_id")\n        self.seen.add(event_id)\n\nclass HandledEvent:\n    objects = _Objects()\n',
            );
            writeFileSync(
              join(dir, 'test_urls.py'),
              'from django.urls import path\nfrom shop import views\n\nurlpatterns = [path("merchant-pay/callback", views.merchant_pay_callback)]\n',
            );
            writeFileSync(
              join(dir, 'serve_django.py'),
              [
                'import os, django',
                'from django.conf import settings',
                'settings.configure(ALLOWED_HOSTS=["127.0.0.1"], ROOT_URLCONF="test_urls", SECRET_KEY="test-only", MIDDLEWARE=["django.middleware.csrf.CsrfViewMiddleware"],',
                '    MERCHANT_API_KEY=os.environ["MERCHANT_API_KEY"], MERCHANT_API_SECRET=os.environ["MERCHANT_API_SECRET"], MERCHANT_API_SECRET_PREVIOUS=os.environ.get("MERCHANT_API_SECRET_PREVIOUS") or None)',
                'django.setup()',
                'from wsgiref.simple_server import WSGIRequestHandler, make_server',
                'from django.core.wsgi import get_wsgi_application',
                'class Quiet(WSGIRequestHandler):',
                '    def log_message(self, *args): pass',
                'make_server("127.0.0.1", int(os.environ["PORT"]), get_wsgi_application(), handler_class=Quiet).serve_forever()',
                '',
              ].join('\n'),
            );
            const servers: ChildProcess[] = [];
            try {
              for (const framework of ['Flask', 'Django']) {
                const port = await freePort();
                const env = {
                  PATH: process.env.PATH ?? '',
                  LANG: 'C.UTF-8',
                  PORT: String(port),
                  MERCHANT_API_KEY: merchant.api_key,
                  MERCHANT_API_SECRET: merchant.api_secret,
                };
                const args =
                  framework === 'Flask'
                    ? ['-m', 'flask', '--app', 'flask_receiver', 'run', '--host', '127.0.0.1', '--port', String(port)]
                    : ['serve_django.py'];
                const server = spawn(python, args, { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
                let errors = '';
                server.stderr.on('data', (d: Buffer) => (errors += d.toString()));
                servers.push(server);
                const url = `http://127.0.0.1:${port}/merchant-pay/callback`;
                await waitFor(
                  () =>
                    server.exitCode !== null
                      ? Promise.reject(new Error(`the ${framework} receiver exited: ${errors}`))
                      : fetch(url).then(
                          () => true,
                          () => false,
                        ),
                  30_000,
                  `the ${framework} receiver listening`,
                );
                const sent = await call('callbackTest', { url });
                expect([framework, sent.answer.data]).toMatchObject([framework, { http_status: 200, success: true, response_excerpt: 'success' }]);

                const fields: Record<string, unknown> = {
                  event_id: `0c7e1f3a-5b2d-4e6f-9a8b-${String(port).padStart(12, '0')}`,
                  event: 'order.paid',
                  order_no: '2025112112000012345678',
                  merchant_order_no: 'A-1001',
                  order_type: 1,
                  status: 'paid',
                  cny_amount: '100.00',
                  merchant_actual_amount: 9940,
                  service_rate: '0.00600000',
                  service_amount: 60,
                  createtime: 1763700000,
                  updatetime: 1763700060,
                  paid_at: 1763700060,
                  api_key: merchant.api_key,
                  timestamp: Math.floor(Date.now() / 1000),
                  nonce: 'receiver-snippet-1',
                };
                const raw = JSON.stringify({ ...fields, signature: sign(fields, merchant.api_secret) });
                const headers = (body: string) => ({
                  'content-type': 'application/json',
                  'webhook-id': String(fields.event_id),
                  'webhook-timestamp': String(fields.timestamp),
                  'webhook-signature': `v1,${createHmac('sha256', merchant.api_secret)
                    .update(`${String(fields.event_id)}.${String(fields.timestamp)}.${body}`)
                    .digest('base64')}`,
                });
                for (let i = 0; i < 2; i++) {
                  const res = await fetch(url, { method: 'POST', headers: headers(raw), body: raw });
                  expect([framework, i, res.status, await res.text()]).toEqual([framework, i, 200, 'success']);
                }
                // The amount changed in transit, the signatures left as they were.
                const tampered = raw.replace('"100.00"', '"1000.00"');
                const refused = await fetch(url, { method: 'POST', headers: headers(raw), body: tampered });
                expect([framework, refused.status, await refused.text()]).toEqual([framework, 400, 'bad signature']);
              }
            } finally {
              for (const server of servers) server.kill();
            }
          },
          90_000,
        );
      }

      if (language.name === 'Java') {
        it("examples/java/README.md's Spring receiver compiles against this client as printed (Spring's few types it names stood in for)", () => {
          const dir = mkdtempSync(join(work, 'spring-'));
          const standIns: Record<string, string> = {
            'org/springframework/http/HttpHeaders.java':
              'package org.springframework.http;\npublic class HttpHeaders { public java.util.Map<String, String> toSingleValueMap() { return java.util.Map.of(); } }\n',
            'org/springframework/http/ResponseEntity.java': [
              'package org.springframework.http;',
              'public class ResponseEntity<T> {',
              '  public interface BodyBuilder { <T> ResponseEntity<T> body(T body); }',
              '  public static BodyBuilder badRequest() { return new BodyBuilder() { public <T> ResponseEntity<T> body(T body) { return new ResponseEntity<T>(); } }; }',
              '  public static <T> ResponseEntity<T> ok(T body) { return new ResponseEntity<T>(); }',
              '}',
              '',
            ].join('\n'),
            ...Object.fromEntries(
              ['PostMapping', 'RequestBody', 'RequestHeader', 'RestController'].map((a) => [
                `org/springframework/web/bind/annotation/${a}.java`,
                `package org.springframework.web.bind.annotation;\npublic @interface ${a} { String[] value() default {}; }\n`,
              ]),
            ),
            'HandledEvents.java': 'interface HandledEvents { boolean firstTime(String eventId); }\n',
            'MerchantPayCallbackController.java': readmeSnippet('examples/java/README.md', '### Spring', 'java'),
          };
          for (const [file, text] of Object.entries(standIns)) {
            mkdirSync(join(dir, file, '..'), { recursive: true });
            writeFileSync(join(dir, file), text);
          }
          tool('javac', [
            '--release',
            '17',
            '-Xlint:all',
            '-Werror',
            '-cp',
            command[2],
            '-d',
            join(dir, 'classes'),
            ...Object.keys(standIns).map((f) => join(dir, f)),
          ]);
        }, 60_000);
      }

      it("during a rotation's grace accepts a body signed with any secret it holds: a receiver with only the old one keeps accepting (SPEC 3)", async () => {
        // order.paid as SPEC 3 sends it during a grace: the body signed with the previous secret, the header with both.
        const previous = 'sk_test_previous_secret_of_this_shop_0000';
        const current = 'sk_test_current_secret_of_this_shop_11111';
        const fields: Record<string, unknown> = {
          event_id: '6f1c2b9e-4d3a-4c5b-8e7f-0a1b2c3d4e5f',
          event: 'order.paid',
          order_no: '2025112112000012345678',
          merchant_order_no: 'A-1001',
          order_type: 1,
          status: 'paid',
          cny_amount: '100.00',
          merchant_actual_amount: 9940,
          service_rate: '0.00600000',
          service_amount: 60,
          createtime: 1763700000,
          updatetime: 1763700060,
          paid_at: 1763700060,
          api_key: merchant.api_key,
          timestamp: Math.floor(Date.now() / 1000),
          nonce: 'rotation-grace-1',
        };
        const raw = JSON.stringify({ ...fields, signature: sign(fields, previous) });
        const id = String(fields.event_id);
        const ts = String(fields.timestamp);
        const entry = (secret: string) => `v1,${createHmac('sha256', secret).update(`${id}.${ts}.${raw}`).digest('base64')}`;
        const paid = {
          headers: { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `${entry(current)} ${entry(previous)}` },
          raw,
        } as unknown as ReceivedCallback;
        const held = (secret: string, previousSecret = '') => ({ MERCHANT_API_SECRET: secret, MERCHANT_API_SECRET_PREVIOUS: previousSecret });
        const accepted = { code: 0, result: { body_signature: true, webhook_signature: true } };
        expect(await verify(paid, raw, held(previous))).toEqual(accepted);
        expect(await verify(paid, raw, held(current, previous))).toEqual(accepted);
        expect(await verify(paid, raw, held(current))).toEqual({ code: 1, result: { body_signature: false, webhook_signature: true } });
        expect(await verify(paid, raw, held('sk_someone_elses_secret_000000000000'))).toEqual({
          code: 1,
          result: { body_signature: false, webhook_signature: false },
        });
      }, 60_000);

      it("after a real rotation, a receiver holding only the old secret accepts the worker's order.paid with both checks during the grace (SPEC 3, issue 38)", async () => {
        const previousSecret = merchant.api_secret;
        const rotated = await operator.merchants.rotateSecret(merchant.id, '1h');
        merchant = { ...merchant, api_secret: rotated.api_secret };
        // The API hears the rotation within its credentials cache's notice time; a repeat of merchant_order_no answers the same order.
        const params = {
          cny_amount: '6.60',
          order_type: 1,
          paychannel_id: channelIds[0],
          paychannel_paymethod: 'alipay',
          merchant_order_no: `${language.name}-rotation-1`,
        };
        const answer = await waitFor(
          async () => {
            const { answer } = await call('createOrder', params);
            return answer.code !== 40102 && answer;
          },
          30_000,
          'the new secret accepted',
        );
        expect(answer.code).toBe(1);
        const created = answer.data as { order_no: string; pay_url: string };
        const paid = await fetch(new URL(`/sandbox/checkout/${created.order_no}/pay`, created.pay_url), {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: new URL(created.pay_url).searchParams.get('token')! }).toString(),
        });
        expect(paid.status).toBe(200);
        const [callback] = await waitFor(
          () => {
            const got = ofMerchant('order.paid').filter((c) => c.body.order_no === created.order_no);
            return got.length > 0 && got;
          },
          30_000,
          "the worker's order.paid",
        );
        // Signed as SPEC 3 says: both header entries, the body with the previous secret until the grace ends.
        expect(String(callback.headers['webhook-signature']).split(' ')).toHaveLength(2);
        const { signature, ...fields } = callback.body;
        expect([sign(fields, previousSecret), sign(fields, rotated.api_secret)].map((s) => s === signature)).toEqual([true, false]);
        const held = (secret: string, previous = '') => ({ MERCHANT_API_SECRET: secret, MERCHANT_API_SECRET_PREVIOUS: previous });
        const accepted = { code: 0, result: { body_signature: true, webhook_signature: true } };
        // Not yet given the new secret: accepted, both checks. Given both: accepted. Given only the new one before the grace ends: the body fails.
        expect(await verify(callback, callback.raw, held(previousSecret))).toEqual(accepted);
        expect(await verify(callback, callback.raw, held(rotated.api_secret, previousSecret))).toEqual(accepted);
        expect(await verify(callback, callback.raw, held('sk_someone_elses_secret_000000000000', previousSecret))).toEqual(accepted);
        expect(await verify(callback, callback.raw, held(rotated.api_secret))).toEqual({ code: 1, result: { body_signature: false, webhook_signature: true } });
        expect(await verify(callback, callback.raw, held('sk_someone_elses_secret_000000000000'))).toEqual({
          code: 1,
          result: { body_signature: false, webhook_signature: false },
        });
        // The TypeScript client (examples/merchant-client.ts) holding only the old secret accepts it too.
        expect(new MerchantClient('', merchant.api_key, previousSecret).verifyCallback(callback.headers, callback.raw)).toEqual(callback.body);
        // callbackTest says the same of its own event.
        const tested = await call('callbackTest', { url: `${receiver.url}/rotation` });
        expect(tested.answer.data?.signed_with).toEqual({ body: 'previous', webhook_signature: ['current', 'previous'] });
      }, 60_000);
    });
  }
});
