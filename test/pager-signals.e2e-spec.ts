import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { NestFactory } from '@nestjs/core';
import type { AppConfig } from '@app/common';
import { runMigrations } from '@app/db';
import { type Credentials, MerchantAccountService, OperatorModule } from '@app/operator';
import { createApiApp } from '../apps/api/src/create-api-app';
import { WorkerMetrics } from '../apps/worker/src/callbacks/worker-metrics';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { post, signed } from './helpers/api';
import { waitFor } from './helpers/callbacks';
import { testConfig } from './helpers/config';
import { freePort } from './helpers/free-port';
import { OwnPostgres } from './helpers/own-postgres';
import { removeTestKeys } from './helpers/redis-keys';

const DEPLOY = resolve(__dirname, '../deploy');

function promtool(...args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile('promtool', args, { cwd: DEPLOY }, (err, stdout, stderr) =>
      done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

interface Sample {
  series: string;
  value: number;
}

/** The samples of a scrape, each as a selector with the scrape's own job and instance labels, and the metrics' types. */
function parseScrape(text: string, job: string, instance: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) types.set(type[1], type[2]);
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || !Number.isFinite(Number(m[3]))) continue;
    const labels = [`job="${job}"`, `instance="${instance}"`, ...(m[2] ? [m[2]] : [])].join(',');
    samples.push({ series: `${m[1]}{${labels}}`, value: Number(m[3]) });
  }
  return { samples, types };
}

/** Counters, and a histogram's or summary's parts, rise; everything else is a gauge. */
function isCounter(series: string, types: Map<string, string>): boolean {
  const name = series.slice(0, series.indexOf('{'));
  if (types.get(name) === 'counter') return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && ['histogram', 'summary'].includes(types.get(base) ?? '');
}

/**
 * promtool's input series for the situation of `during`: each gauge holds the value it had there
 * for 30 minutes (a figure absent there is absent), each counter rises every minute by what it
 * rose between `before` and `during`, as if that traffic went on.
 */
function inputSeries(before: string[], during: string[], targets: { job: string; instance: string }[]): string {
  const lines: string[] = [];
  targets.forEach(({ job, instance }, i) => {
    lines.push(`      - { series: '${`up{job="${job}",instance="${instance}"}`}', values: '1x30' }`);
    const earlier = new Map(parseScrape(before[i], job, instance).samples.map((s) => [s.series, s.value]));
    const now = parseScrape(during[i], job, instance);
    for (const { series, value } of now.samples) {
      const values = isCounter(series, now.types) ? `${earlier.get(series) ?? 0}+${Math.max(0, value - (earlier.get(series) ?? 0))}x30` : `${value}x30`;
      lines.push(`      - { series: '${series.replace(/'/g, "''")}', values: '${values}' }`);
    }
  });
  return lines.join('\n');
}

/**
 * SPEC 10, signals for the pager, against a PostgreSQL of this test's own (the embedded one, as
 * scripts/chaos.ts uses; never the machine's shared server): an API and a worker scraped while
 * it answers, then once right after it stopped. merchant_pay_db_up says 0 at that very scrape,
 * every figure read from the database is absent (not frozen at its last value), and the shipped
 * alert rules, run by promtool over those scrapes, page for the database and the 5xx answers.
 */
