import { Injectable } from '@nestjs/common';
import { AppConfig, DomainError, ErrorCode, parseYuan, apiMessage } from '@app/common';
import { OrderRepository, RefundRepository } from '@app/db';
import { RefundLifecycle, type RefundView, refundView, requestHash } from '@app/orders';
import type { RefundCreateDto } from './dto/refund-create.dto';
import type { RefundQueryDto } from './dto/refund-query.dto';
import { assertNotifyUrlAllowed } from '../http/notify-url-allowed';

/** SPEC 5's refunds: refundCreate, refundQuery, refundQueryList. */
@Injectable()
export class RefundsService {
  constructor(
    private readonly orders: OrderRepository,
    private readonly refunds: RefundRepository,
    private readonly lifecycle: RefundLifecycle,
    private readonly config: AppConfig,
  ) {}

  /** `repeat` tells a merchant_refund_no repeat (the first refund, as it is now) from a new refund. The portal's Refund button too. */
  async create(merchantId: number, params: RefundCreateDto): Promise<{ refund: RefundView; repeat: boolean }> {
    assertNotifyUrlAllowed(params.notify_url, this.config);
    const refundFen = parseYuan(params.refund_amount) as number;
    // What defines the refund: a repeat of merchant_refund_no must match it exactly.
    const hash = requestHash({ order_no: params.order_no, refund_fen: refundFen, reason: params.reason ?? null, notify_url: params.notify_url ?? null });
    const { refund, repeat } = await this.lifecycle.create({
      merchantId,
      orderNo: params.order_no,
      refundFen,
      merchantRefundNo: params.merchant_refund_no,
      reason: params.reason ?? null,
      notifyUrl: params.notify_url ?? null,
      requestHash: hash,
    });
    return { refund: refundView(refund), repeat };
  }

  /** One refund by refund_no or merchant_refund_no; with both, they must name the same one. */
  async query(merchantId: number, params: RefundQueryDto): Promise<RefundView> {
    if (!params.refund_no && !params.merchant_refund_no) throw DomainError.invalid('refund_no', apiMessage('refundKey.none'));
    const refund = params.refund_no
      ? await this.refunds.findByRefundNo(merchantId, params.refund_no)
      : await this.refunds.findByMerchantRefundNo(merchantId, params.merchant_refund_no!);
    if (!refund || (params.merchant_refund_no && refund.merchantRefundNo !== params.merchant_refund_no)) {
      throw new DomainError(ErrorCode.OrderNotFound, apiMessage('refund.notFound'));
    }
    return refundView(refund);
  }

  /** The order's refunds, newest first; 40400 for an unknown or another merchant's order. */
  async list(merchantId: number, orderNo: string): Promise<{ list: RefundView[]; total: number }> {
    const order = await this.orders.findByOrderNo(merchantId, orderNo);
    if (!order) throw new DomainError(ErrorCode.OrderNotFound);
    const refunds = await this.refunds.listForOrder(merchantId, order.id);
    return { list: refunds.map(refundView), total: refunds.length };
  }
}
