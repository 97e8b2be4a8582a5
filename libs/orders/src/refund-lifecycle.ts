import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { AppConfig, BUY_ORDER, DomainError, ErrorCode, apiMessage, formatYuan } from '@app/common';
import { ChannelAdapters, type Refusal, adapterOffered, type RefundOperations, type RefundRequest, type RefundStatus } from '@app/channels';
import { ChannelRepository, LedgerRepository, type Order, OrderRepository, type Refund, RefundRepository, uniqueViolation } from '@app/db';
import { askOnceThenQuery } from './ask-once-then-query';
import { type Created, createIdempotently, created, repeated } from './idempotent-create';
import { JobsAfterCommit } from './jobs-after-commit';
import { Transitions } from './transitions';
import { newOrderNo } from './order-no';
import { SWEEP_BATCH } from './order-lifecycle';
import { REFUND_TRANSITIONS, type RefundTransitionCause } from './order-transitions';

/** What refundCreate asks for, validated. */
export interface RefundAsk {
  merchantId: number;
  orderNo: string;
  refundFen: number;
  merchantRefundNo: string;
  reason: string | null;
  notifyUrl: string | null;
  requestHash: string;
}

/** The channel has not (yet) settled a refund: thrown so the job retries, querying first. */
export class RefundNotSettledError extends Error {
  constructor(refundNo: string, why: string) {
    super(`refund ${refundNo}: ${why}`);
    this.name = 'RefundNotSettledError';
  }
}

/** Long enough for a call and a query under the channel timeout, with the database work around them. */
export const CHANNEL_LEASE_MS = 60_000;

/**
 * A refund's life beside its order's (SPEC 5). Created processing in one transaction with the
 * order row locked (one decision per order at a time) and the balance debited; the worker then
 * asks the channel once, and after an outcome the channel did not state (a timeout, a 5xx, a
 * system error, an unsigned answer, a crash) it stays processing and queries before it would
 * ever ask again (SPEC 6). Only the provider's documented refusal gives the debit back, in the
 * transaction that records it; both ends are refund.* callbacks of the order.
 */
@Injectable()
export class RefundLifecycle {
  private readonly logger = new Logger(RefundLifecycle.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
    private readonly orders: OrderRepository,
    private readonly refunds: RefundRepository,
    private readonly ledger: LedgerRepository,
    private readonly channels: ChannelRepository,
    private readonly adapters: ChannelAdapters,
    private readonly jobs: JobsAfterCommit,
    private readonly transitions: Transitions,
  ) {}

  /**
   * refundCreate's decision. `repeat`: a refund with this merchant_refund_no and the same
   * parameters already existed (answered before the order is even read). Throws 40900 (a repeat
   * with other parameters), 40400, 40301/40302 (the channel), 40901 (the order's state, a refund
   * in progress), 40000 (over the order's amount), 40902 (balance).
   */
  async create(ask: RefundAsk): Promise<{ refund: Refund; repeat: boolean }> {
    try {
      const { value: refund, repeat } = await createIdempotently({
        findRepeat: () => this.refunds.findByMerchantRefundNo(ask.merchantId, ask.merchantRefundNo),
        create: () => this.createNew(ask),
        merchantNoConstraint: 'uq_refunds_merchant_refund_no',
        ourNoConstraint: 'uq_refunds_refund_no',
        requestFields: { order_no: ask.orderNo, refund_amount: ask.refundFen, reason: ask.reason, notify_url: ask.notifyUrl },
        fieldsOf: (earlier) => ({ order_no: earlier.orderNo, refund_amount: earlier.refundFen, reason: earlier.reason, notify_url: earlier.notifyUrl }),
        conflict: (earlier) => ({ message: apiMessage('refund.conflict'), first: { refund_no: earlier.refundNo } }),
      });
      if (!repeat) await this.jobs.enqueue('refund.process', { refundId: refund.id }, { jobId: `refund-${refund.id}` });
      return { refund, repeat };
    } catch (err) {
      if (uniqueViolation(err) === 'uq_refunds_order_processing') throw new DomainError(ErrorCode.StateConflict, apiMessage('refund.processing'));
      throw err;
    }
  }

