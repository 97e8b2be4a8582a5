import { Logger } from '@nestjs/common';
import type { JobQueue } from '@app/queue';
import { JobsAfterCommit } from './jobs-after-commit';

describe('JobsAfterCommit.requeueStuck', () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterEach(() => jest.restoreAllMocks());

  function withQueue(add: (name: string, payload: unknown, options: { jobId: string }) => Promise<unknown>) {
    return new JobsAfterCommit({ add } as unknown as JobQueue);
  }

  it('queues one job a stuck row under its job id and a suffix of the window, so a job failed for good is not in the way', async () => {
    const added: { name: string; payload: unknown; jobId: string }[] = [];
    const jobs = withQueue(async (name, payload, { jobId }) => added.push({ name, payload, jobId }));
    jest.spyOn(Date, 'now').mockReturnValue(600_000 * 7 + 5);
    const job = (id: string) => ({ payload: { refundId: id }, jobId: `refund-${id}` });
    expect(await jobs.requeueStuck('refund.process', { ids: ['a', 'b'], stuckSeconds: 600 }, job)).toBe(2);
    expect(added).toEqual([
      { name: 'refund.process', payload: { refundId: 'a' }, jobId: 'refund-a-sweep-7' },
      { name: 'refund.process', payload: { refundId: 'b' }, jobId: 'refund-b-sweep-7' },
    ]);
    // The next window, a new id: BullMQ would otherwise ignore the add of a job id it keeps.
    jest.spyOn(Date, 'now').mockReturnValue(600_000 * 8);
    await jobs.requeueStuck('refund.process', { ids: ['a'], stuckSeconds: 600 }, job);
    expect(added[2].jobId).toBe('refund-a-sweep-8');
  });

  it('counts only the jobs the queue took; a failed add is not thrown', async () => {
    const jobs = withQueue(async (_name, _payload, { jobId }) => {
      if (jobId.startsWith('payout-b')) throw new Error('redis down');
    });
    expect(
      await jobs.requeueStuck('order.payout', { ids: ['a', 'b', 'c'], stuckSeconds: 60 }, (id) => ({ payload: { orderId: id }, jobId: `payout-${id}` })),
    ).toBe(2);
  });
});
