import { Injectable } from '@nestjs/common';
import {
  AppConfig,
  DomainError,
  ErrorCode,
  SELL_ORDER,
  SecretBox,
  computeSellOrderAmounts,
  formatRate,
  parseYuan,
  storedRateE8,
  apiMessage,
} from '@app/common';
import { ChannelAdapters, adaptersForMode } from '@app/channels';
import { ChannelRepository, type Merchant, type Order, OrderRepository, type Payout, PayoutRepository } from '@app/db';
import { PAYOUT_EXPIRES_AT, PayoutLifecycle, createIdempotently, created, newOrderNo, payeeAccountContext, requestHash } from '@app/orders';
import { type CreatedOrderView, orderFields, toCreatedView } from '../orders/orders.service';
import { channelNotLinked } from '../channels/channel-not-linked';
import { assertChannelAmountRange } from '../channels/channel-amount-range';
import type { CreateSellOrderDto } from './dto/create-sell-order.dto';
import { assertNotifyUrlAllowed } from '../http/notify-url-allowed';

/** createSellOrder's answer: createOrder's (order_type 2, pay_url null) plus the payee, its account masked. */
export interface CreatedSellOrderView extends CreatedOrderView {
  payee_name: string;
  payee_bank: string;
  payee_account: string;
}

/** SPEC 5's sell orders: a payout to the merchant's customer, out of the merchant's available balance. */
@Injectable()
export class SellOrdersService {
  constructor(
    private readonly orders: OrderRepository,
    private readonly payouts: PayoutRepository,
    private readonly channels: ChannelRepository,
    private readonly adapters: ChannelAdapters,
    private readonly lifecycle: PayoutLifecycle,
    private readonly secrets: SecretBox,
    private readonly config: AppConfig,
  ) {}

  /** `repeat` tells a merchant_order_no repeat from a new sell order. */
  async create(merchant: Merchant, params: CreateSellOrderDto): Promise<{ order: CreatedSellOrderView; repeat: boolean }> {
    assertNotifyUrlAllowed(params.notify_url, this.config);
    const cnyFen = parseYuan(params.cny_amount) as number;
    // The account is left out: a card number's hash is easy to reverse (a repeat compares it in clear).
    const hash = requestHash({
      order_type: SELL_ORDER,
      cny_fen: cnyFen,
      paychannel_id: params.paychannel_id,
      payee_name: params.payee_name,
      payee_bank: params.payee_bank,
      notify_url: params.notify_url ?? null,
    });
    const merchantOrderNo = params.merchant_order_no ?? null;
    const { value, repeat } = await createIdempotently<{ order: Order; payout: Payout | null }>({
      findRepeat: async () => {
        const order = merchantOrderNo ? await this.orders.findByMerchantOrderNo(merchant.id, merchantOrderNo) : null;
        // A top-up's number has no payout: a conflict below, like any other difference.
        return order && { order, payout: order.orderType === SELL_ORDER ? await this.payouts.findForMerchant(merchant.id, order.id) : null };
      },
      create: async () => created(await this.createNew(merchant, params, cnyFen, hash)),
      merchantNoConstraint: 'uq_orders_merchant_order_no',
      ourNoConstraint: 'uq_orders_order_no',
      requestFields: {
        order_type: SELL_ORDER,
        cny_amount: cnyFen,
        paychannel_id: params.paychannel_id,
        payee_name: params.payee_name,
        payee_bank: params.payee_bank,
        payee_account: params.payee_account,
        notify_url: params.notify_url ?? null,
      },
      // The account is compared in clear, never hashed: a card number's hash is easy to reverse.
      fieldsOf: ({ order, payout }) => ({
        ...orderFields(order),
        payee_name: payout?.payeeName ?? null,
        payee_bank: payout?.payeeBank ?? null,
        payee_account: payout ? this.secrets.open(payout.payeeAccountEnc, payeeAccountContext(order.orderNo)) : null,
      }),
      conflict: ({ order }) => ({ message: apiMessage('order.conflict'), first: { order_no: order.orderNo } }),
    });
    const { order, payout } = value;
    if (!payout) throw new Error(`sell order ${order.orderNo} has no payout row`);
    return { order: { ...toCreatedView(order), payee_name: payout.payeeName, payee_bank: payout.payeeBank, payee_account: payout.payeeAccountMasked }, repeat };
  }

  private async createNew(merchant: Merchant, params: CreateSellOrderDto, cnyFen: number, hash: string): Promise<{ order: Order; payout: Payout }> {
    const linked = await this.channels.findLinkedEnabled(merchant.id, params.paychannel_id, adaptersForMode(merchant.mode, this.config.sandboxEnabled));
    if (!linked) throw await channelNotLinked(this.channels, merchant, params.paychannel_id, this.config.sandboxEnabled);
    const { channel } = linked;
    if (!this.adapters.forChannel(channel).payouts) throw new DomainError(ErrorCode.PayMethodUnavailable, apiMessage('sellOrder.noPayouts'));
    assertChannelAmountRange(channel, cnyFen);
    const serviceRateE8 = storedRateE8(linked.serviceRate, `merchant ${merchant.id} channel ${channel.id}`);
    const amounts = computeSellOrderAmounts(cnyFen, serviceRateE8);
    const now = new Date();
    return this.lifecycle.create(
      {
        orderNo: newOrderNo(now),
        merchantId: merchant.id,
        channelId: channel.id,
        orderType: SELL_ORDER,
        paymentMethod: 'bank',
        cnyFen,
        serviceRate: formatRate(serviceRateE8),
        serviceFen: amounts.serviceFen,
        depositRate: formatRate(0),
        depositFen: 0,
        merchantActualFen: amounts.merchantActualFen,
        merchantOrderNo: params.merchant_order_no ?? null,
        notifyUrl: params.notify_url ?? null,
        customerName: null,
        subject: null,
        returnUrl: null,
        requestHash: hash,
        expiresAt: PAYOUT_EXPIRES_AT,
        createdAt: now,
      },
      { name: params.payee_name, account: params.payee_account, bank: params.payee_bank },
    );
  }
}
