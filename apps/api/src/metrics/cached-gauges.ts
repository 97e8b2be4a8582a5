import { Injectable, Logger, type OnApplicationBootstrap, Optional } from '@nestjs/common';
import { Redis } from 'ioredis';
import { InjectDataSource } from '@nestjs/typeorm';
import { Counter, Gauge } from 'prom-client';
import type { DataSource } from 'typeorm';
import { QUEUE } from '@app/common';
import { CallbackFiguresRepository, registerOperationalGauges } from '@app/db';
import { JobQueue } from '@app/queue';
import { MetricsService } from './metrics.service';

/** Every status a delivery can have: each is set at every refresh, 0 when none. */
const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'no_address'] as const;

/** SPEC 8: figures that need a query are cached for at least this long. */
export const CACHED_GAUGE_MAX_AGE_MS = 10_000;

/**
 * Gauges whose figures cost a query that grows with the data (deliveries by status; queue
 * depth, a count in the PostgreSQL queue backend). A scrape never waits for them: it shows
 * the last figures and, when those are 10 s old and no refresh is running, starts one in the
 * background. So any number of scrapers cost at most one refresh per 10 s, and a slow or
 * locked table delays the figures, not the scrape. The figures show every worker's work.
 */
@Injectable()
export class CachedGauges implements OnApplicationBootstrap {
  private readonly logger = new Logger(CachedGauges.name);
  private readonly queueJobs: Gauge<'queue' | 'state'>;
  private readonly deliveries: Gauge<'status'>;
  private readonly openCircuits: Gauge;
  private readonly heldDeliveries: Gauge;
  private readonly refreshes: Counter<'outcome'>;
  private lastStartedAt = -Infinity;
  private running = false;

  constructor(
    metrics: MetricsService,
    @InjectDataSource() dataSource: DataSource,
    private readonly jobs: JobQueue,
    private readonly callbackDeliveries: CallbackFiguresRepository,
    @Optional() redis?: Redis,
  ) {
    const registers = [metrics.registry];
    registerOperationalGauges(metrics.registry, { dataSource, deliveries: callbackDeliveries, redis: redis ?? null });
    this.queueJobs = new Gauge({
      name: 'merchant_pay_queue_jobs',
      help: 'Jobs in each queue by state (refreshed at most every 10 s)',
      labelNames: ['queue', 'state'],
      registers,
    });
    this.deliveries = new Gauge({
      name: 'merchant_pay_callback_deliveries',
      help: 'Callback deliveries by status: pending, succeeded, failed, no_address (refreshed at most every 10 s)',
      labelNames: ['status'],
      registers,
    });
    this.openCircuits = new Gauge({
      name: 'merchant_pay_callback_open_circuits',
      help: 'Callback destinations whose circuit is open (SPEC 7 Fairness; refreshed at most every 10 s)',
      registers,
    });
    this.heldDeliveries = new Gauge({
      name: 'merchant_pay_callback_held_deliveries',
      help: 'Due callback deliveries held back by an open circuit, spending no attempts (refreshed at most every 10 s)',
      registers,
    });
    this.refreshes = new Counter({
      name: 'merchant_pay_cached_gauge_refreshes_total',
      help: 'Refreshes of the cached gauges, by outcome',
      labelNames: ['outcome'],
      registers,
    });
  }

  /** Figures from the first scrape on, without holding up the start for them. */
  onApplicationBootstrap(): void {
    this.refreshIfStale();
  }

  /** Starts a refresh when the figures are 10 s old and none is running; never waits for it. */
  refreshIfStale(): void {
    if (this.running || Date.now() - this.lastStartedAt < CACHED_GAUGE_MAX_AGE_MS) return;
    this.running = true;
    this.lastStartedAt = Date.now();
    void this.refresh().finally(() => (this.running = false));
  }

  private async refresh(): Promise<void> {
    try {
      const [deliveryCounts, queueCounts, circuits] = await Promise.all([
        this.callbackDeliveries.statusCounts(),
        Promise.all(
          Object.values(QUEUE).map(async (name) => [name, await this.jobs.queue(name).getJobCounts('waiting', 'active', 'delayed', 'failed')] as const),
        ),
        this.callbackDeliveries.circuitFigures(),
      ]);
      this.openCircuits.set(circuits.openCircuits);
      this.heldDeliveries.set(circuits.heldDeliveries);
      for (const status of DELIVERY_STATUSES) {
        this.deliveries.set({ status }, deliveryCounts[status] ?? 0);
      }
      for (const [queue, counts] of queueCounts) {
        for (const [state, count] of Object.entries(counts)) this.queueJobs.set({ queue, state }, count);
      }
      this.refreshes.inc({ outcome: 'ok' });
    } catch (err) {
      this.refreshes.inc({ outcome: 'failed' });
      this.logger.warn(`cached gauges not refreshed, the last figures stay: ${(err as Error).message}`);
    }
  }
}
