import type { EntityManager, Repository } from 'typeorm';
import { ORDER_TRANSITIONS, type Order, type OrderStatus } from '../entities';
import { OrderRepository } from './order.repository';

/** Any use at all (a query, a find, a property read) is a failure of the test. */
function untouchable<T extends object>(what: string, touched: string[]): T {
  return new Proxy({} as T, {
    get(_target, property) {
      touched.push(`${what}.${String(property)}`);
      throw new Error(`${what}.${String(property)} was used`);
    },
  });
}

describe('OrderRepository.transition refuses moves outside the state table', () => {
  const refused: [OrderStatus | OrderStatus[], OrderStatus][] = [
    ['completed', 'pending'],
    ['pending', 'completed'],
    ['pending', 'confirmed'],
    ['paid', 'cancelled'],
    ['cancelled', 'completed'],
    ['paid', 'paid'],
    // One refused state among allowed ones refuses the whole call.
    [['pending', 'paid'], 'cancelled'],
    [[], 'paid'],
  ];

  it.each(refused)('%p -> %s throws without touching the database', async (from, to) => {
    const touched: string[] = [];
    const repository = new OrderRepository(untouchable<Repository<Order>>('repository', touched));
    const em = untouchable<EntityManager>('em', touched);
    await expect(repository.transition(em, '42', from, to)).rejects.toThrow(/is not a transition of the order state table/);
    expect(touched).toEqual([]);
  });

  function recordingEm(queries: { sql: string; params: unknown[] }[]): EntityManager {
    return {
      query: async (sql: string, params: unknown[]) => {
        queries.push({ sql, params });
        return [[], 0];
      },
    } as unknown as EntityManager;
  }

  it('runs the allowed move, limited to the order types the table gives it', async () => {
    const queries: { sql: string; params: unknown[] }[] = [];
    const repository = new OrderRepository({} as Repository<Order>);
    // pending -> paid is a row of top-ups (a notification) and of sell orders (a payout).
    expect(await repository.transition(recordingEm(queries), '42', ['pending', 'cancelled'], 'paid')).toBeNull();
    expect(queries).toHaveLength(1);
    expect(queries[0].sql).toMatch(/\("status", "order_type"\) IN \(SELECT \* FROM unnest\(\$2::varchar\[\], \$3::smallint\[\]\)\)/);
    expect(queries[0].params.slice(0, 4)).toEqual(['42', ['pending', 'pending', 'cancelled'], [1, 2, 1], 'paid']);
  });

  it('by its causes, a move matches only the order types of those causes\' rows: a notification never pays a sell order', async () => {
    const queries: { sql: string; params: unknown[] }[] = [];
    const repository = new OrderRepository({} as Repository<Order>);
    expect(await repository.transitionBy(recordingEm(queries), '42', ORDER_TRANSITIONS.move('notification', 'late_notification'))).toBeNull();
    expect(await repository.transitionBy(recordingEm(queries), '42', ORDER_TRANSITIONS.move('payout_refused'))).toBeNull();
    expect(queries.map((q) => q.params.slice(0, 4))).toEqual([
      ['42', ['pending', 'cancelled'], [1, 1], 'paid'],
      ['42', ['pending'], [2], 'cancelled'],
    ]);
  });
});
