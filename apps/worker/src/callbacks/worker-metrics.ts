import { createHash, timingSafeEqual } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap, Optional } from '@nestjs/common';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { AppConfig } from '@app/common';
import { CallbackFiguresRepository, registerOperationalGauges } from '@app/db';

/**
 * The worker's own Prometheus figures, what happens in this process: settled callback deliveries
 * by outcome (failed ones by reason) and the latency of each attempt; its process, pool and Redis
 * figures, the delivery lag and the circuits open now. Served on WORKER_METRICS_PORT when set (the API's
 * /metrics has the figures that come from the database: open circuits, held deliveries).
 */
@Injectable()
export class WorkerMetrics implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('WorkerMetrics');
  readonly registry = new Registry();
  private server: Server | null = null;

  readonly deliveries = new Counter({
    name: 'merchant_pay_callback_deliveries_settled_total',
    help: 'Callback deliveries this worker settled, by outcome: succeeded, failed (410, schedule ended, or no attempts left)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly attemptSeconds = new Histogram({
    name: 'merchant_pay_callback_attempt_duration_seconds',
    help: 'Callback attempts by result: the HTTP exchange with the merchant, up to the timeout',
    labelNames: ['outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly failedDeliveries = new Counter({
    name: 'merchant_pay_callback_deliveries_failed_total',
    help: 'Callback deliveries this worker ended as failed, by reason: gone (HTTP 410), blocked (its address refused), exhausted (the last attempt failed), abandoned (every attempt used, a worker stopped during the last)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  /**
   * Settled deliveries by merchant (issue 29), with bounded labels: the first
   * METRICS_MERCHANT_LABELS merchants this worker settles a delivery for keep their id, every
   * later one counts as merchant_id="other", so the series stay bounded however many merchants.
   */
  readonly merchantDeliveries = new Counter({
    name: 'merchant_pay_callback_deliveries_by_merchant_total',
    help: 'Callback deliveries this worker settled, by merchant_id (the first METRICS_MERCHANT_LABELS merchants seen; the rest as "other") and outcome: succeeded, failed',
    labelNames: ['merchant_id', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly merchantLabel: BoundedLabel;

  constructor(
    private readonly config: AppConfig,
    dataSource: DataSource,
    deliveries: CallbackFiguresRepository,
    @Optional() redis?: Redis,
  ) {
    // Event-loop lag, memory, CPU and handles of this process, as the API serves its own.
    collectDefaultMetrics({ register: this.registry, prefix: 'merchant_pay_' });
    this.merchantLabel = new BoundedLabel(config.metricsMerchantLabels);
    registerOperationalGauges(this.registry, { dataSource, deliveries, redis: redis ?? null });
  }

  /** A delivery settled: the outcome counter and the bounded per-merchant one. */
  settled(merchantId: number, outcome: 'succeeded' | 'failed'): void {
    this.deliveries.inc({ outcome });
    this.merchantDeliveries.inc({ merchant_id: this.merchantLabel.of(merchantId), outcome });
  }

  async onApplicationBootstrap(): Promise<void> {
    const port = this.config.workerMetricsPort;
    if (port === 0) return;
    // METRICS_TOKEN guards this as it guards the API's /metrics: hashes compared in constant time.
    const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();
    const expected = this.config.metricsToken === null ? null : digest(this.config.metricsToken);
    const server = createServer((req, res) => {
      if (req.url !== '/metrics' || req.method !== 'GET') {
        res.writeHead(404).end();
        return;
      }
      const sent = /^Bearer +(\S+)$/i.exec((req.headers.authorization ?? '').trim())?.[1] ?? '';
      if (expected && !timingSafeEqual(digest(sent), expected)) {
        res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, resolve));
    this.server = server;
    this.logger.log(`metrics on :${port}/metrics`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) await new Promise((resolve) => server.close(resolve));
  }
}

/** The label value the bounded per-merchant counter keeps; every value past the cap is this. */
export const OTHER_LABEL = 'other';

/**
 * A label whose values are bounded: the first `cap` distinct values keep their own, every later
 * one is OTHER_LABEL. Per process and since its start: a restart may keep another set.
 */
export class BoundedLabel {
  private readonly kept = new Set<string>();

  constructor(readonly cap: number) {}

  of(value: string | number): string {
    const text = String(value);
    if (this.kept.has(text)) return text;
    if (this.kept.size >= this.cap) return OTHER_LABEL;
    this.kept.add(text);
    return text;
  }
}
