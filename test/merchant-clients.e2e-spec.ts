import { execFile, spawn, spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AppConfig } from '@app/common';
import { type Credentials, OperatorModule } from '@app/operator';
import { CallbackReceiver, type ReceivedCallback, flushQueueKeys, waitFor } from './helpers/callbacks';
import { testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';
import { freePort } from './helpers/free-port';
import { type Running, launch, stopProcess } from './helpers/processes';
import { type OperatorServices, operatorServices } from './helpers/operator-services';

const ROOT = resolve(__dirname, '..');
const API_MAIN = join(ROOT, 'dist/apps/api/src/main.js');
const WORKER_MAIN = join(ROOT, 'dist/apps/worker/src/main.js');

interface Vectors {
  api_secret: string;
  cases: { name: string; query: Record<string, unknown>; body: Record<string, unknown>; signature: string }[];
}
const vectors = JSON.parse(readFileSync(join(ROOT, '../shared/vectors/signature.json'), 'utf8')) as Vectors;

/** One of the copy-me clients of examples/: how to run its file, and whether this machine can. */
interface Language {
  name: string;
  file: string;
  /** The interpreter the README tells merchants to use, probed with `probe`. */
  interpreter: string;
  probe: string[];
  /** What the probe prints when the version is recent enough. */
  version?: RegExp;
  /** Once, before the language's tests: answers the argv prefix that runs the client (Java compiles here). */
  prepare: () => string[];
  /** The README's form, when the tests run another (Java's compiled classes, to compile once). */
  readmeForm?: string[];
}

const javaClasses = mkdtempSync(join(tmpdir(), 'mp-java-client-'));
const LANGUAGES: Language[] = [
  {
    name: 'PHP',
    file: 'examples/php/MerchantClient.php',
    interpreter: 'php',
    probe: ['-r', 'exit(PHP_VERSION_ID >= 80100 ? 0 : 1);'],
    prepare: () => ['php', join(ROOT, 'examples/php/MerchantClient.php')],
  },
  {
    name: 'Python',
    file: 'examples/python/merchant_client.py',
    interpreter: 'python3',
    probe: ['--version'],
    prepare: () => ['python3', join(ROOT, 'examples/python/merchant_client.py')],
  },
  {
    name: 'Java',
    file: 'examples/java/MerchantClient.java',
    // `java File.java` compiles on every run (seconds): the tests compile once and run the classes.
    interpreter: 'javac',
    probe: ['-version'],
    version: /^javac (1[7-9]|[2-9]\d)\b/m,
    prepare: () => {
      const compiled = spawnSync('javac', ['-d', javaClasses, join(ROOT, 'examples/java/MerchantClient.java')], { encoding: 'utf8' });
      if (compiled.status !== 0) throw new Error(`javac failed: ${compiled.stderr}`);
      return ['java', '-cp', javaClasses, 'MerchantClient'];
    },
    readmeForm: ['java', join(ROOT, 'examples/java/MerchantClient.java')],
  },
];

/** Why a language cannot run here (its interpreter missing or too old), or null when it can. */
function missing(language: Language): string | null {
  const probe = spawnSync(language.interpreter, language.probe, { encoding: 'utf8' });
  if (probe.error) return `${language.interpreter} is not installed (${(probe.error as NodeJS.ErrnoException).code})`;
  if (probe.status !== 0) return `${language.interpreter} ${language.probe.join(' ')} exited ${probe.status}: ${probe.stderr.trim()}`;
  const printed = `${probe.stdout}${probe.stderr}`.trim();
  if (language.version && !language.version.test(printed)) return `${language.interpreter} is too old (${printed})`;
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
    rmSync(javaClasses, { recursive: true, force: true });
  }, 30_000);

  for (const language of LANGUAGES) {
    const why = missing(language);
    const suite = why === null ? describe : describe.skip;
    // Loud in any run, not only a verbose one: a skipped language is never mistaken for a passed one.
    if (why !== null) console.warn(`merchant clients: the ${language.name} client's tests are SKIPPED: ${why}`);
    suite(`${language.name} (${language.file})${why === null ? '' : `: SKIPPED, ${why}`}`, () => {
      let command: string[];
      let merchant: Credentials;
      let previousSecret: string | undefined;

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
        if (language.readmeForm) {
          const [c] = vectors.cases;
          const out = await run(['sign', JSON.stringify({ ...c.query, ...c.body })], {
            env: { MERCHANT_API_SECRET: vectors.api_secret },
            as: language.readmeForm,
          });
          expect([language.readmeForm.join(' '), out.stdout.trim()]).toEqual([language.readmeForm.join(' '), c.signature]);
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
      }, 60_000);

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

      it('during a secret rotation, verifies the headers with either secret and the body with the new one', async () => {
        previousSecret = merchant.api_secret;
        const rotated = await operator.merchants.rotateSecret(merchant.id, '1h');
        merchant = { ...merchant, api_secret: rotated.api_secret };
        // The API learns the rotation within its credentials cache's notice time: wait for two entries.
        const test = await waitFor(
          async () => {
            await call('callbackTest', { url: `${receiver.url}/rotation` });
            const [last] = ofMerchant('webhook.test').slice(-1);
            return String(last.headers['webhook-signature']).split(' ').length === 2 && last;
          },
          30_000,
          'a callback signed with both secrets',
        );
        expect(await verify(test, test.raw, { MERCHANT_API_SECRET: previousSecret })).toEqual({
          code: 1,
          result: { body_signature: false, webhook_signature: true },
        });
        expect(await verify(test, test.raw, { MERCHANT_API_SECRET_PREVIOUS: previousSecret })).toEqual({
          code: 0,
          result: { body_signature: true, webhook_signature: true },
        });
        // The previous secret is one the client tries, not only the current one.
        expect(
          await verify(test, test.raw, { MERCHANT_API_SECRET: 'sk_someone_elses_secret_000000000000', MERCHANT_API_SECRET_PREVIOUS: previousSecret }),
        ).toEqual({
          code: 1,
          result: { body_signature: false, webhook_signature: true },
        });
        expect(await verify(test, test.raw, { MERCHANT_API_SECRET: 'sk_someone_elses_secret_000000000000' })).toEqual({
          code: 1,
          result: { body_signature: false, webhook_signature: false },
        });
      }, 60_000);
    });
  }
});
