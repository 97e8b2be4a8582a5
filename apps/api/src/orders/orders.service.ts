import { Injectable } from '@nestjs/common';
import {
  AppConfig,
  BUY_ORDER,
  DomainError,
  ErrorCode,
  computeOrderAmounts,
  formatRate,
  formatYuan,
  merchantAmount,
  parseYuan,
  storedRateE8,
  unixSeconds,
  apiMessage,
  orderCreateSpan,
} from '@app/common';
import { ChannelRepository, type Merchant, type Order, type OrderListFilter, OrderRepository, type OrderStatus } from '@app/db';
import { OrderLifecycle, createIdempotently, created, newOrderNo, requestHash } from '@app/orders';
import { MetricsService } from '../metrics/metrics.service';
import type { CreateOrderDto } from './dto/create-order.dto';
import type { OrderKey } from './dto/order-query-detail.dto';
import type { OrderQueryListDto } from './dto/order-query-list.dto';
import { assertNotifyUrlAllowed } from '../http/notify-url-allowed';
import { ChannelLinkCache } from './channel-link-cache';
import { channelNotLinked } from '../channels/channel-not-linked';
import { assertChannelAmountRange } from '../channels/channel-amount-range';

/** createOrder's answer: the interface's fields, plus merchant_order_no. */
export interface CreatedOrderView {
  order_no: string;
  merchant_order_no: string | null;
  status: OrderStatus;
  order_type: number;
  cny_amount: string;
  payment_method: string | null;
  merchant_amount: string;
  deposit_amount: number;
  service_amount: number;
  merchant_actual_amount: number;
  createtime: number;
  pay_url: string | null;
  /** Unix seconds after which the order cannot be paid (SPEC 5); null for a sell order, which does not expire. */
  expires_at: number | null;
}

/** An order as orderQueryList and orderQueryDetail show it: the interface's fields, plus merchant_order_no (SPEC 5, additive). */
export interface OrderView {
  order_no: string;
  merchant_order_no: string | null;
  order_type: number;
  cny_amount: string;
  merchant_actual_amount: number;
  service_rate: string;
  service_amount: number;
  status: OrderStatus;
  createtime: number;
  updatetime: number;
}

export function toCreatedView(o: Order): CreatedOrderView {
  return {
    order_no: o.orderNo,
    merchant_order_no: o.merchantOrderNo,
    status: o.status,
    order_type: o.orderType,
    cny_amount: formatYuan(o.cnyFen),
    payment_method: o.paymentMethod,
    merchant_amount: merchantAmount(o),
    deposit_amount: o.depositFen,
    service_amount: o.serviceFen,
    merchant_actual_amount: o.merchantActualFen,
    createtime: unixSeconds(o.createdAt),
    pay_url: o.payUrl,
    expires_at: o.orderType === BUY_ORDER ? unixSeconds(o.expiresAt) : null,
  };
}

export function toView(o: Order): OrderView {
  return {
    order_no: o.orderNo,
    merchant_order_no: o.merchantOrderNo,
    order_type: o.orderType,
    cny_amount: formatYuan(o.cnyFen),
    merchant_actual_amount: o.merchantActualFen,
    service_rate: formatRate(storedRateE8(o.serviceRate, `order ${o.orderNo}`)),
    service_amount: o.serviceFen,
    status: o.status,
    createtime: unixSeconds(o.createdAt),
    updatetime: unixSeconds(o.updatedAt),
  };
}

/** An order's fields as createOrder and createSellOrder name them, for comparing a repeat of its merchant_order_no (SPEC 5). */
export function orderFields(o: Order): Record<string, unknown> {
  return {
    order_type: o.orderType,
    cny_amount: o.cnyFen,
    paychannel_id: o.channelId,
    paychannel_paymethod: o.paymentMethod,
    customer_name: o.customerName,
    notify_url: o.notifyUrl,
    // What the order was made with, as effective: a subject left out is its default (orders made before subjects existed too).
    subject: o.subject ?? defaultSubject(o.merchantOrderNo, o.orderNo),
    return_url: o.returnUrl,
  };
}

