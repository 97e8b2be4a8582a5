import { Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { RECON_CLASSES, type ReconClass, ReconRepository } from '@app/db';
import { CACHED_GAUGE_MAX_AGE_MS } from './cached-gauges';
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
  private mismatches: Partial<Record<ReconClass, number>> = {};
  private refused = 0;
  private lastStartedAt = -Infinity;
  private running: Promise<void> | null = null;

  constructor(
    metrics: MetricsService,
    private readonly recon: ReconRepository,
  ) {
    const refreshIfStale = (): void => this.refreshIfStale();
    const mismatches = (kind: ReconClass): number => this.mismatches[kind] ?? 0;
    const refused = (): number => this.refused;
    new Counter({
      name: 'recon_mismatches_total',
      help: 'Reconciliation lines that did not match, by class (refreshed at most every 10 s)',
      labelNames: ['kind'],
      registers: [metrics.registry],
      collect() {
        refreshIfStale();
        this.reset();
        for (const kind of RECON_CLASSES) if (kind !== 'matched') this.inc({ kind }, mismatches(kind));
      },
    });
    new Counter({
      name: 'recon_bills_refused_total',
      help: 'Channel bills refused as malformed, truncated or wrongly encoded (refreshed at most every 10 s)',
      registers: [metrics.registry],
      collect() {
        this.reset();
        this.inc(refused());
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
        ({ mismatches: this.mismatches, refused: this.refused } = await this.recon.figures());
      } catch (err) {
        this.logger.warn(`reconciliation figures not refreshed: ${(err as Error).message}`);
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }
}
