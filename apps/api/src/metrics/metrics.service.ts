import { Injectable } from '@nestjs/common';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics of the API process: counters kept as events happen. Figures that need a
 * query (queue depth, deliveries by status) are CachedGauges', refreshed off the scrape's path.
 */
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

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'merchant_pay_' });
  }
}