/** SPEC 5: a subject left out is "Order {merchant_order_no or order_no}". */
export function defaultSubject(merchantOrderNo: string | null, orderNo: string): string {
  return `Order ${merchantOrderNo ?? orderNo}`;
}

/** orderQueryList's filters as the repository takes them (SPEC 5). */
function listFilter(params: OrderQueryListDto): Pick<OrderListFilter, 'status' | 'orderType' | 'startTime' | 'endTime'> {
  if (params.start_time !== undefined && params.end_time !== undefined && params.start_time > params.end_time) {
    throw DomainError.invalid('start_time', apiMessage('start_time.afterEnd'));
  }
  return { status: params.status, orderType: params.order_type, startTime: params.start_time, endTime: params.end_time };
}

@Injectable()
export class OrdersService {
  constructor(
    private readonly orders: OrderRepository,
    private readonly channelLinks: ChannelLinkCache,
    private readonly lifecycle: OrderLifecycle,
    private readonly metrics: MetricsService,
    private readonly config: AppConfig,
    private readonly channels: ChannelRepository,
  ) {}

  /** SPEC 5 createOrder; `repeat` tells a merchant_order_no repeat from a new order. */
  async create(merchant: Merchant, params: CreateOrderDto): Promise<{ order: CreatedOrderView; repeat: boolean }> {
    assertNotifyUrlAllowed(params.notify_url, this.config);
    const cnyFen = parseYuan(params.cny_amount) as number;
    const hash = requestHash({
      order_type: params.order_type,
      cny_fen: cnyFen,
      paychannel_id: params.paychannel_id,
      paychannel_paymethod: params.paychannel_paymethod,
      customer_name: params.customer_name ?? null,
      notify_url: params.notify_url ?? null,
      // Only when given: a repeat of an order made before these existed hashes as it did then.
      ...(params.subject === undefined ? {} : { subject: params.subject }),
      ...(params.return_url === undefined ? {} : { return_url: params.return_url }),
    });
    const merchantOrderNo = params.merchant_order_no ?? null;
    const { value: order, repeat } = await createIdempotently({
      // SPEC 5: a repeat is answered from the first order, even if its channel was disabled since.
      findRepeat: async () => (merchantOrderNo ? this.orders.findByMerchantOrderNo(merchant.id, merchantOrderNo) : null),
      create: async () => created(await this.createNew(merchant, params, cnyFen, hash)),
      merchantNoConstraint: 'uq_orders_merchant_order_no',
      ourNoConstraint: 'uq_orders_order_no',
      requestFields: {
        order_type: params.order_type,
        cny_amount: cnyFen,
        paychannel_id: params.paychannel_id,
        paychannel_paymethod: params.paychannel_paymethod,
        customer_name: params.customer_name ?? null,
        notify_url: params.notify_url ?? null,
        // A repeat always names merchant_order_no, which the default subject is made of.
        subject: params.subject ?? defaultSubject(merchantOrderNo, ''),
        return_url: params.return_url ?? null,
      },
      fieldsOf: orderFields,
      conflict: (earlier) => ({ message: apiMessage('order.conflict'), first: { order_no: earlier.orderNo } }),
    });
    if (!repeat) this.metrics.ordersCreated.inc();
    return { order: toCreatedView(order), repeat };
  }

