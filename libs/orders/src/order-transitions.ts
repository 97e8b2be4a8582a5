import { BUY_ORDER, SELL_ORDER } from '@app/common';
import type { Move, OrderStatus, RefundStatus } from '@app/db';

/** One row of a state table: `by` names what causes the move, `orderTypes` the kinds of order it applies to. */
export interface TransitionRule<State extends string, Cause extends string> {
  from: State;
  to: State;
  orderTypes: readonly number[];
  by: Cause;
}

/** What moves an order, SPEC 5's "by" column. */
export type OrderTransitionCause =
  | 'notification'
  | 'late_notification'
  | 'expiry'
  | 'channel_failure'
  | 'confirmation'
  | 'credit'
  | 'close'
  | 'channel_closed'
  | 'payout'
  | 'payout_refused'
  | 'payout_confirmation';

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

  /**
   * Like step, but keeping which order types each cause applies to: the (from, order type) pairs
   * a conditional update may match, so a cause never moves a kind of order it has no row for.
   */
  move(...causes: Cause[]): Move<State> {
    const { from, to } = this.step(...causes);
    const pairs = this.rules.filter((r) => causes.includes(r.by)).flatMap((r) => r.orderTypes.map((orderType) => ({ from: r.from, orderType })));
    return { from, to, pairs };
  }

  /**
   * The move from the given states to `to`, whatever its cause, for every order type the table
   * allows it (a test's or an operator's step); a state the table has no such row for throws.
   */
  between(from: State | State[], to: State): Move<State> {
    const states = Array.isArray(from) ? from : [from];
    const refused = states.filter((state) => this.orderTypes(state, to).length === 0);
    if (refused.length > 0 || states.length === 0) throw new Error(`${refused.join('|') || '(no state)'} -> ${to} is not a transition of the state table`);
    return { from: states, to, pairs: states.flatMap((state) => this.orderTypes(state, to).map((orderType) => ({ from: state, orderType }))) };
  }
}

/** SPEC 5's order states: every move an order may make. Anything else is refused. */
export const ORDER_TRANSITIONS = new TransitionTable<OrderStatus, OrderTransitionCause>([
  { from: 'pending', to: 'paid', orderTypes: [BUY_ORDER], by: 'notification' },
  { from: 'pending', to: 'cancelled', orderTypes: [BUY_ORDER], by: 'expiry' },
  // The channel could not open the payment at creation (50200). A failed payment attempt is no move (SPEC 5).
  { from: 'pending', to: 'cancelled', orderTypes: [BUY_ORDER], by: 'channel_failure' },
  // The money was taken after all: a late success notification counts (the order is flagged).
  { from: 'cancelled', to: 'paid', orderTypes: [BUY_ORDER], by: 'late_notification' },
  // The channel's re-query answers paid; or, where paid came from the provider's final word, that word itself.
  { from: 'paid', to: 'confirmed', orderTypes: [BUY_ORDER], by: 'confirmation' },
  { from: 'confirmed', to: 'completed', orderTypes: [BUY_ORDER], by: 'credit' },
  // The merchant closes an unpaid top-up (orderClose); a late success still counts, as after expiry.
  { from: 'pending', to: 'cancelled', orderTypes: [BUY_ORDER], by: 'close' },
  // The channel reports the unpaid trade closed (alipay TRADE_CLOSED); a late success still counts.
  { from: 'pending', to: 'cancelled', orderTypes: [BUY_ORDER], by: 'channel_closed' },
  // Sell orders: debited at creation, so a refusal reverses the debit in the same transaction.
  { from: 'pending', to: 'paid', orderTypes: [SELL_ORDER], by: 'payout' },
  { from: 'pending', to: 'cancelled', orderTypes: [SELL_ORDER], by: 'payout_refused' },
  { from: 'paid', to: 'completed', orderTypes: [SELL_ORDER], by: 'payout_confirmation' },
]);

/** What settles a refund: the channel's answer. */
export type RefundTransitionCause = 'channel_success' | 'channel_failure';

/** A refund's life beside its order's (SPEC 5): created processing (debited), then the channel's answer. */
export const REFUND_TRANSITIONS = new TransitionTable<RefundStatus, RefundTransitionCause>([
  { from: 'processing', to: 'succeeded', orderTypes: [BUY_ORDER], by: 'channel_success' },
  // The debit taken at creation is given back in the same transaction.
  { from: 'processing', to: 'failed', orderTypes: [BUY_ORDER], by: 'channel_failure' },
]);