  /** One try: the order locked (one decision per order at a time), the refund inserted processing and its amount debited. */
  private async createNew(ask: RefundAsk): Promise<Created<Refund>> {
    const found = await this.orders.findByOrderNo(ask.merchantId, ask.orderNo);
    if (!found) throw new DomainError(ErrorCode.OrderNotFound);
    await this.refundOperations(found);
    return this.dataSource.transaction(async (em) => {
      const order = await this.orders.lockForRefund(em, ask.merchantId, ask.orderNo);
      if (!order) throw new DomainError(ErrorCode.OrderNotFound);
      // A concurrent repeat that committed while this one waited for the lock.
      const earlier = await this.refunds.findByMerchantRefundNo(ask.merchantId, ask.merchantRefundNo, em);
      if (earlier) return repeated(earlier);
      if (order.orderType !== BUY_ORDER || order.status !== 'completed') {
        throw new DomainError(ErrorCode.StateConflict, apiMessage('refund.notRefundable', { status: order.status }));
      }
      if (await this.refunds.hasProcessing(em, order.id)) throw new DomainError(ErrorCode.StateConflict, apiMessage('refund.processing'));
      const left = await this.refundableFen(order, em);
      if (ask.refundFen > left) throw DomainError.invalid('refund_amount', apiMessage('refund_amount.exceeds', { left: formatYuan(left) }));
      const now = new Date();
      const refund = await this.refunds.insert(em, {
        refundNo: newOrderNo(now),
        merchantId: ask.merchantId,
        orderId: order.id,
        orderNo: order.orderNo,
        merchantRefundNo: ask.merchantRefundNo,
        refundFen: ask.refundFen,
        reason: ask.reason,
        notifyUrl: ask.notifyUrl,
        requestHash: ask.requestHash,
        createdAt: now,
      });
      // The fee is not given back: the refund takes exactly refund_amount (40902 when it is not there).
      await this.ledger.debit(em, 'refund_debit', { merchantId: ask.merchantId, orderId: order.id, refundId: refund.id }, ask.refundFen);
      return created(refund);
    });
  }

  /** What refundCreate would still accept for this order: its amount less every refund not failed. The portal shows it. */
  async refundableFen(order: Pick<Order, 'id' | 'cnyFen'>, em: EntityManager = this.dataSource.manager): Promise<number> {
    return Math.max(0, order.cnyFen - (await this.refunds.committedFen(em, order.id)));
  }

  /**
   * The 'refund.process' job: one round of talk with the channel about a processing refund,
   * under a lease so no two workers talk about it at once. Throws while it is not settled, so
   * the job retries (querying).
   */
  async process(refundId: string): Promise<void> {
    const refund = await this.refunds.claim(refundId, CHANNEL_LEASE_MS);
    if (!refund) {
      const current = await this.refunds.findById(refundId);
      if (!current || current.status !== 'processing') return;
      throw new RefundNotSettledError(current.refundNo, 'another worker is talking to the channel about it');
    }
    try {
      const order = await this.orders.findById(refund.orderId);
      if (!order) throw new RefundNotSettledError(refund.refundNo, 'its order no longer exists');
      const operations = await this.refundOperations(order);
      const request: RefundRequest = {
        refundNo: refund.refundNo,
        orderNo: order.orderNo,
        channelTradeNo: order.channelTradeNo,
        amountFen: refund.refundFen,
        orderAmountFen: order.cnyFen,
      };
      // An unknown outcome throws (a ChannelError) out of here: the refund stays processing, debited.
      const status = await this.learnOutcome(refund, operations, request);
      if (status.state === 'succeeded') await this.succeeded(refund, order, status.channelRefundNo);
      else if (status.state === 'failed') await this.refused(refund, order, status.refusal, status.channelRefundNo);
      else throw new RefundNotSettledError(refund.refundNo, `the channel answers ${status.state}`);
    } finally {
      await this.refunds.release(refund);
    }
  }

