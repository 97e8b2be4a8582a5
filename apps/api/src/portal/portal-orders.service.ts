import { Injectable } from '@nestjs/common';
import { BUY_ORDER, DomainError, ErrorCode, SELL_ORDER } from '@app/common';
import {
  CallbackDeliveryRepository,
  ChannelRepository,
  type DeliveryWithAttempts,
  type Order,
  type OrderEventSummary,
  OrderEventRepository,
  OrderRepository,
  type Payout,
  PayoutRepository,
  type Refund,
  RefundRepository,
  type RefundStatus,
} from '@app/db';
import { merchantFacingError } from '@app/callbacks';
import { RefundLifecycle } from '@app/orders';
import { OrderQueryListDto } from '../orders/dto/order-query-list.dto';
import { type OrderView, OrdersService } from '../orders/orders.service';
import { createValidationPipe } from '../http/validation';
import type { MessageKey } from './i18n/en';
import { formatShanghai, shanghaiDayStart } from './shanghai-time';

export const ORDERS_PAGE_SIZE = 20;

/** The orders page's filter form as the person typed it. */
export interface OrderFilterForm {
  status: string;
  order_type: string;
  from: string;
  to: string;
}

export type FilterResult = { ok: true; form: OrderFilterForm; params: OrderQueryListDto } | { ok: false; form: OrderFilterForm; fields: MessageKey[] };

/** A refund as the order page shows it. */
export interface PortalRefund {
  refundNo: string;
  merchantRefundNo: string;
  refundFen: number;
  status: RefundStatus;
  reason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A buy order's refunds and what they add up to; `refundableFen` is what refundCreate would still accept (the refund lifecycle's figure). */
export interface RefundSummary {
  list: PortalRefund[];
  succeededFen: number;
  processingFen: number;
  refundableFen: number;
}

/**
 * A sell order's payee: the account only masked (the sealed one never leaves the repository's
 * row), the payout's state from the order's (pending: with the channel, paid or later: paid
 * out, cancelled: refused and the debit reversed).
 */
export interface PortalPayout {
  payeeName: string;
  payeeBank: string;
  payeeAccountMasked: string;
  state: 'processing' | 'paid_out' | 'refused';
}

export interface OrderDetail {
  order: Order;
  channelName: string | null;
  events: OrderEventSummary[];
  deliveries: DeliveryWithAttempts[];
  /** Buy orders only. */
  refunds: RefundSummary | null;
  /** Sell orders only. */
  payout: PortalPayout | null;
}

export function refundSummary(refunds: Refund[], refundableFen: number): RefundSummary {
  const sum = (status: RefundStatus) => refunds.filter((r) => r.status === status).reduce((n, r) => n + r.refundFen, 0);
  const succeededFen = sum('succeeded');
  const processingFen = sum('processing');
  return {
    list: refunds.map((r) => ({
      refundNo: r.refundNo,
      merchantRefundNo: r.merchantRefundNo,
      refundFen: r.refundFen,
      status: r.status,
      reason: r.reason,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
    })),
    succeededFen,
    processingFen,
    refundableFen,
  };
}

export function portalPayout(order: Pick<Order, 'status'>, payout: Payout): PortalPayout {
  const state = order.status === 'pending' ? 'processing' : order.status === 'cancelled' ? 'refused' : 'paid_out';
  return { payeeName: payout.payeeName, payeeBank: payout.payeeBank, payeeAccountMasked: payout.payeeAccountMasked, state };
}

const FIELD_LABELS: Record<string, MessageKey> = {
  status: 'orders.status',
  order_type: 'orders.type',
  start_time: 'orders.from',
  end_time: 'orders.to',
};

const CSV_COLUMNS = [
  'order_no',
  'order_type',
  'status',
  'cny_amount',
  'service_rate',
  'service_amount',
  'merchant_actual_amount',
  'createtime',
  'updatetime',
] as const;

