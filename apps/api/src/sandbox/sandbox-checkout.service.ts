import { Injectable, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { AppConfig, BUY_ORDER, formatYuan } from '@app/common';
import { ChannelAdapters, signSandboxNotification, verifySandboxCheckoutToken } from '@app/channels';
import { ChannelRepository, MerchantRepository, type Order, OrderRepository } from '@app/db';
import { checkoutPage, resultPage } from './checkout-page';

export interface HtmlAnswer {
  status: number;
  html: string;
}

const NOT_FOUND: HtmlAnswer = {
  status: 404,
  html: resultPage('Checkout not found', 'This payment link is not valid. Ask the merchant for a new one.'),
};

/**
 * The sandbox channel's checkout page (SPEC 6). Pay and Fail make the sandbox post a
 * notification signed with the channel's secret_key to the real notify route, through
 * Fastify's inject on this very app: the route, its verification and the state machine run
 * exactly as for a processor's call, without needing the service to reach its own
 * PUBLIC_BASE_URL over the network.
 */
@Injectable()
export class SandboxCheckoutService {
  private readonly logger = new Logger(SandboxCheckoutService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly orders: OrderRepository,
    private readonly channels: ChannelRepository,
    private readonly merchants: MerchantRepository,
    private readonly adapters: ChannelAdapters,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  async page(orderNo: string, token: unknown): Promise<HtmlAnswer> {
    const found = await this.resolve(orderNo, token);
    if (!found) return NOT_FOUND;
    return {
      status: 200,
      html: checkoutPage({
        orderNo: found.order.orderNo,
        merchantName: found.merchantName,
        amount: formatYuan(found.order.cnyFen),
        payMethod: found.order.paymentMethod,
        status: found.order.status,
        token: token as string,
      }),
    };
  }

  async submit(orderNo: string, token: unknown, outcome: 'paid' | 'failed'): Promise<HtmlAnswer> {
    const found = await this.resolve(orderNo, token);
    if (!found) return NOT_FOUND;
    const { order, secretKey } = found;
    const back = `/sandbox/checkout/${order.orderNo}?token=${token as string}`;
    if (order.status !== 'pending') {
      return { status: 409, html: resultPage('Nothing to pay', `This order is already ${order.status}.`, back) };
    }
    const notification = signSandboxNotification(secretKey, order.orderNo, order.cnyFen, outcome);
    const res = await this.adapterHost.httpAdapter.getInstance<FastifyInstance>().inject({
      method: 'POST',
      url: `${this.config.apiPrefix}/channel/notify/${order.channelId}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(Object.entries(notification).map(([k, v]): [string, string] => [k, String(v)])).toString(),
    });
    if (res.statusCode !== 200 || res.body.trim() !== 'success') {
      this.logger.warn({ order_no: order.orderNo, status: res.statusCode }, 'sandbox notification answered an error');
      return { status: 502, html: resultPage('The service refused the notification', `HTTP ${res.statusCode}. Try again.`, back) };
    }
    return outcome === 'paid'
      ? { status: 200, html: resultPage('Payment succeeded', `¥${formatYuan(order.cnyFen)} paid for order ${order.orderNo}. The merchant is notified.`, back) }
      : { status: 200, html: resultPage('Payment failed', `Order ${order.orderNo} is cancelled. The merchant is notified.`, back) };
  }

  /**
   * The order, when the sandbox is on, the order is on a sandbox channel, the token is that
   * order's and its merchant is a test merchant: an order a live merchant made on the sandbox
   * before modes existed is never paid here (SPEC 5).
   */
  private async resolve(orderNo: string, token: unknown): Promise<{ order: Order; secretKey: string; merchantName: string } | null> {
    if (!this.config.sandboxEnabled || !/^\d{22}$/.test(orderNo)) return null;
    const order = await this.orders.findForCheckout(orderNo);
    // A sell order is paid out by the channel, never on a checkout page.
    if (!order || order.orderType !== BUY_ORDER) return null;
    const channel = await this.channels.findById(order.channelId);
    if (!channel || channel.adapter !== 'sandbox') return null;
    const secretKey = this.adapters.channelConfig(channel).secret_key;
    if (!secretKey || !verifySandboxCheckoutToken(secretKey, order.orderNo, token)) return null;
    const merchant = await this.merchants.findById(order.merchantId);
    if (merchant?.mode !== 'test') return null;
    return { order, secretKey, merchantName: merchant.name };
  }
}