  /** The safety net: a new job for refunds processing untouched for `stuckSeconds` (their job may be lost). */
  async sweep(stuckSeconds: number): Promise<number> {
    const ids = await this.refunds.findStuckIds(stuckSeconds, SWEEP_BATCH);
    return this.jobs.requeueStuck('refund.process', { ids, stuckSeconds }, (id) => ({ payload: { refundId: id }, jobId: `refund-${id}` }));
  }

  /** SPEC 5's "ask the channel once, then query", with the refund's numbers; a refund taken is queried once more at once. */
  private learnOutcome(refund: Refund, operations: RefundOperations, request: RefundRequest): Promise<RefundStatus> {
    return askOnceThenQuery<RefundStatus>(
      {
        logFields: { refund_no: refund.refundNo },
        requestedAt: refund.channelRequestedAt,
        channelNo: refund.channelRefundNo,
        ourNo: refund.refundNo,
        ask: () => this.adapters.call((signal) => operations.refund(request, signal)),
        query: () => this.adapters.call((signal) => operations.queryRefund(request, signal)),
        markRequested: () => this.refunds.markRequested(refund.id),
        markAccepted: (channelRefundNo) => this.refunds.markAccepted(refund.id, channelRefundNo),
        channelNoOf: (status) => status.channelRefundNo,
        processing: (channelRefundNo) => ({ state: 'processing', channelRefundNo }),
        confirmWhenTaken: true,
      },
      this.logger,
    );
  }

  /** processing -> succeeded with refund.succeeded: the money went back to the payer, the debit stands. */
  private succeeded(refund: Refund, order: Order, channelRefundNo: string | null): Promise<void> {
    return this.settle(refund, order, 'channel_success', { channelRefundNo, failure: null }, async () => undefined);
  }

  /**
   * processing -> failed with refund.failed and the debit given back, in one transaction. The one
   * place a refund's debit is reversed, and it takes the provider's documented refusal: an unknown
   * outcome has no Refusal to give (SPEC 6).
   */
  private refused(refund: Refund, order: Order, refusal: Refusal, channelRefundNo: string | null): Promise<void> {
    return this.settle(refund, order, 'channel_failure', { channelRefundNo, failure: refusal.failure }, (em) =>
      this.ledger.reverse(em, 'refund_debit', 'refund_reversal', { merchantId: refund.merchantId, orderId: refund.orderId, refundId: refund.id }),
    );
  }

  /** One settlement: the transition, what goes with it and the event in one transaction, then the delivery. */
  private async settle(
    refund: Refund,
    order: Order,
    cause: RefundTransitionCause,
    changes: { channelRefundNo: string | null; failure: string | null },
    alongside: (em: EntityManager) => Promise<unknown>,
  ): Promise<void> {
    const type = cause === 'channel_success' ? 'refund.succeeded' : 'refund.failed';
    const settled = await this.transitions.refund(refund, order, REFUND_TRANSITIONS.step(cause), type, changes, async (em) => {
      await alongside(em);
    });
    if (settled) this.logger.log({ refund_no: refund.refundNo, order_no: order.orderNo, event: type, failure: changes.failure ?? undefined }, 'refund settled');
  }

  /** The refund calls of the order's channel: 40301 when the channel is gone or switched off, 40302 when its protocol has none. */
  private async refundOperations(order: Order): Promise<RefundOperations> {
    const channel = await this.channels.findById(order.channelId);
    if (!channel || !adapterOffered(channel.adapter, this.config.sandboxEnabled)) throw new DomainError(ErrorCode.ChannelUnavailable);
    const operations = this.adapters.forChannel(channel).refunds;
    if (!operations) throw new DomainError(ErrorCode.PayMethodUnavailable, apiMessage('refund.channelNoRefunds'));
    return operations;
  }
}
