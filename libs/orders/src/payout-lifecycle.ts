import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { SELL_ORDER, SecretBox, maskBankCard } from '@app/common';
import { ChannelAdapters, type PayoutOperations, type PayoutRequest, type PayoutStatus, type Refusal } from '@app/channels';
import { ChannelRepository, LedgerRepository, type NewOrder, type Order, OrderRepository, type Payout, PayoutRepository } from '@app/db';
import { askOnceThenQuery } from './ask-once-then-query';
import { JobsAfterCommit } from './jobs-after-commit';
import { Transitions } from './transitions';
import { SWEEP_BATCH } from './order-lifecycle';
import { CHANNEL_LEASE_MS } from './refund-lifecycle';
import { ORDER_TRANSITIONS } from './order-transitions';

/** The payee of a payout, as the merchant gave it (the account in clear: never log it). */
export interface Payee {
  name: string;
  account: string;
  bank: string;
}

/** The channel has not (yet) settled a payout: thrown so the job retries, querying first. */
export class PayoutNotSettledError extends Error {
  constructor(orderNo: string, why: string) {
    super(`sell order ${orderNo}: ${why}`);
    this.name = 'PayoutNotSettledError';
  }
}

/** A channel whose protocol has no payouts was never asked: nothing can have left, so the debit goes back. */
const NOT_OFFERED: Refusal = {
  code: 'PAYOUTS_NOT_OFFERED',
  failure: 'the channel does not pay out',
  document: "this service's channel adapter: its protocol has no payout call, so the channel was never asked",
};

/** A payout does not expire: only the channel's answer ends it (the expiry sweeps never see it). */
export const PAYOUT_EXPIRES_AT = new Date('9999-12-31T00:00:00Z');

/**
 * The SecretBox context of a payee account: a ciphertext opens only on its own order. The text is
 * bound into every stored ciphertext: it keeps the API's word ("sell order"), never renamed.
 */
export function payeeAccountContext(orderNo: string): string {
  return `sell-order:${orderNo}:payee_account`;
}

// The moves of a payout, by cause, restricted to order_type 2 by the table's rows.
const PAY_OUT = ORDER_TRANSITIONS.move('payout');
const REFUSE = ORDER_TRANSITIONS.move('payout_refused');
const SETTLE = ORDER_TRANSITIONS.move('payout_confirmation');

/**
 * Payouts (order_type 2, the API's sell orders): the merchant's balance pays its customer. The order, its payee
 * and the debit of cny + service are one transaction, so an order exists only with its money
 * taken. The worker asks the channel once, queries after an outcome it could not learn, and
 * moves pending -> paid -> completed, or pending -> cancelled with the debit reversed in the
 * same transaction. Events are the buy orders' (order.paid, order.completed, order.cancelled).
 */
@Injectable()
export class PayoutLifecycle {
  private readonly logger = new Logger(PayoutLifecycle.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly orders: OrderRepository,
    private readonly payouts: PayoutRepository,
    private readonly ledger: LedgerRepository,
    private readonly channels: ChannelRepository,
    private readonly adapters: ChannelAdapters,
    private readonly jobs: JobsAfterCommit,
    private readonly transitions: Transitions,
  ) {}

  /**
   * Inserts the pending payout order with its sealed payee and debits merchant_actual (cny +
   * service) in one transaction: 40902 leaves nothing behind. A unique violation (order_no,
   * merchant_order_no) is thrown to the caller.
   */
  async create(values: NewOrder, payee: Payee): Promise<{ order: Order; payout: Payout }> {
    const created = await this.dataSource.transaction(async (em) => {
      const order = await this.orders.insert(em, values);
      const payout = await this.payouts.insert(em, {
        orderId: order.id,
        payeeName: payee.name,
        payeeAccountEnc: this.secrets.seal(payee.account, payeeAccountContext(order.orderNo)),
        payeeAccountMasked: maskBankCard(payee.account),
        payeeBank: payee.bank,
      });
      await this.ledger.debit(em, 'sell_debit', { merchantId: order.merchantId, orderId: order.id }, order.merchantActualFen);
      return { order, payout };
    });
    await this.jobs.enqueue('order.payout', { orderId: created.order.id }, { jobId: `payout-${created.order.id}` });
    return created;
  }