function csvCell(value: string | number): string {
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A CSV line of orderQueryList's fields, plus the two times as Asia/Shanghai text for people reading it. */
function csvLine(o: OrderView): string {
  return [...CSV_COLUMNS.map((c) => csvCell(o[c])), formatShanghai(o.createtime), formatShanghai(o.updatetime)].join(',') + '\r\n';
}

/** The orders pages: orderQueryList's filters, validation and data, read through the orders service and the repositories. */
@Injectable()
export class PortalOrdersService {
  private readonly validation = createValidationPipe();

  constructor(
    private readonly ordersService: OrdersService,
    private readonly orders: OrderRepository,
    private readonly events: OrderEventRepository,
    private readonly deliveries: CallbackDeliveryRepository,
    private readonly channels: ChannelRepository,
    private readonly refunds: RefundRepository,
    private readonly payouts: PayoutRepository,
    private readonly refundLifecycle: RefundLifecycle,
  ) {}

  /** The query string into orderQueryList's parameters, validated by its own DTO; dates are Asia/Shanghai days. */
  async filters(query: Record<string, unknown>): Promise<FilterResult> {
    const text = (name: string): string => (typeof query[name] === 'string' ? (query[name] as string).trim() : '');
    const form: OrderFilterForm = { status: text('status'), order_type: text('order_type'), from: text('from'), to: text('to') };
    const bad = new Set<MessageKey>();
    const start = form.from ? shanghaiDayStart(form.from) : undefined;
    const end = form.to ? shanghaiDayStart(form.to) : undefined;
    if (start === null) bad.add('orders.from');
    if (end === null) bad.add('orders.to');
    const raw = {
      status: form.status,
      order_type: form.order_type,
      start_time: start ?? undefined,
      end_time: end === null || end === undefined ? undefined : end + 86_399,
      page: text('page') || 1,
      limit: ORDERS_PAGE_SIZE,
    };
    let params: OrderQueryListDto | null = null;
    try {
      params = (await this.validation.transform(raw, { type: 'query', metatype: OrderQueryListDto })) as OrderQueryListDto;
      if (params.start_time !== undefined && params.end_time !== undefined && params.start_time > params.end_time) bad.add('orders.to');
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      for (const e of (err.data?.errors ?? []) as { field: string }[]) bad.add(FIELD_LABELS[e.field] ?? 'orders.filters');
    }
    return params && bad.size === 0 ? { ok: true, form, params } : { ok: false, form, fields: [...bad] };
  }

  list(merchantId: number, params: OrderQueryListDto): ReturnType<OrdersService['list']> {
    return this.ordersService.list(merchantId, params);
  }

  /** The filtered list as CSV text, produced batch by batch. */
  async *csv(merchantId: number, params: OrderQueryListDto): AsyncGenerator<string> {
    yield `${[...CSV_COLUMNS, 'createtime_shanghai', 'updatetime_shanghai'].join(',')}\r\n`;
    for await (const batch of this.ordersService.exportList(merchantId, params)) yield batch.map(csvLine).join('');
  }

  /** One order of this merchant; 40400 for an unknown or another merchant's. */
  async find(merchantId: number, orderNo: string): Promise<Order> {
    const order = /^\d{1,32}$/.test(orderNo) ? await this.orders.findByOrderNo(merchantId, orderNo) : null;
    if (!order) throw new DomainError(ErrorCode.OrderNotFound);
    return order;
  }

  /** One order of this merchant with its events, callbacks, and its refunds (buy) or payee (sell); 40400 for an unknown or another merchant's. */
  async detail(merchantId: number, orderNo: string): Promise<OrderDetail> {
    const order = await this.find(merchantId, orderNo);
    const [channel, events, deliveries, refunds, payout] = await Promise.all([
      this.channels.findById(order.channelId),
      this.events.listForOrder(merchantId, order.id),
      this.deliveries.listForOrder(merchantId, order.id),
      order.orderType === BUY_ORDER ? this.refunds.listForOrder(merchantId, order.id) : null,
      order.orderType === SELL_ORDER ? this.payouts.findForMerchant(merchantId, order.id) : null,
    ]);
    const refundableFen = refunds ? await this.refundLifecycle.refundableFen(order) : 0;
    return {
      order,
      channelName: channel?.name ?? null,
      events,
      // Texts stored before issue 29 may carry our own failure's message: the merchant reads the fixed one.
      deliveries: deliveries.map((d) => ({ ...d, attempts: d.attempts.map((a) => ({ ...a, error: merchantFacingError(a.error) })) })),
      refunds: refunds ? refundSummary(refunds, refundableFen) : null,
      payout: payout ? portalPayout(order, payout) : null,
    };
  }
}
