import type { Queue } from 'bullmq';
import { JobQueue } from './job-queue';

describe('JobQueue', () => {
  function recording() {
    const added: { name: string; options: Record<string, unknown> }[] = [];
    const queue = {
      add: async (name: string, _data: unknown, options: Record<string, unknown>) => added.push({ name, options }),
      // JobQueue reports a queue's connection errors (issue 29): the stand-in takes the listener.
      on: () => queue,
      waitUntilReady: () => new Promise(() => undefined),
    } as unknown as Queue;
    return { jobs: new JobQueue(queue, queue), added };
  }

  it('gives a job that talks to a channel retries with backoff, and lets the caller name it', async () => {
    const { jobs, added } = recording();
    for (const name of ['order.confirm', 'order.payout', 'refund.process'] as const) {
      await jobs.add(name, { orderId: '1', refundId: '1' } as never, { jobId: `${name}-1` });
    }
    for (const { name, options } of added) {
      expect(options).toMatchObject({ jobId: `${name}-1`, attempts: 10, backoff: { type: 'exponential', delay: 2000 }, removeOnFail: { age: 7 * 86_400 } });
    }
  });

  it('neither retries nor keeps long a periodic pass', async () => {
    const { jobs, added } = recording();
    await jobs.add('maintenance.sweep', {});
    expect(added[0].options).toEqual({ removeOnComplete: true, removeOnFail: 100 });
  });
});
