import type { Order } from '@app/db';
import { orderEventPayload } from './order-event-payload';

const at = new Date('2026-01-01T00:00:00Z');
const order = {
  orderNo: '2026010108000012345678',
  merchantOrderNo: null,
  orderType: 1,
  status: 'paid',
  cnyFen: 10000,
  merchantActualFen: 9940,
  serviceRate: '0.00600000',
  serviceFen: 60,
  createdAt: at,
  updatedAt: at,
  paidAt: at,
} as Order;

describe('orderEventPayload', () => {
  it("carries the order's stored rate", () => {
    expect(orderEventPayload('e1', 'order.paid', order)).toMatchObject({ service_rate: '0.00600000', service_amount: 60 });
  });

  it('throws on a corrupted stored rate, naming the order, rather than telling the merchant a rate of 0', () => {
    expect(() => orderEventPayload('e1', 'order.paid', { ...order, serviceRate: '-0.00600000' })).toThrow(
      /^the stored rate of order 2026010108000012345678 is not a rate from 0 to 1/,
    );
  });
});
