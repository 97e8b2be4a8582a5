import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfig, DomainError, ErrorCode, SecretBox, computeSellOrderAmounts, formatRate, formatYuan, parseYuan, storedRateE8 } from '@app/common';
import { ChannelAdapters, adaptersForMode } from '@app/channels';
import { ChannelRepository, type Merchant, type Order, OrderRepository, PayoutRepository, SELL_ORDER, uniqueViolation } from '@app/db';
import { SELL_ORDER_EXPIRES_AT, SellOrderLifecycle, newOrderNo, payeeAccountContext } from '@app/orders';
import { canonicalJson } from '@app/signature';
import { type CreatedOrderView, toCreatedView } from '../orders/orders.service';
import type { CreateSellOrderDto } from './dto/create-sell-order.dto';

/** createSellOrder's answer: createOrder's (order_type 2, pay_url null) plus the payee, its account masked. */
export interface CreatedSellOrderView extends CreatedOrderView {
  payee_name: string;
  payee_bank: string;
  payee_account: string;
}

const ORDER_NO_ATTEMPTS = 3;

/** SPEC 5's sell orders: a payout to the merchant's customer, out of the merchant's available balance. */
@Injectable()
export class SellOrdersService {
  constructor(
    private readonly orders: OrderRepository,
    private readonly payouts: PayoutRepository,
    private readonly channels: ChannelRepository,
    private readonly adapters: ChannelAdapters,
    private readonly lifecycle: SellOrderLifecycle,
    private readonly secrets: SecretBox,
    private readonly config: AppConfig,
  ) {}

  /** `repeat` tells a merchant_order_no repeat from a new sell order. */
  async create(merchant: Merchant, params: CreateSellOrderDto): Promise<{ order: CreatedSellOrderView; repeat: boolean }> {
    const cnyFen = parseYuan(params.cny_amount) as number;
    // The account is compared in clear on a repeat, never hashed: a card number's hash is easy to reverse.
    const requestHash = createHash('sha256')
      .update(
        canonicalJson({
          order_type: SELL_ORDER,
          cny_fen: cnyFen,
          paychannel_id: params.paychannel_id,
          payee_name: params.payee_name,
          payee_bank: params.payee_bank,
          notify_url: params.notify_url ?? null,
        }),
      )
      .digest('hex');
    const merchantOrderNo = params.merchant_order_no ?? null;
    if (merchantOrderNo) {
      const existing = await this.orders.findByMerchantOrderNo(merchant.id, merchantOrderNo);
      if (existing) return this.repeat(merchant.id, existing, requestHash, params.payee_account);
    }

    const linked = await this.channels.findLinkedEnabled(merchant.id, params.paychannel_id, adaptersForMode(merchant.mode, this.config.sandboxEnabled));
    if (!linked) throw new DomainError(ErrorCode.ChannelUnavailable);
    const { channel } = linked;
    if (!this.adapters.forChannel(channel).payouts) throw new DomainError(ErrorCode.PayMethodUnavailable, 'This payment channel does not pay out (no sell orders)');
    if (cnyFen < channel.minFen || cnyFen > channel.maxFen) {
      throw DomainError.invalid('cny_amount', `must be from ${formatYuan(channel.minFen)} to ${formatYuan(channel.maxFen)} on this channel`);
    }
    const serviceRateE8 = storedRateE8(linked.serviceRate, `merchant ${merchant.id} channel ${channel.id}`);
    const amounts = computeSellOrderAmounts(cnyFen, serviceRateE8);
    const payee = { name: params.payee_name, account: params.payee_account, bank: params.payee_bank };
    for (let attempt = 1; ; attempt++) {
      const now = new Date();
      try {
        const { order, payout } = await this.lifecycle.create(
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
            merchantOrderNo,
            notifyUrl: params.notify_url ?? null,
            customerName: null,
            requestHash,
            expiresAt: SELL_ORDER_EXPIRES_AT,
            createdAt: now,
          },
          payee,
        );
        return { order: { ...toCreatedView(order), payee_name: payout.payeeName, payee_bank: payout.payeeBank, payee_account: payout.payeeAccountMasked }, repeat: false };
      } catch (err) {
        const constraint = uniqueViolation(err);
        if (constraint === 'uq_orders_merchant_order_no' && merchantOrderNo) {
          const winner = await this.orders.findByMerchantOrderNo(merchant.id, merchantOrderNo);
          if (winner) return this.repeat(merchant.id, winner, requestHash, params.payee_account);
        }
        if (constraint === 'uq_orders_order_no' && attempt < ORDER_NO_ATTEMPTS) continue;
        throw err;
      }
    }
  }

  private async repeat(merchantId: number, existing: Order, requestHash: string, payeeAccount: string): Promise<{ order: CreatedSellOrderView; repeat: boolean }> {
    const payout = existing.orderType === SELL_ORDER && existing.requestHash === requestHash ? await this.payouts.findForMerchant(merchantId, existing.id) : null;
    if (!payout || this.secrets.open(payout.payeeAccountEnc, payeeAccountContext(existing.orderNo)) !== payeeAccount) {
      throw new DomainError(ErrorCode.IdempotencyConflict);
    }
    return { order: { ...toCreatedView(existing), payee_name: payout.payeeName, payee_bank: payout.payeeBank, payee_account: payout.payeeAccountMasked }, repeat: true };
  }
}
