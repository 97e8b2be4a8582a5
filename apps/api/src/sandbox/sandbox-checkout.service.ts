import { Injectable, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { AppConfig, BUY_ORDER, formatYuan } from '@app/common';
import { ChannelAdapters, adapterOffered, signSandboxNotification, verifySandboxCheckoutToken } from '@app/channels';
import { type Order, OrderRepository, SandboxBillRepository } from '@app/db';
import type { Lang } from '../pay-pages/pay-page';
import { payerOutcome, payerSubject } from '../pay-pages/pay-sheet';
import { type CheckoutView, checkoutNotFound, checkoutPage } from './checkout-page';

export interface HtmlAnswer {
  status: number;
  html: string;
}

const notFound = (lang: Lang): HtmlAnswer => ({ status: 404, html: checkoutNotFound(lang) });

/**
 * The sandbox channel's checkout page (SPEC 6). Pay and Fail make the sandbox post a
 * notification signed with the channel's secret_key to the real notify route, through
 * Fastify's inject on this very app: the route, its verification and the state machine run
 * exactly as for a processor's call, without needing the service to reach its own
 * PUBLIC_BASE_URL over the network. Fail is a declined attempt: the order stays payable (SPEC 5).
 */
@Injectable()
export class SandboxCheckoutService {
  private readonly logger = new Logger(SandboxCheckoutService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly orders: OrderRepository,
    private readonly adapters: ChannelAdapters,
    private readonly adapterHost: HttpAdapterHost,
    private readonly sandboxBook: SandboxBillRepository,
  ) {}

  async page(orderNo: string, token: unknown, lang: Lang): Promise<HtmlAnswer> {
    const found = await this.resolve(orderNo, token);
    if (!found) return notFound(lang);
    return { status: 200, html: checkoutPage(view(found.order, found.merchantName, token as string), lang) };
  }

  async submit(orderNo: string, token: unknown, outcome: 'paid' | 'failed', lang: Lang): Promise<HtmlAnswer> {
    const found = await this.resolve(orderNo, token);
    if (!found) return notFound(lang);
    const { order, secretKey } = found;
    const shown = view(order, found.merchantName, token as string);
    // Paid, closed or out of time already: the page says so, nothing is sent.
    if (payerOutcome(order) !== 'open') return { status: 409, html: checkoutPage(shown, lang) };
    const notification = signSandboxNotification(secretKey, order.orderNo, order.cnyFen, outcome);
    // The sandbox took the money once Pay is pressed, whatever becomes of its notification: its own books say so.
    if (outcome === 'paid') {
      await this.sandboxBook.record(order.channelId, {
        kind: 'pay',
        tradeNo: notification.trade_no,
        orderNo: order.orderNo,
        refundNo: null,
        amountFen: order.cnyFen,
      });
    }
    const res = await this.adapterHost.httpAdapter.getInstance<FastifyInstance>().inject({
      method: 'POST',
      url: `${this.config.apiPrefix}/channel/notify/${order.channelId}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(Object.entries(notification).map(([k, v]): [string, string] => [k, String(v)])).toString(),
    });
    if (res.statusCode !== 200 || res.body.trim() !== 'success') {
      this.logger.warn({ order_no: order.orderNo, status: res.statusCode }, 'sandbox notification answered an error');
      return { status: 502, html: checkoutPage(shown, lang, { kind: 'refused', http: res.statusCode }) };
    }
    // Paid: settled in the notification's transaction (SPEC 5), so the order as it is now says so.
    if (outcome === 'paid') return { status: 200, html: checkoutPage({ ...shown, status: 'paid' }, lang) };
    return { status: 200, html: checkoutPage(shown, lang, { kind: 'failed' }) };
  }

  /**
   * The order, when the sandbox is on, the order is on a sandbox channel, the token is that
   * order's and its merchant is a test merchant: an order a live merchant made on the sandbox
   * before modes existed is never paid here (SPEC 5).
   */
  private async resolve(orderNo: string, token: unknown): Promise<{ order: Order; secretKey: string; merchantName: string } | null> {
    if (!adapterOffered('sandbox', this.config.sandboxEnabled) || !/^\d{22}$/.test(orderNo)) return null;
    // The order, its channel and its merchant in one round trip: the page and Pay each need them.
    const found = await this.orders.findCheckout(orderNo);
    // A sell order is paid out by the channel, never on a checkout page.
    if (!found || found.order.orderType !== BUY_ORDER) return null;
    const { order, channel } = found;
    if (channel.adapter !== 'sandbox') return null;
    const secretKey = this.adapters.channelConfig(channel).secret_key;
    if (!secretKey || !verifySandboxCheckoutToken(secretKey, order.orderNo, token)) return null;
    if (found.merchantMode !== 'test') return null;
    return { order, secretKey, merchantName: found.merchantName };
  }
}

function view(order: Order, merchantName: string, token: string): CheckoutView {
  return {
    orderNo: order.orderNo,
    merchantName,
    subject: payerSubject(order),
    amount: formatYuan(order.cnyFen),
    shopOrderNo: order.merchantOrderNo,
    expiresAt: order.expiresAt,
    returnUrl: order.returnUrl,
    payMethod: order.paymentMethod,
    status: order.status,
    updatedAt: order.updatedAt,
    token,
  };
}
