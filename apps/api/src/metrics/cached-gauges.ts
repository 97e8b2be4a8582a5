import { Injectable, Logger, type OnApplicationBootstrap, Optional } from '@nestjs/common';
import { Redis } from 'ioredis';
import { InjectDataSource } from '@nestjs/typeorm';
import { Counter, Gauge } from 'prom-client';
import type { DataSource } from 'typeorm';
import { AppConfig, QUEUE } from '@app/common';
import {
  CallbackFiguresRepository,
  type DatabaseProbe,
  OperationsRepository,
  STUCK_MONEY_KINDS,
  type StuckMoneyKind,
  clearGauge,
  registerOperationalGauges,
} from '@app/db';
import { JobQueue } from '@app/queue';
import { MetricsService } from './metrics.service';

/** Every status a delivery can have: each is set at every refresh, 0 when none. */
const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'no_address'] as const;

/** SPEC 8: figures that need a query are cached for at least this long. */
export const CACHED_GAUGE_MAX_AGE_MS = 10_000;

type QueueFigures = { queue: string; paused: boolean; counts: Record<string, number> }[];

/** The last figures read, per source; null while its last reading failed (the gauges are then absent). */
interface Figures {
  deliveries: Record<string, number> | null;
  circuits: { openCircuits: number; heldDeliveries: number } | null;
  stuck: Record<StuckMoneyKind, number> | null;
  queues: QueueFigures | null;
}

/**
 * Gauges whose figures cost a query that grows with the data (deliveries by status; queue
 * depth, a count in the PostgreSQL queue backend; the money that stopped moving). A scrape
 * never waits for them: it shows the last figures and, when those are 10 s old and no refresh
 * is running, starts one in the background. So any number of scrapers cost at most one refresh
 * per 10 s, and a slow or locked table delays the figures, not the scrape. The figures show
 * every worker's work. A figure whose source does not answer (the database down, Redis down, or
 * its last reading failed) is absent from the scrape, never frozen at its last value (SPEC 10).
 */
@Injectable()
export class CachedGauges implements OnApplicationBootstrap {
  private readonly logger = new Logger(CachedGauges.name);
  private readonly refreshes: Counter<'outcome'>;
  private readonly database: DatabaseProbe;
  private figures: Figures = { deliveries: null, circuits: null, stuck: null, queues: null };
  private lastStartedAt = -Infinity;
  private running = false;

  constructor(
    metrics: MetricsService,
    @InjectDataSource() dataSource: DataSource,
    private readonly config: AppConfig,
    private readonly jobs: JobQueue,
    private readonly callbackDeliveries: CallbackFiguresRepository,
    private readonly operations: OperationsRepository,
    @Optional() private readonly redis?: Redis,
  ) {
    const registers = [metrics.registry];
    this.database = registerOperationalGauges(metrics.registry, { dataSource, deliveries: callbackDeliveries, redis: redis ?? null });
    const current = (): Figures => this.figures;
    const databaseUp = (): Promise<boolean> => this.database.up();
    const queueUp = (): Promise<boolean> => this.queueAnswers();
    const fromDatabase = (read: (figures: Figures) => unknown, fill: (gauge: Gauge<string>) => void) =>
      async function collect(this: Gauge<string>) {
        // The scrape's one probe: the database down is known at this scrape, not at the next refresh.
        if (read(current()) === null || !(await databaseUp())) clearGauge(this);
        else fill(this);
      };
    new Gauge({
      name: 'merchant_pay_callback_deliveries',
      help: 'Callback deliveries by status: pending, succeeded, failed, no_address (refreshed at most every 10 s)',
      labelNames: ['status'],
      registers,
      collect: fromDatabase(
        (f) => f.deliveries,
        (g) => DELIVERY_STATUSES.forEach((status) => g.set({ status }, this.figures.deliveries?.[status] ?? 0)),
      ),
    });
    // Open circuits: one gauge, merchant_pay_callback_circuits_open (libs/db operational-gauges), counted at the scrape.
    new Gauge({
      name: 'merchant_pay_callback_held_deliveries',
      help: 'Due callback deliveries held back by an open circuit, spending no attempts (refreshed at most every 10 s)',
      registers,
      collect: fromDatabase(
        (f) => f.circuits,
        (g) => g.set(this.figures.circuits!.heldDeliveries),
      ),
    });
    new Gauge({
      name: 'merchant_pay_stuck_money',
      help: 'Money that stopped moving, by kind: refund_processing and payout_processing (over 1 h), order_not_completed (paid, not completed after 10 min), bill_refused (channel days of the last week whose latest bill was refused); refreshed at most every 10 s',
      labelNames: ['kind'],
      registers,
      collect: fromDatabase(
        (f) => f.stuck,
        (g) => STUCK_MONEY_KINDS.forEach((kind) => g.set({ kind }, this.figures.stuck![kind])),
      ),
    });
    const queueCollect = (fill: (gauge: Gauge<string>, figures: QueueFigures) => void) =>
      async function collect(this: Gauge<string>) {
        const figures = current().queues;
        if (figures === null || !(await queueUp())) clearGauge(this);
        else fill(this, figures);
      };
    new Gauge({
      name: 'merchant_pay_queue_jobs',
      help: 'Jobs in each queue by state (refreshed at most every 10 s; absent while the queue backend does not answer)',
      labelNames: ['queue', 'state'],
      registers,
      collect: queueCollect((g, figures) => {
        for (const { queue, counts } of figures) for (const [state, count] of Object.entries(counts)) g.set({ queue, state }, count);
      }),
    });
    new Gauge({
      name: 'merchant_pay_queue_paused',
      help: 'Whether every worker is paused on the queue (worker:pause): 1 paused, 0 taking jobs (refreshed at most every 10 s)',
      labelNames: ['queue'],
      registers,
      collect: queueCollect((g, figures) => {
        for (const { queue, paused } of figures) g.set({ queue }, paused ? 1 : 0);
      }),
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

  /** Whether PostgreSQL answered this scrape's probe (merchant_pay_db_up). */
  databaseUp(): Promise<boolean> {
    return this.database.up();
  }

  /** The queue backend answers now: Redis connected, or the database for the PostgreSQL backend. */
  private async queueAnswers(): Promise<boolean> {
    if (this.config.queueBackend === 'postgres') return this.database.up();
    return this.redis === undefined || this.redis.status === 'ready';
  }

  private async refresh(): Promise<void> {
    const read = async <T>(what: string, work: () => Promise<T>): Promise<T | null> => {
      try {
        return await work();
      } catch (err) {
        this.logger.warn(`cached gauges: ${what} not read, absent until the next refresh: ${(err as Error).message}`);
        return null;
      }
    };
    const [deliveries, circuits, stuck, queues] = await Promise.all([
      read('deliveries by status', () => this.callbackDeliveries.statusCounts()),
      read('circuits', () => this.callbackDeliveries.circuitFigures()),
      read('stuck money', () => this.operations.stuckMoney()),
      read('queues', () =>
        Promise.all(
          Object.values(QUEUE).map(async (name) => {
            const queue = this.jobs.queue(name);
            const [counts, paused] = await Promise.all([queue.getJobCounts('waiting', 'active', 'delayed', 'failed'), queue.isPaused()]);
            return { queue: name, paused, counts };
          }),
        ),
      ),
    ]);
    this.figures = { deliveries, circuits, stuck, queues };
    this.refreshes.inc({ outcome: [deliveries, circuits, stuck, queues].includes(null) ? 'failed' : 'ok' });
  }
}
