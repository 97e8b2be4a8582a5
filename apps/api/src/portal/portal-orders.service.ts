import { Injectable } from '@nestjs/common';
import { BUY_ORDER, type CsvCell, DomainError, ErrorCode, SELL_ORDER, csvHeader, csvIdentifier, csvNumber, csvRow, csvText, formatYuan } from '@app/common';
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
import { RefundLifecycle, type RefundView } from '@app/orders';
import { RefundCreateDto } from '../refunds/dto/refund-create.dto';
import { RefundsService } from '../refunds/refunds.service';
import { OrderQueryListDto } from '../orders/dto/order-query-list.dto';
import { type OrderView, OrdersService, toView } from '../orders/orders.service';
import { createValidationPipe } from '../http/validation';
import type { MessageKey } from './i18n/en';
import type { Translate } from './i18n/i18n';
import { formatShanghai, shanghaiDayStart } from './shanghai-time';

export const ORDERS_PAGE_SIZE = 20;

/** The orders page's filter form as the person typed it; `q` an order_no or merchant_order_no to find. */
export interface OrderFilterForm {
  q: string;
  status: string;
  order_type: string;
  from: string;
  to: string;
}

/** The list's filters, validated: orderQueryList's, and the number searched for (null: none). */
export interface OrderFilters {
  params: OrderQueryListDto;
  search: string | null;
}

export type FilterResult = ({ ok: true; form: OrderFilterForm } & OrderFilters) | { ok: false; form: OrderFilterForm; fields: MessageKey[] };

/** An order_no (digits) or a merchant_order_no: what the search box takes. */
const SEARCHABLE = /^[A-Za-z0-9_-]{1,64}$/;

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

/** Whether an order the search found passes the list's other filters too (what the list's query would have said). */
function passes(o: OrderView, params: OrderQueryListDto): boolean {
  return (
    (params.status === undefined || o.status === params.status) &&
    (params.order_type === undefined || o.order_type === params.order_type) &&
    (params.start_time === undefined || o.createtime >= params.start_time) &&
    (params.end_time === undefined || o.createtime <= params.end_time)
  );
}

/** The orders CSV's columns (SPEC 6): headers in the page's language, amounts in yuan and saying so, numbers as text. */
function csvColumns(t: Translate): { header: string; cell: (o: OrderView) => CsvCell }[] {
  return [
    { header: t('orders.csv.orderNo'), cell: (o) => csvIdentifier(o.order_no) },
    { header: t('orders.csv.merchantOrderNo'), cell: (o) => csvIdentifier(o.merchant_order_no) },
    { header: t('orders.csv.type'), cell: (o) => csvText(t(`type.${o.order_type}` as MessageKey)) },
    { header: t('orders.csv.status'), cell: (o) => csvText(t(`status.${o.status}`)) },
    { header: t('orders.csv.amount'), cell: (o) => csvNumber(o.cny_amount) },
    { header: t('orders.csv.serviceRate'), cell: (o) => csvNumber(o.service_rate) },
    { header: t('orders.csv.fee'), cell: (o) => csvNumber(formatYuan(o.service_amount)) },
    // As the list shows it: what the order brings to the balance, a payout's amount and fee as a negative.
    { header: t('orders.csv.net'), cell: (o) => csvNumber(formatYuan(o.order_type === SELL_ORDER ? -o.merchant_actual_amount : o.merchant_actual_amount)) },
    { header: t('orders.csv.created'), cell: (o) => csvText(formatShanghai(o.createtime)) },
    { header: t('orders.csv.updated'), cell: (o) => csvText(formatShanghai(o.updatetime)) },
  ];
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
    private readonly refundsService: RefundsService,
  ) {}

  /** The query string into orderQueryList's parameters, validated by its own DTO; dates are Asia/Shanghai days. */
  async filters(query: Record<string, unknown>): Promise<FilterResult> {
    const text = (name: string): string => (typeof query[name] === 'string' ? (query[name] as string).trim() : '');
    const form: OrderFilterForm = { q: text('q'), status: text('status'), order_type: text('order_type'), from: text('from'), to: text('to') };
    const bad = new Set<MessageKey>();
    if (form.q && !SEARCHABLE.test(form.q)) bad.add('orders.search');
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
    return params && bad.size === 0 ? { ok: true, form, params, search: form.q || null } : { ok: false, form, fields: [...bad] };
  }

  /** A page of the list; with a search, the order whose order_no or merchant_order_no it is (at most one of each), if it passes the filters. */
  async list(merchantId: number, { params, search }: OrderFilters): ReturnType<OrdersService['list']> {
    if (search === null) return this.ordersService.list(merchantId, params);
    const list = await this.found(merchantId, search, params);
    return { list, total: list.length, page: 1, limit: params.limit ?? ORDERS_PAGE_SIZE };
  }

  /** The filtered list as CSV for a spreadsheet (SPEC 6), produced batch by batch. */
  async *csv(merchantId: number, { params, search }: OrderFilters, t: Translate): AsyncGenerator<string> {
    const columns = csvColumns(t);
    yield csvHeader(columns.map((c) => c.header));
    const batches = search === null ? this.ordersService.exportList(merchantId, params) : [await this.found(merchantId, search, params)];
    for await (const batch of batches) yield batch.map((o) => csvRow(columns.map((c) => c.cell(o)))).join('');
  }

  /** The orders a search names: by our number and by the merchant's own, newest first, each once. */
  private async found(merchantId: number, search: string, params: OrderQueryListDto): Promise<OrderView[]> {
    const [byOrderNo, byMerchantNo] = await Promise.all([
      /^\d{1,32}$/.test(search) ? this.orders.findByOrderNo(merchantId, search) : null,
      this.orders.findByMerchantOrderNo(merchantId, search),
    ]);
    const orders = [byOrderNo, byMerchantNo].filter((o): o is Order => o !== null);
    const unique = orders.filter((o, i) => orders.findIndex((other) => other.id === o.id) === i);
    return unique
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
      .map(toView)
      .filter((o) => passes(o, params));
  }

  /**
   * The order page's Refund: refundCreate's own rules and code (RefundsService), the amount and
   * reason as typed, and the merchant_refund_no the form was rendered with, so a form sent twice
   * makes one refund.
   */
  async refund(merchantId: number, orderNo: string, form: { amount: string; reason: string; merchantRefundNo: string }): Promise<RefundView> {
    const params = (await this.validation.transform(
      { order_no: orderNo, refund_amount: form.amount, merchant_refund_no: form.merchantRefundNo, reason: form.reason || undefined },
      { type: 'body', metatype: RefundCreateDto },
    )) as RefundCreateDto;
    return (await this.refundsService.create(merchantId, params)).refund;
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
