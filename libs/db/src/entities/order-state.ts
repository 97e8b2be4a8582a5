import type { OrderStatus } from './order.entity';

/** order_type 1: a top-up (the payer pays the merchant through a channel). */
export const BUY_ORDER = 1;

/** One row of a state table: `by` names what causes the move, `orderTypes` the kinds of order it applies to. */
export interface TransitionRule<State extends string, Cause extends string> {
  from: State;
  to: State;
  orderTypes: readonly number[];
  by: Cause;
}

/** What moves an order, SPEC 5's "by" column. */
export type OrderTransitionCause = 'notification' | 'late_notification' | 'expiry' | 'channel_failure' | 'confirmation' | 'credit';

/**
 * A state table as data: the only moves allowed are its rows. Another kind of order (or a
 * refund's own lifecycle) adds rows, never branches in the code that applies them.
 */
export class TransitionTable<State extends string, Cause extends string> {
  constructor(readonly rules: readonly TransitionRule<State, Cause>[]) {}

  /** The order types for which `from -> to` is a row; empty when the table refuses the move. */
  orderTypes(from: State, to: State): number[] {
    const types = this.rules.filter((r) => r.from === from && r.to === to).flatMap((r) => r.orderTypes);
    return [...new Set(types)].sort((a, b) => a - b);
  }

  allows(from: State, to: State, orderType: number): boolean {
    return this.orderTypes(from, to).includes(orderType);
  }

  /**
   * The move the given causes make: the states they start from and the one state they reach.
   * Causes that lead to different states are a programming error.
   */
  step(...causes: Cause[]): { from: State[]; to: State } {
    const rules = this.rules.filter((r) => causes.includes(r.by));
    const targets = [...new Set(rules.map((r) => r.to))];
    if (rules.length === 0 || targets.length !== 1) throw new Error(`the state table has no single move for ${causes.join(', ')}`);
    return { from: [...new Set(rules.map((r) => r.from))], to: targets[0] };
  }
}

/** SPEC 5's order states: every move an order may make. Anything else is refused. */
export const ORDER_TRANSITIONS = new TransitionTable<OrderStatus, OrderTransitionCause>([
  { from: 'pending', to: 'paid', orderTypes: [BUY_ORDER], by: 'notification' },
  { from: 'pending', to: 'cancelled', orderTypes: [BUY_ORDER], by: 'expiry' },
  { from: 'pending', to: 'cancelled', orderTypes: [BUY_ORDER], by: 'channel_failure' },
  // The money was taken after all: a late success notification counts (the order is flagged).
  { from: 'cancelled', to: 'paid', orderTypes: [BUY_ORDER], by: 'late_notification' },
  { from: 'paid', to: 'confirmed', orderTypes: [BUY_ORDER], by: 'confirmation' },
  { from: 'confirmed', to: 'completed', orderTypes: [BUY_ORDER], by: 'credit' },
]);
