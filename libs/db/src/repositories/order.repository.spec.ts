import type { EntityManager, Repository } from 'typeorm';
import type { Order, OrderStatus } from '../entities';
import type { Move } from '../state-move';
import { OrderRepository } from './order.repository';

describe('OrderRepository.transitionBy', () => {
  function recordingEm(queries: { sql: string; params: unknown[] }[]): EntityManager {
    return {
      query: async (sql: string, params: unknown[]) => {
        queries.push({ sql, params });
        return [[], 0];
      },
    } as unknown as EntityManager;
  }

  it('matches only the (state, order type) pairs of the move: a notification never pays a sell order', async () => {
    const queries: { sql: string; params: unknown[] }[] = [];
    const repository = new OrderRepository({} as Repository<Order>);
    const notification: Move<OrderStatus> = {
      from: ['pending', 'cancelled'],
      to: 'paid',
      pairs: [
        { from: 'pending', orderType: 1 },
        { from: 'cancelled', orderType: 1 },
      ],
    };
    const refusal: Move<OrderStatus> = { from: ['pending'], to: 'cancelled', pairs: [{ from: 'pending', orderType: 2 }] };
    expect(await repository.transitionBy(recordingEm(queries), '42', notification)).toBeNull();
    expect(await repository.transitionBy(recordingEm(queries), '42', refusal)).toBeNull();
    expect(queries[0].sql).toMatch(/\("status", "order_type"\) IN \(SELECT \* FROM unnest\(\$2::varchar\[\], \$3::smallint\[\]\)\)/);
    expect(queries.map((q) => q.params.slice(0, 4))).toEqual([
      ['42', ['pending', 'cancelled'], [1, 1], 'paid'],
      ['42', ['pending'], [2], 'cancelled'],
    ]);
  });
});
