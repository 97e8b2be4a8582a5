import type { INestApplicationContext } from '@nestjs/common';
import { QUEUE } from '@app/common';
import type { Credentials } from '@app/operator';
import { JobQueue } from '@app/queue';
import { shanghaiDate } from '@app/recon';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { RECON_SCHEDULER_ID, ReconDaily } from '../apps/worker/src/recon/recon-daily';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { paidOnPage } from './helpers/recon';

describe('the daily reconciliation job in the worker (real PostgreSQL and Redis)', () => {
  let api: TestApi;
  let merchant: Credentials;
  let channels: Record<string, number>;
  const workers: INestApplicationContext[] = [];

  beforeAll(async () => {
    api = await startTestApi({ RECON_AT: '04:15' });
    ({ merchant, channels } = await merchantWithChannels(api.operator));
    // Two workers: still one scheduler, so one job a day.
    for (let i = 0; i < 2; i++) workers.push(await createWorkerApp(api.config, { shutdownHooks: false }));
  });
  afterAll(async () => {
    for (const w of workers) await w.close();
    await api?.close();
  });

  it('is one BullMQ job scheduler at RECON_AT Asia/Shanghai, whatever the number of workers', async () => {
    const queue = workers[0].get(JobQueue).queue(QUEUE.orders);
    const schedulers = (await queue.getJobSchedulers()).filter((s) => s.key === RECON_SCHEDULER_ID || s.id === RECON_SCHEDULER_ID);
    expect(schedulers).toHaveLength(1);
    expect(schedulers[0]).toMatchObject({ pattern: '15 4 * * *', tz: 'Asia/Shanghai', name: 'recon.daily' });
    // Its next run is a delayed job Bull Board lists on the orders queue.
    const delayed = await queue.getDelayed();
    expect(delayed.some((j) => j.name === 'recon.daily')).toBe(true);
  });

  it('reconciles the previous day of every enabled channel; a disabled channel is left out', async () => {
    await paidOnPage(api.app, merchant, channels.processor, '12.00');
    await api.operator.channels.setEnabled(channels.warehouse, false);
    // Scheduled tomorrow: its day is today.
    const tomorrow = Date.now() + 86_400_000;
    const result = await workers[1].get(ReconDaily).run({ timestamp: tomorrow, delay: 0 });
    expect(result.date).toBe(shanghaiDate(new Date()));
    const byChannel = Object.fromEntries(result.runs.map((r) => [r.channel_id, r]));
    expect(byChannel[channels.processor]).toMatchObject({ status: 'completed', counts: { matched: 1, missing_local: 0, missing_channel: 0 } });
    expect(byChannel[channels.remotepay]).toMatchObject({ status: 'completed', counts: { matched: 0 } });
    expect(byChannel[channels.warehouse]).toBeUndefined();
    // Again (a retried job): the same runs, nothing new.
    const again = await workers[0].get(ReconDaily).run({ timestamp: tomorrow, delay: 0 });
    expect(again).toEqual(result);
  });
});
