import { Gauge, type Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import type { Redis } from 'ioredis';
import { CallbackFiguresRepository } from './repositories/callback-figures.repository';

/** The delivery lag costs a query: it is computed at most this often, whatever the number of scrapers. */
export const DELIVERY_LAG_MAX_AGE_MS = 10_000;

/** A scrape waits at most this long for the open circuits' count. */
const CIRCUIT_COUNT_PATIENCE_MS = 1_000;

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

/**
 * What an on-call alert reads, in one process's registry (the API's and the worker's): its
 * database pool, whether its Redis answers, the age of the oldest due callback delivery, and the
 * circuits open now. Pool and Redis are read from memory at scrape time; the open circuits are
 * counted at scrape time (a small table); the delivery lag is one index probe, cached 10 s.
 */
export function registerOperationalGauges(registry: Registry, sources: OperationalGaugeSources): void {
  const registers = [registry];
  const pool = (): PoolCounts | undefined => (sources.dataSource.driver as unknown as { master?: PoolCounts }).master;
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
  let open: number | null = null;
  new Gauge({
    name: 'merchant_pay_callback_circuits_open',
    help: 'Callback destinations whose circuit is open now, counted at each scrape (the last count if the database is slower than 1 s)',
    registers,
    async collect() {
      open = (await within(CIRCUIT_COUNT_PATIENCE_MS, sources.deliveries.openCircuitCount())) ?? open;
      if (open !== null) this.set(open);
    },
  });
  const lag = { value: 0, startedAt: -Infinity, running: false };
  new Gauge({
    name: 'merchant_pay_callback_delivery_lag_seconds',
    help: 'Age of the oldest due pending callback delivery, 0 when none is due (refreshed at most every 10 s, never on the scrape path)',
    registers,
    collect() {
      // A locked or slow table delays the figure, never the scrape (as the API's cached gauges).
      if (!lag.running && Date.now() - lag.startedAt >= DELIVERY_LAG_MAX_AGE_MS) {
        lag.running = true;
        lag.startedAt = Date.now();
        sources.deliveries
          .deliveryLagSeconds()
          .then(
            (value) => (lag.value = value),
            () => undefined,
          )
          .finally(() => (lag.running = false));
      }
      this.set(lag.value);
    },
  });
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
