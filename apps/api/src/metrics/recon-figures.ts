import { Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { RECON_CLASSES, type ReconClass, ReconRepository, clearGauge } from '@app/db';
import { CACHED_GAUGE_MAX_AGE_MS, CachedGauges } from './cached-gauges';
import { MetricsService } from './metrics.service';

/**
 * recon_mismatches_total{kind} and recon_bills_refused_total (SPEC 6): read from the stored runs,
 * so they count what every process did (the workers' daily job, an operator's recon:run) and
 * survive restarts. Like CachedGauges, a scrape shows the last figures and starts a background
 * refresh when they are 10 s old: it never waits for the count.
 */
@Injectable()
export class ReconFigures {
  private readonly logger = new Logger(ReconFigures.name);
  /** Null while the last reading failed or before the first: the counters are then absent, not frozen. */
  private figures: { mismatches: Partial<Record<ReconClass, number>>; refused: number } | null = null;
  private lastStartedAt = -Infinity;
  private running: Promise<void> | null = null;

  constructor(
    metrics: MetricsService,
    private readonly recon: ReconRepository,
    gauges: CachedGauges,
  ) {
    const refreshIfStale = (): void => this.refreshIfStale();
    // Read from the database: absent while it does not answer (the scrape's one probe), as every such figure.
    const current = async (): Promise<ReconFigures['figures']> => ((await gauges.databaseUp()) ? this.figures : null);
    new Counter({
      name: 'recon_mismatches_total',
      help: 'Reconciliation lines that did not match, by class (refreshed at most every 10 s)',
      labelNames: ['kind'],
      registers: [metrics.registry],
      async collect() {
        refreshIfStale();
        const figures = await current();
        clearGauge(this);
        if (figures) for (const kind of RECON_CLASSES) if (kind !== 'matched') this.inc({ kind }, figures.mismatches[kind] ?? 0);
      },
    });
    new Counter({
      name: 'recon_bills_refused_total',
      help: 'Channel bills refused as malformed, truncated or wrongly encoded (refreshed at most every 10 s)',
      registers: [metrics.registry],
      async collect() {
        const figures = await current();
        clearGauge(this);
        if (figures) this.inc(figures.refused);
      },
    });
  }

  refreshIfStale(): void {
    if (this.running || Date.now() - this.lastStartedAt < CACHED_GAUGE_MAX_AGE_MS) return;
    void this.refresh();
  }

  /** One refresh (the one running, if any). */
  refresh(): Promise<void> {
    this.running ??= (async () => {
      this.lastStartedAt = Date.now();
      try {
        this.figures = await this.recon.figures();
      } catch (err) {
        this.figures = null;
        this.logger.warn(`reconciliation figures not read, absent until the next refresh: ${(err as Error).message}`);
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }
}