  private async createNew(merchant: Merchant, params: CreateOrderDto, cnyFen: number, hash: string): Promise<Order> {
    // SPEC 5: a channel of the other mode is not there for this merchant, whatever links exist.
    // From this process's cache, which a change to the channel or the link empties (ChannelLinkCache).
    const linked = await this.channelLinks.find(merchant, params.paychannel_id);
    if (!linked) throw await channelNotLinked(this.channels, merchant, params.paychannel_id, this.config.sandboxEnabled);
    const { channel } = linked;
    if (!channel.payMethod.split(',').includes(params.paychannel_paymethod)) throw new DomainError(ErrorCode.PayMethodUnavailable);
    assertChannelAmountRange(channel, cnyFen);

    const serviceRateE8 = storedRateE8(linked.serviceRate, `merchant ${merchant.id} channel ${channel.id}`);
    const depositRateE8 = storedRateE8(merchant.depositRate, `merchant ${merchant.id}`);
    const amounts = computeOrderAmounts(cnyFen, serviceRateE8, depositRateE8);
    const now = new Date();
    const orderNo = newOrderNo(now);
    // The root of this order's trace (issue 40 item 6): nothing when traces are off.
    const { order, channelFailed } = await orderCreateSpan(orderNo, () =>
      this.lifecycle.create(
        {
          orderNo,
          merchantId: merchant.id,
          channelId: channel.id,
          orderType: BUY_ORDER,
          paymentMethod: params.paychannel_paymethod,
          cnyFen,
          serviceRate: formatRate(serviceRateE8),
          serviceFen: amounts.serviceFen,
          depositRate: formatRate(depositRateE8),
          depositFen: amounts.depositFen,
          merchantActualFen: amounts.merchantActualFen,
          merchantOrderNo: params.merchant_order_no ?? null,
          notifyUrl: params.notify_url ?? null,
          customerName: params.customer_name ?? null,
          subject: params.subject ?? defaultSubject(params.merchant_order_no ?? null, orderNo),
          returnUrl: params.return_url ?? null,
          requestHash: hash,
          expiresAt: new Date(now.getTime() + this.lifecycle.expireSeconds * 1000),
          createdAt: now,
        },
        channel,
      ),
    );
    if (channelFailed) throw new DomainError(ErrorCode.ChannelFailed, apiMessage('order.channelFailed'), { order_no: order.orderNo });
    return order;
  }

  async list(merchantId: number, params: OrderQueryListDto): Promise<{ list: OrderView[]; total: number; page: number; limit: number }> {
    const page = params.page ?? 1;
    const limit = params.limit ?? 20;
    const { rows, total } = await this.orders.list(merchantId, { ...listFilter(params), page, limit });
    return { list: rows.map(toView), total, page, limit };
  }

  /** The whole filtered list, newest first, in batches read by keyset (the portal's CSV export); page and limit are ignored. */
  async *exportList(merchantId: number, params: OrderQueryListDto, batchSize = 500): AsyncGenerator<OrderView[]> {
    const filter = { ...listFilter(params), limit: batchSize };
    let after: Order | null = null;
    for (;;) {
      const rows: Order[] = await this.orders.listBatch(merchantId, filter, after);
      if (rows.length > 0) yield rows.map(toView);
      if (rows.length < batchSize) return;
      after = rows[rows.length - 1];
    }
  }

  async detail(merchantId: number, key: OrderKey): Promise<OrderView> {
    const order =
      'orderNo' in key ? await this.orders.findByOrderNo(merchantId, key.orderNo) : await this.orders.findByMerchantOrderNo(merchantId, key.merchantOrderNo);
    if (!order) throw new DomainError(ErrorCode.OrderNotFound);
    return toView(order);
  }

  /**
   * orderClose (SPEC 5): pending -> cancelled by the merchant; `closed` false when the order was
   * cancelled already (by a close, expiry or the channel), which answers like a close.
   */
  async close(merchantId: number, orderNo: string): Promise<{ order: OrderView; closed: boolean }> {
    const order = await this.orders.findByOrderNo(merchantId, orderNo);
    if (!order) throw new DomainError(ErrorCode.OrderNotFound);
    if (order.status === 'cancelled') return { order: toView(order), closed: false };
    const closed = await this.lifecycle.close(order.id);
    if (closed) return { order: toView(closed), closed: true };
    // Not pending any more: something else moved it meanwhile, or it is not an order one can close.
    const now = (await this.orders.findByOrderNo(merchantId, orderNo)) ?? order;
    if (now.status === 'cancelled') return { order: toView(now), closed: false };
    if (now.orderType !== BUY_ORDER) throw new DomainError(ErrorCode.StateConflict, apiMessage('order.sellNotClosable'));
    throw new DomainError(ErrorCode.StateConflict, apiMessage('order.notClosable', { status: now.status }));
  }
}