  /**
   * The 'order.payout' job: one round of talk with the channel about a pending or paid sell
   * order, under a lease. Throws while the channel has not settled it, so the job retries.
   */
  async payout(orderId: string): Promise<void> {
    const order = await this.orders.findById(orderId);
    if (!order || order.orderType !== SELL_ORDER || (order.status !== 'pending' && order.status !== 'paid')) return;
    const payout = await this.payouts.claim(orderId, CHANNEL_LEASE_MS);
    if (!payout) {
      if ((await this.payouts.findByOrderId(orderId))?.settledAt) return;
      throw new PayoutNotSettledError(order.orderNo, 'another worker is talking to the channel about it');
    }
    try {
      const channel = await this.channels.findById(order.channelId);
      if (!channel) throw new PayoutNotSettledError(order.orderNo, 'its channel no longer exists');
      const operations = this.adapters.forChannel(channel).payouts;
      if (!operations) {
        await this.refused(order, NOT_OFFERED);
        return;
      }
      const request: PayoutRequest = {
        orderNo: order.orderNo,
        amountFen: order.cnyFen,
        payeeName: payout.payeeName,
        payeeAccount: this.secrets.open(payout.payeeAccountEnc, payeeAccountContext(order.orderNo)),
        payeeBank: payout.payeeBank,
      };
      let current = order;
      if (current.status === 'pending') {
        // An unknown outcome throws (a ChannelError) out of here: the order stays pending, debited.
        const status = await this.learnOutcome(order, payout, operations, request);
        if (status.state === 'refused') {
          await this.refused(order, status.refusal);
          return;
        }
        if (status.state !== 'paid') throw new PayoutNotSettledError(order.orderNo, `the channel answers ${status.state}`);
        current = (await this.paidOut(order, status)) ?? (await this.orders.findById(orderId)) ?? order;
      }
      if (current.status === 'paid') {
        const confirmed = await this.adapters.call((signal) => operations.queryPayout(request, signal));
        if (confirmed.state !== 'paid') {
          if (confirmed.state === 'refused')
            this.logger.error({ order_no: order.orderNo }, 'payout paid out, then the channel reports it refused; left paid for the operator');
          throw new PayoutNotSettledError(order.orderNo, `paid out, the channel's query answers ${confirmed.state}`);
        }
        await this.complete(current);
      }
    } finally {
      await this.payouts.release(payout);
    }
  }

  /** The safety net: a new job for open payouts untouched for `stuckSeconds` (their job may be lost). */
  async sweep(stuckSeconds: number): Promise<number> {
    const ids = await this.payouts.findStuckOrderIds(stuckSeconds, SWEEP_BATCH);
    return this.jobs.requeueStuck('order.payout', { ids, stuckSeconds }, (id) => ({ payload: { orderId: id }, jobId: `payout-${id}` }));
  }

  /** SPEC 5's "ask the channel once, then query", as for refunds, with the payout's numbers. */
  private learnOutcome(order: Order, payout: Payout, operations: PayoutOperations, request: PayoutRequest): Promise<PayoutStatus> {
    return askOnceThenQuery<PayoutStatus>(
      {
        logFields: { order_no: order.orderNo },
        requestedAt: payout.channelRequestedAt,
        channelNo: payout.channelPayoutNo,
        ourNo: order.orderNo,
        ask: () => this.adapters.call((signal) => operations.payout(request, signal)),
        query: () => this.adapters.call((signal) => operations.queryPayout(request, signal)),
        markRequested: () => this.payouts.markRequested(order.id),
        markAccepted: (channelPayoutNo) => this.payouts.markAccepted(order.id, channelPayoutNo),
        channelNoOf: (status) => status.channelPayoutNo,
        processing: (channelPayoutNo) => ({ state: 'processing', channelPayoutNo }),
        // A paid payout is queried again before it completes: no second query here.
        confirmWhenTaken: false,
      },
      this.logger,
    );
  }

  /** pending -> paid (order.paid): the channel paid the payee. */
  private paidOut(order: Order, status: PayoutStatus): Promise<Order | null> {
    return this.transitions.order(order, PAY_OUT, [{ type: 'order.paid' }], { changes: { paid: true, channelTradeNo: status.channelPayoutNo } });
  }

  /** paid -> completed (order.completed): the channel confirms the payout is final. */
  private async complete(order: Order): Promise<void> {
    await this.transitions.order(order, SETTLE, [{ type: 'order.completed' }], {
      alongside: async (em, moved) => {
        await this.payouts.settle(em, moved.id);
      },
    });
  }

  /**
   * pending -> cancelled (order.cancelled, reason refused) with the debit given back, in one
   * transaction. The one place a payout's debit is reversed, and it takes a documented refusal:
   * an unknown outcome has no Refusal to give (SPEC 6).
   */
  private async refused(order: Order, refusal: Refusal): Promise<void> {
    const cancelled = await this.transitions.order(order, REFUSE, [{ type: 'order.cancelled', reason: 'refused' }], {
      alongside: async (em, moved) => {
        await this.ledger.reverse(em, 'sell_debit', 'sell_reversal', { merchantId: moved.merchantId, orderId: moved.id });
        await this.payouts.settle(em, moved.id, refusal.failure);
      },
    });
    if (cancelled) this.logger.log({ order_no: order.orderNo, failure: refusal.failure, refusal_code: refusal.code }, 'payout refused; debit reversed');
  }
}
