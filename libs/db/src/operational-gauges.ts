import { Client } from 'pg';
import { type Counter, Gauge, type Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import type { Redis } from 'ioredis';
import { CallbackFiguresRepository } from './repositories/callback-figures.repository';

/** The delivery lag costs a query: it is computed at most this often, whatever the number of scrapers. */
export const DELIVERY_LAG_MAX_AGE_MS = 10_000;

/** A scrape waits at most this long for the open circuits' count. */
const CIRCUIT_COUNT_PATIENCE_MS = 1_000;

/** How long the probe behind merchant_pay_db_up waits for PostgreSQL to connect, then to answer. */
const DB_PROBE_PATIENCE_MS = 2_000;

/** Scrapes (and the gauges of one scrape) within this share one probe. */
const DB_PROBE_MAX_AGE_MS = 250;

/** The pg Pool under TypeORM's PostgreSQL driver: its counts are read, never changed. */
interface PoolCounts {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options?: { max?: number };
}

export interface OperationalGaugeSources {
  dataSource: DataSource;
  deliveries: CallbackFiguresRepository;
  /** The shared Redis client when REDIS_URL is set; without it no merchant_pay_redis_up is served. */
  redis: Redis | null;
}

function poolOf(dataSource: DataSource): PoolCounts | undefined {
  return (dataSource.driver as unknown as { master?: PoolCounts }).master;
}

/** Empties a gauge (or a counter read from elsewhere): a figure that cannot be read now is absent from the scrape, never its last value (SPEC 10). */
export function clearGauge(metric: Gauge<string> | Counter<string>): void {
  metric.reset();
  // reset() leaves an unlabelled metric at 0: remove that series too.
  if ((metric as unknown as { labelNames: string[] }).labelNames.length === 0) metric.remove();
}

/**
 * Whether this process's PostgreSQL answers, probed once for every gauge of a scrape: the figures
 * read from the database are served only when it did. The probe is a connection of its own
 * (`SELECT 1`, then closed), not one of the pool's: a saturated pool (its own alert) must not read
 * as a database that is down, nor the probe queue behind the requests it reports on. No answer
 * within 2 s counts as down.
 */
export class DatabaseProbe {
  private running: Promise<boolean> | null = null;
  private last: { at: number; up: boolean } | null = null;

  constructor(private readonly dataSource: DataSource) {}

  up(): Promise<boolean> {
    if (this.last && Date.now() - this.last.at < DB_PROBE_MAX_AGE_MS) return Promise.resolve(this.last.up);
    this.running ??= this.probe().finally(() => (this.running = null));
    return this.running;
  }

  private async probe(): Promise<boolean> {
    const options = this.dataSource.options as { url?: string; replication?: { master: { url?: string } }; applicationName?: string };
    const client = new Client({
      // The primary, also when a read replica is configured (TypeORM's replication options then hold the URLs).
      connectionString: options.url ?? options.replication?.master.url,
      application_name: `${options.applicationName ?? 'merchant-pay'}-probe`,
      connectionTimeoutMillis: DB_PROBE_PATIENCE_MS,
      query_timeout: DB_PROBE_PATIENCE_MS,
    });
    // An 'error' after the probe (the server going away) must not be an unhandled event.
    client.on('error', () => undefined);
    const up = await client
      .connect()
      .then(() => client.query('SELECT 1'))
      .then(
        () => true,
        () => false,
      );
    await client.end().catch(() => undefined);
    this.last = { at: Date.now(), up };
    return up;
  }
}

/**
 * What an on-call alert reads, in one process's registry (the API's and the worker's): whether
 * its PostgreSQL and its Redis answer, its database pool, the age of the oldest due callback
 * delivery and the circuits open now. Pool and Redis are read from memory at scrape time, the
 * database by one shared probe; the open circuits are counted at scrape time (a small table);
 * the delivery lag is one index probe, cached 10 s. A figure read from the database is absent
 * while the database does not answer, and when its last reading failed: never frozen.
 */
export function registerOperationalGauges(registry: Registry, sources: OperationalGaugeSources): DatabaseProbe {
  const registers = [registry];
  const pool = (): PoolCounts | undefined => poolOf(sources.dataSource);
  const database = new DatabaseProbe(sources.dataSource);
  new Gauge({
    name: 'merchant_pay_db_up',
    help: 'Whether PostgreSQL answers this process (1) or not (0): a SELECT 1 on a connection of its own within 2 s, one probe per scrape',
    registers,
    async collect() {
      this.set((await database.up()) ? 1 : 0);
    },
  });
  new Gauge({
    name: 'merchant_pay_db_pool_connections',
    help: 'Database pool connections of this process by state: in_use, idle, waiting (requests queued for a connection)',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const counts = pool();
      if (!counts) return;
      this.set({ state: 'in_use' }, counts.totalCount - counts.idleCount);
      this.set({ state: 'idle' }, counts.idleCount);
      this.set({ state: 'waiting' }, counts.waitingCount);
    },
  });
  new Gauge({
    name: 'merchant_pay_db_pool_max',
    help: 'The most connections this process may open (DATABASE_POOL_SIZE)',
    registers,
    collect() {
      const max = pool()?.options?.max;
      if (max !== undefined) this.set(max);
    },
  });
  const redis = sources.redis;
  if (redis) {
    new Gauge({
      name: 'merchant_pay_redis_up',
      help: 'Whether this process is connected to Redis and it answers (1) or not (0)',
      registers,
      collect() {
        this.set(redis.status === 'ready' ? 1 : 0);
      },
    });
  }
  new Gauge({
    name: 'merchant_pay_callback_circuits_open',
    help: 'Callback destinations whose circuit is open now, counted at each scrape (absent when the database does not answer within 1 s)',
    registers,
    async collect() {
      const open = (await database.up()) ? await within(CIRCUIT_COUNT_PATIENCE_MS, sources.deliveries.openCircuitCount()) : null;
      if (open === null) clearGauge(this);
      else this.set(open);
    },
  });
  const lag = { value: null as number | null, startedAt: -Infinity, running: false };
  new Gauge({
    name: 'merchant_pay_callback_delivery_lag_seconds',
    help: 'Age of the oldest due pending callback delivery, 0 when none is due (refreshed at most every 10 s, never on the scrape path; absent when the database does not answer)',
    registers,
    async collect() {
      // A locked or slow table delays the figure, never the scrape (as the API's cached gauges).
      if (!lag.running && Date.now() - lag.startedAt >= DELIVERY_LAG_MAX_AGE_MS) {
        lag.running = true;
        lag.startedAt = Date.now();
        sources.deliveries
          .deliveryLagSeconds()
          .then(
            (value) => (lag.value = value),
            () => (lag.value = null),
          )
          .finally(() => (lag.running = false));
      }
      if (lag.value === null || !(await database.up())) clearGauge(this);
      else this.set(lag.value);
    },
  });
  return database;
}

/** The answer, or null when it fails or takes longer than `ms`. */
async function within<T>(ms: number, work: Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  try {
    return await Promise.race([work.catch(() => null), late]);
  } finally {
    clearTimeout(timer);
  }
}
