import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DataSource } from 'typeorm';
import { QUEUE } from '@app/common';
import { JobQueue } from '@app/queue';

/** Prometheus metrics of the API process; the queue and callback figures are read at scrape time, so every worker's work shows. */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: 'merchant_pay_http_requests_total',
    help: 'HTTP requests by route and status code',
    labelNames: ['method', 'route', 'code'] as const,
    registers: [this.registry],
  });

  readonly latency = new Histogram({
    name: 'merchant_pay_http_request_duration_seconds',
    help: 'HTTP request latency by route and status code',
    labelNames: ['method', 'route', 'code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly ordersCreated = new Counter({
    name: 'merchant_pay_orders_created_total',
    help: 'Orders created (idempotent repeats not counted)',
    registers: [this.registry],
  });

  readonly paymentAmountMismatches = new Counter({
    name: 'merchant_pay_payment_amount_mismatch_total',
    help: 'Verified channel notifications refused because their amount differs from the order (order event payment.amount_mismatch)',
    registers: [this.registry],
  });

  constructor(
    @InjectDataSource() dataSource: DataSource,
    jobs: JobQueue,
  ) {
    collectDefaultMetrics({ register: this.registry, prefix: 'merchant_pay_' });
    new Gauge({
      name: 'merchant_pay_queue_jobs',
      help: 'Jobs in each queue by state',
      labelNames: ['queue', 'state'] as const,
      registers: [this.registry],
      async collect() {
        for (const name of Object.values(QUEUE)) {
          const counts = await jobs.queue(name).getJobCounts('waiting', 'active', 'delayed', 'failed');
          for (const [state, count] of Object.entries(counts)) this.set({ queue: name, state }, count);
        }
      },
    });
    new Gauge({
      name: 'merchant_pay_callback_deliveries',
      help: 'Callback deliveries by status (pending, succeeded, failed)',
      labelNames: ['status'] as const,
      registers: [this.registry],
      async collect() {
        const rows: { status: string; count: string }[] = await dataSource.query(
          'SELECT status, count(*) AS count FROM callback_deliveries GROUP BY status',
        );
        for (const status of ['pending', 'succeeded', 'failed']) {
          this.set({ status }, Number(rows.find((r) => r.status === status)?.count ?? 0));
        }
      },
    });
  }
}
