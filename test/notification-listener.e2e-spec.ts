import { Client } from 'pg';
import { NotificationListener } from '@app/db';
import { waitFor } from './helpers/callbacks';
import { createTestDatabase } from './helpers/database';

/** The listener's own connection (real PostgreSQL): its periodic check never stacks a query on one still running. */
describe('NotificationListener', () => {
  let listener: NotificationListener | undefined;
  afterEach(async () => {
    await listener?.stop();
    jest.restoreAllMocks();
  });

  it('runs one check at a time on its connection, however short the interval (pg 9 refuses a second query in flight)', async () => {
    const inFlight = new Map<Client, number>();
    let most = 0;
    let checks = 0;
    const query = Client.prototype.query;
    jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
      inFlight.set(this, (inFlight.get(this) ?? 0) + 1);
      most = Math.max(most, inFlight.get(this)!);
      const settle = () => void inFlight.set(this, inFlight.get(this)! - 1);
      const result = (query as (...a: unknown[]) => Promise<unknown>).apply(this, args);
      if (args[0] === 'SELECT 1') checks++;
      return result.finally(settle);
    } as never);

    const lost: Error[] = [];
    listener = new NotificationListener(
      await createTestDatabase(),
      'test_checks',
      { notification: () => undefined, listening: () => undefined, lost: (e) => lost.push(e) },
      {
        pingMs: 1,
        pingTimeoutMs: 5_000,
      },
    );
    await listener.start();
    await waitFor(() => checks >= 200, 20_000, '200 checks');
    expect(listener.listening).toBe(true);
    expect(lost).toEqual([]);
    expect(most).toBe(1);
  });
});
