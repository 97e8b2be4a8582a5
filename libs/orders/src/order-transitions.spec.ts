import { ORDER_STATUSES, type OrderStatus } from '@app/db';
import { ORDER_TRANSITIONS, TransitionTable } from './order-transitions';

// The expected matrix, written out by hand from SPEC 5 (not read from the table under test).
// Rows are from-states; columns the to-states in this order: pending paid confirmed completed cancelled.
const COLUMNS: OrderStatus[] = ['pending', 'paid', 'confirmed', 'completed', 'cancelled'];
// No move at all from any state.
const NO_MOVES: Record<OrderStatus, (0 | 1)[]> = {
  pending: [0, 0, 0, 0, 0],
  paid: [0, 0, 0, 0, 0],
  confirmed: [0, 0, 0, 0, 0],
  completed: [0, 0, 0, 0, 0],
  cancelled: [0, 0, 0, 0, 0],
};
const EXPECTED: Record<number, Record<OrderStatus, (0 | 1)[]>> = {
  // Buy orders (top-ups).
  1: {
    pending: [0, 1, 0, 0, 1],
    paid: [0, 0, 1, 0, 0],
    confirmed: [0, 0, 0, 1, 0],
    completed: [0, 0, 0, 0, 0],
    cancelled: [0, 1, 0, 0, 0],
  },
  // Sell orders (payouts): paid by the channel then completed, or refused and cancelled.
  2: {
    pending: [0, 1, 0, 0, 1],
    paid: [0, 0, 0, 1, 0],
    confirmed: [0, 0, 0, 0, 0],
    completed: [0, 0, 0, 0, 0],
    cancelled: [0, 0, 0, 0, 0],
  },
  // An order type that does not exist.
  3: NO_MOVES,
};

const CASES = Object.entries(EXPECTED).flatMap(([orderType, rows]) =>
  COLUMNS.flatMap((from) => COLUMNS.map((to, column) => [Number(orderType), from, to, rows[from][column] === 1] as const)),
);

describe('ORDER_TRANSITIONS (SPEC 5)', () => {
  it('the matrix covers every state as row and column', () => {
    expect([...COLUMNS].sort()).toEqual([...ORDER_STATUSES].sort());
    expect(CASES).toHaveLength(3 * 5 * 5);
  });

  it.each(CASES)('order_type %i: %s -> %s allowed: %p', (orderType, from, to, allowed) => {
    expect(ORDER_TRANSITIONS.allows(from, to, orderType)).toBe(allowed);
    expect(ORDER_TRANSITIONS.orderTypes(from, to).includes(orderType)).toBe(allowed);
  });

  it('names the moves by their cause', () => {
    expect(ORDER_TRANSITIONS.step('notification')).toEqual({ from: ['pending'], to: 'paid' });
    expect(ORDER_TRANSITIONS.step('notification', 'late_notification')).toEqual({ from: ['pending', 'cancelled'], to: 'paid' });
    expect(ORDER_TRANSITIONS.step('expiry')).toEqual({ from: ['pending'], to: 'cancelled' });
    expect(ORDER_TRANSITIONS.step('channel_failure')).toEqual({ from: ['pending'], to: 'cancelled' });
    expect(ORDER_TRANSITIONS.step('confirmation')).toEqual({ from: ['paid'], to: 'confirmed' });
    expect(ORDER_TRANSITIONS.step('credit')).toEqual({ from: ['confirmed'], to: 'completed' });
    expect(ORDER_TRANSITIONS.step('close')).toEqual({ from: ['pending'], to: 'cancelled' });
    expect(ORDER_TRANSITIONS.step('payout')).toEqual({ from: ['pending'], to: 'paid' });
    expect(ORDER_TRANSITIONS.step('payout_refused')).toEqual({ from: ['pending'], to: 'cancelled' });
    expect(ORDER_TRANSITIONS.step('payout_confirmation')).toEqual({ from: ['paid'], to: 'completed' });
  });

  it('a move keeps the order types of its causes: a merchant closes top-ups only, a refusal cancels payouts only', () => {
    expect(ORDER_TRANSITIONS.move('close')).toEqual({ from: ['pending'], to: 'cancelled', pairs: [{ from: 'pending', orderType: 1 }] });
    expect(ORDER_TRANSITIONS.move('payout_refused')).toEqual({ from: ['pending'], to: 'cancelled', pairs: [{ from: 'pending', orderType: 2 }] });
    expect(ORDER_TRANSITIONS.move('notification', 'late_notification')).toEqual({
      from: ['pending', 'cancelled'],
      to: 'paid',
      pairs: [
        { from: 'pending', orderType: 1 },
        { from: 'cancelled', orderType: 1 },
      ],
    });
    expect(() => ORDER_TRANSITIONS.move('close', 'payout')).toThrow(/no single move/);
  });

  it('refuses causes that lead to different states, and an unknown cause', () => {
    expect(() => ORDER_TRANSITIONS.step('expiry', 'credit')).toThrow(/no single move/);
    const table = new TransitionTable<'a' | 'b', 'x' | 'y'>([{ from: 'a', to: 'b', orderTypes: [1], by: 'x' }]);
    expect(() => table.step('y')).toThrow(/no single move for y/);
  });

  it('adds a kind of order as rows: the union of the types of one move', () => {
    const table = new TransitionTable<'pending' | 'cancelled', 'expiry' | 'refused'>([
      { from: 'pending', to: 'cancelled', orderTypes: [1], by: 'expiry' },
      { from: 'pending', to: 'cancelled', orderTypes: [2], by: 'refused' },
    ]);
    expect(table.orderTypes('pending', 'cancelled')).toEqual([1, 2]);
    expect(table.orderTypes('cancelled', 'pending')).toEqual([]);
  });

  it.each([
    ['completed', 'pending'],
    ['pending', 'completed'],
    ['pending', 'confirmed'],
    ['paid', 'cancelled'],
    ['cancelled', 'completed'],
    ['paid', 'paid'],
    // One refused state among allowed ones refuses the whole move.
    [['pending', 'paid'], 'cancelled'],
    [[], 'paid'],
  ] as [OrderStatus | OrderStatus[], OrderStatus][])('between %p and %s is not a move: it throws', (from, to) => {
    expect(() => ORDER_TRANSITIONS.between(from, to)).toThrow(/is not a transition of the state table/);
  });

  it('between states, a move keeps every order type the table allows it', () => {
    // pending -> paid is a row of top-ups (a notification) and of sell orders (a payout).
    expect(ORDER_TRANSITIONS.between(['pending', 'cancelled'], 'paid')).toEqual({
      from: ['pending', 'cancelled'],
      to: 'paid',
      pairs: [
        { from: 'pending', orderType: 1 },
        { from: 'pending', orderType: 2 },
        { from: 'cancelled', orderType: 1 },
      ],
    });
  });
});