describe('signals for the pager: PostgreSQL stopped under a running API and worker', () => {
  let root: string;
  let port: number;
  const password = randomBytes(12).toString('hex');
  let database: OwnPostgres | null = null;
  let config: AppConfig;
  let api: NestFastifyApplication | null = null;
  let worker: INestApplicationContext | null = null;
  let merchant: Credentials;

  const scrapeApi = async (): Promise<string> => (await api!.inject({ method: 'GET', url: '/metrics' })).body;
  const scrapeWorker = (): Promise<string> => worker!.get(WorkerMetrics).registry.metrics();
  const sample = (text: string, series: string): number | null => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? null : Number(line.slice(series.length + 1));
  };
  const hasSamples = (text: string, name: string): boolean => text.split('\n').some((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'mp-pager-'));
    // As root, PostgreSQL runs as an unprivileged user that must reach its data folder.
    chmodSync(root, 0o755);
    port = await freePort();
    database = await OwnPostgres.start(root, port, password);
    await runMigrations(database.url);
    config = testConfig(database.url);
    const cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(config), { logger: false });
    try {
      merchant = await cli.get(MerchantAccountService).create({ name: 'pager', mode: 'test' });
    } finally {
      await cli.close();
    }
    api = await createApiApp(config);
    worker = await createWorkerApp(config, { shutdownHooks: false });
  }, 120_000);

  afterAll(async () => {
    // The apps close against a database that answers again (the last test restarts it).
    await worker?.close();
    await api?.close();
    await database?.stop();
    if (config) await removeTestKeys(config.queuePrefix);
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('the shipped rules pass their own unit tests (promtool test rules)', async () => {
    const result = await promtool('test', 'rules', 'prometheus-alerts.test.yml');
    expect([result.code, result.output]).toEqual([0, expect.stringContaining('SUCCESS')]);
  });

  it('within one scrape of the stop: db_up 0 in both processes, the figures read from PostgreSQL absent, and the rules page', async () => {
    // Healthy: both say the database answers, and the lag and cached figures are there (their first refresh).
    const beforeApi = await waitFor(
      async () => {
        const text = await scrapeApi();
        return hasSamples(text, 'merchant_pay_callback_delivery_lag_seconds') && hasSamples(text, 'merchant_pay_stuck_money') && text;
      },
      15_000,
      "the API's first figures",
    );
    const beforeWorker = await waitFor(
      async () => {
        const text = await scrapeWorker();
        return hasSamples(text, 'merchant_pay_callback_delivery_lag_seconds') && text;
      },
      15_000,
      "the worker's first figures",
    );
    for (const text of [beforeApi, beforeWorker]) expect(sample(text, 'merchant_pay_db_up')).toBe(1);
    expect(sample(beforeApi, 'merchant_pay_stuck_money{kind="refund_processing"}')).toBe(0);
    expect(sample(beforeApi, 'merchant_pay_callback_circuits_open')).toBe(0);
    for (let i = 0; i < 5; i++) expect((await post(api!, '/api/merchant/getPayChannels', signed(merchant))).body.code).toBe(1);

    await database!.stop();
    database = null;
    for (let i = 0; i < 20; i++) expect((await post(api!, '/api/merchant/getPayChannels', signed(merchant))).status).toBe(503);
    // Scrapes within 250 ms share one probe by design, so a scrape right after the stop may still
    // carry the reading taken just before it; the next probe says 0. Prometheus scrapes every 15 s:
    // 0 within 3 s of the stop is within one scrape.
    const duringApi = await waitFor(
      async () => {
        const text = await scrapeApi();
        return sample(text, 'merchant_pay_db_up') === 0 && text;
      },
      3_000,
      "the API's db_up 0",
    );
    const duringWorker = await waitFor(
      async () => {
        const text = await scrapeWorker();
        return sample(text, 'merchant_pay_db_up') === 0 && text;
      },
      3_000,
      "the worker's db_up 0",
    );

    for (const text of [duringApi, duringWorker]) {
      expect(sample(text, 'merchant_pay_db_up')).toBe(0);
      for (const name of ['merchant_pay_callback_delivery_lag_seconds', 'merchant_pay_callback_circuits_open'])
        expect([name, hasSamples(text, name)]).toEqual([name, false]);
      // Redis still answers: its own gauge stays.
      expect(sample(text, 'merchant_pay_redis_up')).toBe(1);
    }
    for (const name of ['merchant_pay_stuck_money', 'merchant_pay_callback_deliveries', 'merchant_pay_callback_held_deliveries', 'recon_mismatches_total'])
      expect([name, hasSamples(duringApi, name)]).toEqual([name, false]);

    // The rules over these scrapes, as Prometheus would evaluate them after 15 minutes of the same.
    const targets = [
      { job: 'merchant-pay-api', instance: 'api:3000' },
      { job: 'merchant-pay-worker', instance: 'worker:9464' },
    ];
    const file = join(root, 'outage.test.yml');
    writeFileSync(
      file,
      `rule_files: [${join(DEPLOY, 'prometheus-alerts.yml')}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
${inputSeries([beforeApi, beforeWorker], [duringApi, duringWorker], targets)}
    promql_expr_test:
      - expr: count by (alertname, instance) (ALERTS{alertstate="firing",alertname="MerchantPayDatabaseDown"})
        eval_time: 15m
        exp_samples:
          - { labels: '{alertname="MerchantPayDatabaseDown",instance="api:3000"}', value: 1 }
          - { labels: '{alertname="MerchantPayDatabaseDown",instance="worker:9464"}', value: 1 }
      - expr: count by (alertname) (ALERTS{alertstate="firing",alertname="MerchantPayHttpErrors"})
        eval_time: 15m
        exp_samples:
          - { labels: '{alertname="MerchantPayHttpErrors"}', value: 1 }
      # Nothing pages on a figure the database could not give: absent, not a frozen value.
      - expr: count by (alertname) (ALERTS{alertname=~"MerchantPay(CallbackDeliveryLag|CallbackCircuitsOpen|StuckMoney|ReconciliationMismatch)"})
        eval_time: 15m
        exp_samples: []
`,
    );
    const outage = await promtool('test', 'rules', file);
    expect([outage.code, outage.output]).toEqual([0, expect.stringContaining('SUCCESS')]);
  });

  it('back to 1 once PostgreSQL answers again, with its figures', async () => {
    database = await OwnPostgres.start(root, port, password);
    const text = await waitFor(
      async () => {
        const scraped = await scrapeApi();
        return sample(scraped, 'merchant_pay_db_up') === 1 && hasSamples(scraped, 'merchant_pay_callback_circuits_open') && scraped;
      },
      30_000,
      'db_up 1 again',
    );
    expect(sample(text, 'merchant_pay_callback_circuits_open')).toBe(0);
    await waitFor(async () => sample(await scrapeWorker(), 'merchant_pay_db_up') === 1, 30_000, "the worker's db_up 1 again");
  }, 60_000);
});
