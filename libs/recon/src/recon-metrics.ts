import { Injectable } from '@nestjs/common';
import { Counter, Registry } from 'prom-client';

/** The reconciliation's counters, in a registry of their own that the process serving /metrics merges. */
@Injectable()
export class ReconMetrics {
  readonly registry = new Registry();

  /** One per line that is not matched, by class (SPEC 6: recon_mismatches_total{kind}); never a channel's config. */
  readonly mismatches = new Counter({
    name: 'recon_mismatches_total',
    help: 'Reconciliation lines that did not match, by class',
    labelNames: ['kind'],
    registers: [this.registry],
  });

  readonly billsRefused = new Counter({
    name: 'recon_bills_refused_total',
    help: 'Channel bills refused as malformed, truncated or wrongly encoded',
    registers: [this.registry],
  });
}
