import type { AppConfig } from '@app/common';
import type { CallbackFiguresRepository } from '@app/db';
import type { DataSource } from 'typeorm';
import { BoundedLabel, OTHER_LABEL, WorkerMetrics } from './worker-metrics';

describe('bounded merchant labels (issue 29)', () => {
  it('keeps the first `cap` values, then answers "other" for any new one, and keeps answering the kept ones', () => {
    const label = new BoundedLabel(2);
    expect([label.of(7), label.of(8), label.of(9), label.of(7), label.of(10), label.of(8)]).toEqual(['7', '8', OTHER_LABEL, '7', OTHER_LABEL, '8']);
    expect(new BoundedLabel(0).of(1)).toBe(OTHER_LABEL);
  });

  it('merchant_pay_callback_deliveries_by_merchant_total has at most METRICS_MERCHANT_LABELS merchant ids, whatever the number of merchants', async () => {
    const config = { metricsMerchantLabels: 3, workerMetricsPort: 0, metricsToken: null } as unknown as AppConfig;
    const metrics = new WorkerMetrics(config, {} as DataSource, {} as CallbackFiguresRepository);
    for (let merchant = 1; merchant <= 500; merchant++) metrics.settled(merchant, merchant % 2 ? 'succeeded' : 'failed');
    const { values } = await metrics.merchantDeliveries.get();
    const ids = new Set(values.map((v) => v.labels.merchant_id));
    expect([...ids].sort()).toEqual(['1', '2', '3', OTHER_LABEL]);
    // Nothing is lost: "other" holds the rest, and the unlabelled total agrees.
    expect(values.reduce((sum, v) => sum + v.value, 0)).toBe(500);
    expect(values.find((v) => v.labels.merchant_id === OTHER_LABEL && v.labels.outcome === 'failed')?.value).toBe(249);
    const settled = await metrics.deliveries.get();
    expect(settled.values.reduce((sum, v) => sum + v.value, 0)).toBe(500);
  });
});
