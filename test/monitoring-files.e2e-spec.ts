import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import { parse } from 'yaml';
import { CallbackFiguresRepository, registerOperationalGauges } from '@app/db';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { WorkerMetrics } from '../apps/worker/src/callbacks/worker-metrics';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackFixtures, waitFor } from './helpers/callbacks';

const DEPLOY = resolve(__dirname, '../deploy');

interface Rule {
  alert: string;
  expr: string;
  annotations?: { summary?: string };
}

const rules = (parse(readFileSync(join(DEPLOY, 'prometheus-alerts.yml'), 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'grafana-dashboard.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };

/** The service's own metric names an expression reads (Prometheus's `up` is the scraper's). */
function metricsNamed(expr: string): string[] {
  return [...expr.matchAll(/\b(?:merchant_pay|recon)_[a-z0-9_]+\b/g)].map((m) => m[0]);
}

/** Every series name a scrape shows, with each histogram's _bucket, _sum and _count even before its first observation. */
function exported(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      names.add(type[1]);
      if (type[2] === 'histogram' || type[2] === 'summary') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${type[1]}${suffix}`);
    } else if (line && !line.startsWith('#')) names.add(line.split(/[{ ]/)[0]);
  }
  return names;
}

const sample = (text: string, series: string): number | null => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
};

describe('deploy/: the alert rules and the dashboard read metrics the service really exports', () => {
  let api: TestApi;
  let worker: INestApplicationContext;
  let apiScrape: string;
  let workerScrape: string;
  let workerClosed = false;

  beforeAll(async () => {
    api = await startTestApi();
    worker = await createWorkerApp(api.config, { shutdownHooks: false });
    apiScrape = (await api.app.inject({ method: 'GET', url: '/metrics' })).body;
    workerScrape = await worker.get(WorkerMetrics).registry.metrics();
  });

  afterAll(async () => {
    if (!workerClosed) await worker?.close();
    await api?.close();
  });

  it('has an alert for each thing on call answers for', () => {
    const alerts = rules.map((r) => r.alert);
    expect(alerts).toEqual(
      expect.arrayContaining([
        'MerchantPayApiDown',
        'MerchantPayWorkerDown',
        'MerchantPayCallbackDeliveryLag',
        'MerchantPayCallbackFailureRate',
        'MerchantPayCallbackCircuitsOpen',
        'MerchantPayDatabasePoolSaturated',
        'MerchantPayReconciliationMismatch',
      ]),
    );
    for (const rule of rules) {
      expect(rule.expr.trim()).not.toBe('');
      expect(rule.annotations?.summary).toBeTruthy();
    }
  });

  it('names no metric that neither the API nor the worker exports', () => {
    const available = new Set([...exported(apiScrape), ...exported(workerScrape)]);
    const exprs = [...rules.map((r) => `${r.alert}: ${r.expr}`), ...dashboard.panels.flatMap((p) => p.targets.map((t) => `${p.title}: ${t.expr}`))];
    const missing = exprs.flatMap((expr) =>
      metricsNamed(expr)
        .filter((name) => !available.has(name))
        .map((name) => `${name} (${expr.split(':')[0]})`),
    );
    expect(missing).toEqual([]);
    expect(exprs.flatMap(metricsNamed).length).toBeGreaterThan(15);
  });

  it('the worker serves process, pool, Redis and delivery figures of its own, not only the API', () => {
    for (const name of [
      'merchant_pay_nodejs_eventloop_lag_p99_seconds',
      'merchant_pay_process_resident_memory_bytes',
      'merchant_pay_redis_up',
      'merchant_pay_callback_delivery_lag_seconds',
    ]) {
      expect(exported(workerScrape)).toContain(name);
    }
    expect(sample(workerScrape, 'merchant_pay_redis_up')).toBe(1);
    expect(sample(workerScrape, 'merchant_pay_db_pool_connections{state="waiting"}')).toBe(0);
    expect(sample(workerScrape, 'merchant_pay_db_pool_max')).toBeGreaterThan(0);
  });

  it('DATABASE_POOL_SIZE sets the pool the API reports', async () => {
    const sized = await startTestApi({ DATABASE_POOL_SIZE: '3' });
    try {
      const text = (await sized.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(sample(text, 'merchant_pay_db_pool_max')).toBe(3);
      expect(sample(text, 'merchant_pay_db_pool_connections{state="in_use"}')).toBeGreaterThanOrEqual(0);
    } finally {
      await sized.close();
    }
  });

  it('counts the circuits open at the scrape itself, and shows an overdue delivery as lag', async () => {
    const db = await CallbackFixtures.connect(api.databaseUrl);
    try {
      const { merchant, channels } = await merchantWithChannels(api.operator, { notifyUrl: 'https://merchant.example/notify' });
      const scrape = async (): Promise<string> => (await api.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(sample(await scrape(), 'merchant_pay_callback_circuits_open')).toBe(0);
      await db.db.query(`INSERT INTO callback_circuits (merchant_id, destination, open_since) VALUES ($1, 'https://merchant.example', now())`, [merchant.id]);
      // The very next scrape, not one 10 s later.
      expect(sample(await scrape(), 'merchant_pay_callback_circuits_open')).toBe(1);

      // No worker for ten minutes (this spec's is stopped first, so nothing delivers it): a due delivery shows as lag.
      await worker.close();
      workerClosed = true;
      const { orderId } = await db.insertOrder(merchant.id, channels.processor);
      const { deliveryId } = await db.insertEvent(orderId);
      await db.db.query(`UPDATE callback_deliveries SET next_attempt_at = now() - interval '10 minutes' WHERE id = $1`, [deliveryId]);
      // A registry of its own: the API's has the lag of its first scrape cached for 10 s.
      const registry = new Registry();
      registerOperationalGauges(registry, { dataSource: api.app.get(DataSource), deliveries: api.app.get(CallbackFiguresRepository), redis: null });
      const lag = await waitFor(
        async () => sample(await registry.metrics(), 'merchant_pay_callback_delivery_lag_seconds') || null,
        5_000,
        'the first lag figure',
      );
      expect(lag).toBeGreaterThanOrEqual(600);
      expect(lag).toBeLessThan(700);
    } finally {
      await db.close();
    }
  });
});
