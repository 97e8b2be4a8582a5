import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, BUY_ORDER, formatYuan } from '@app/common';
import {
  type CashierOperations,
  type CashierPayer,
  type CashierReturn,
  ChannelAdapters,
  ChannelError,
  type PayMode,
  type PaymentRequest,
  type Prepay,
  isCashierAdapter,
} from '@app/channels';
import { type CheckoutOrder, type Order, OrderPrepayRepository, OrderRepository } from '@app/db';
import { type Lang, type PayPageLayout, notFoundPayPage, withLang } from '../pay-pages/pay-page';
import { payerOutcome, payerSubject } from '../pay-pages/pay-sheet';
import { type CashierScreen, type CashierSummary, cashierPage } from './cashier-page';
import { cashierMode, payerDevice } from './payer-device';

/** What the cashier's route hands over of a request. */
export interface CashierVisit {
  orderNo: string;
  query: Record<string, unknown>;
  lang: Lang;
  userAgent: string | undefined;
  /** The client address as the service trusts it (TRUST_PROXY). */
  ip: string;
  nonces: PayPageLayout['nonces'];
}

export type CashierAnswer = { status: number; html: string } | { status: 302 | 303; location: string };

/** A prepay is used again only while it stays valid a little longer: the payer needs time to act on it. */
const PREPAY_MARGIN_MS = 30_000;

/**
 * The cashier `/pay/{order_no}?token=...` (SPEC 6, Pay modes and the cashier): the pay_url of
 * alipay and wechatpay orders. It reads the payer's device, picks the mode the channel allows
 * for it (or says in plain words why there is none here), makes or reuses the provider's prepay,
 * and shows the step; it follows the order's status, and once paid or given up offers the way
 * back to return_url.
 */
@Injectable()
export class CashierService {
  private readonly logger = new Logger(CashierService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly orders: OrderRepository,
    private readonly prepays: OrderPrepayRepository,
    private readonly adapters: ChannelAdapters,
  ) {}

  async visit(v: CashierVisit): Promise<CashierAnswer> {
    const found = await this.resolve(v.orderNo, v.query.token);
    if (!found) return { status: 404, html: notFoundPayPage(v.lang, v.nonces) };
    const { order, channel } = found;
    const provider = channel.adapter;
    if (!isCashierAdapter(provider)) return { status: 404, html: notFoundPayPage(v.lang, v.nonces) };
    const token = v.query.token as string;
    const pagePath = `/pay/${order.orderNo}?token=${encodeURIComponent(token)}`;
    const summary: CashierSummary = {
      provider,
      merchantName: found.merchantName,
      subject: payerSubject(order),
      amount: formatYuan(order.cnyFen),
      shopOrderNo: order.merchantOrderNo,
      expiresAt: order.expiresAt,
      returnUrl: order.returnUrl,
      pageUrl: pagePath,
      absolutePageUrl: `${this.config.publicBaseUrl}${pagePath}`,
    };
    const show = (screen: CashierScreen, status = 200): CashierAnswer => ({ status, html: cashierPage(summary, screen, v.lang, v.nonces) });

    const outcome = payerOutcome(order);
    if (outcome === 'paid') return show({ kind: 'paid' });
    if (outcome !== 'open') return show({ kind: 'closed', expired: outcome === 'expired' });
    if (v.query.step === 'wait') return show({ kind: 'wait' });

    const adapter = this.adapters.forChannel(channel);
    const cashier = adapter.cashier;
    if (!cashier) return { status: 404, html: notFoundPayPage(v.lang, v.nonces) };
    const device = payerDevice(v.userAgent);
    const choice = cashierMode(provider, device, cashier.modes);
    if (choice.mode === null) return show({ kind: 'notHere', device, instead: choice.instead });
    const { mode } = choice;

    const absolute = (path: string): string => `${this.config.publicBaseUrl}${withLang(path, v.lang)}`;
    const waitUrl = absolute(`${pagePath}&step=wait`);
    const back: CashierReturn = { returnUrl: order.returnUrl ?? waitUrl, quitUrl: order.returnUrl ?? absolute(pagePath) };
    const request = this.paymentRequest(order, channel.id);
    const payer: CashierPayer = { ip: v.ip };

    if (mode === 'jsapi') {
      // An order bound to another trade type needs no openid to say so: no OAuth round for nothing.
      const bound = cashier.prepay ? await this.prepays.find(order.id) : null;
      if (bound && bound.mode !== mode) return show({ kind: 'started', mode: bound.mode as PayMode });
      const identity = await this.payerIdentity(cashier, v, absolute(pagePath));
      if ('redirect' in identity) return { status: 302, location: identity.redirect };
      if ('screen' in identity) return show(identity.screen, identity.screen.kind === 'unavailable' ? 502 : 200);
      payer.openid = identity.openid;
    }

    let prepay: Prepay | null = null;
    if (cashier.prepay) {
      const made = await this.prepay(order, mode, request, payer, cashier);
      if ('screen' in made) return show(made.screen, made.screen.kind === 'unavailable' ? 502 : 200);
      prepay = made.prepay;
    }
    try {
      const step = cashier.step(mode, request, prepay, back);
      return show({ kind: 'pay', mode, step, waitUrl: withLang(`${pagePath}&step=wait`, v.lang) });
    } catch (err) {
      if (!(err instanceof ChannelError)) throw err;
      this.logger.warn({ order_no: order.orderNo, mode, err: err.message }, 'cashier could not make the pay step');
      return show({ kind: 'unavailable' }, 502);
    }
  }

  /**
   * The provider's prepay for `mode`: the stored one while valid (and, for H5, made for this
   * payer's address, which WeChat checks when the payer opens it), else a new one, stored. The
   * order is first bound to the mode (OrderPrepayRepository.claim): WeChat keeps one trade type
   * per out_trade_no ("201 商户订单号重复" for the same number with another type or payer;
   * https://pay.weixin.qq.com/docs/merchant/apis/h5-payment/direct-jsons/h5-prepay.html, the
   * time_expire note: only the same parameters again give the trade's current h5_url), so an order
   * begun in one mode stays in it and the page says so.
   */
  private async prepay(
    order: Order,
    mode: PayMode,
    request: PaymentRequest,
    payer: CashierPayer,
    cashier: CashierOperations,
  ): Promise<{ prepay: Prepay } | { screen: CashierScreen }> {
    const bound = await this.prepays.claim(order.id, mode, mode === 'jsapi' ? payer.openid! : null);
    if (bound.mode !== mode) return { screen: { kind: 'started', mode: bound.mode as PayMode } };
    if (mode === 'jsapi' && bound.payer !== payer.openid) return { screen: { kind: 'otherPayer' } };
    const forThisPayer = mode !== 'h5' || bound.payer === payer.ip;
    if (bound.prepay && bound.validUntil && bound.validUntil.getTime() > Date.now() + PREPAY_MARGIN_MS && forThisPayer) {
      return { prepay: { value: bound.prepay, validUntil: bound.validUntil } };
    }
    try {
      const prepay = await this.adapters.call((signal) => cashier.prepay!(mode, request, payer, signal));
      await this.prepays.save(order.id, mode, mode === 'jsapi' ? payer.openid! : mode === 'h5' ? payer.ip : null, prepay.value, prepay.validUntil);
      this.logger.log({ order_no: order.orderNo, mode }, 'prepay made');
      return { prepay };
    } catch (err) {
      if (!(err instanceof ChannelError)) throw err;
      this.logger.warn({ order_no: order.orderNo, mode, err: err.message }, 'prepay failed');
      return { screen: { kind: 'unavailable' } };
    }
  }

  /**
   * JSAPI needs the payer's openid: without a `code` the payer goes through WeChat's silent OAuth
   * (snsapi_base), which comes back to this page with one. A code used already (the page
   * reloaded) sends the payer for a new one; a code WeChat refuses otherwise, once more, and a
   * second refusal in a row is shown.
   */
  private async payerIdentity(
    cashier: CashierOperations,
    v: CashierVisit,
    pageUrl: string,
  ): Promise<{ openid: string } | { redirect: string } | { screen: CashierScreen }> {
    const identity = cashier.payerIdentity;
    if (!identity) return { screen: { kind: 'unavailable' } };
    const code = typeof v.query.code === 'string' && /^[\w-]{1,128}$/.test(v.query.code) ? v.query.code : null;
    const again = v.query.state === 'again';
    if (!code) return { redirect: identity.authorizeUrl(pageUrl, 'pay') };
    try {
      const payer = await this.adapters.call((signal) => identity.openid(code, signal));
      if (!payer) return { redirect: identity.authorizeUrl(pageUrl, 'pay') };
      if (payer.snapshot) return { screen: { kind: 'snapshot' } };
      return { openid: payer.openid };
    } catch (err) {
      if (!(err instanceof ChannelError)) throw err;
      this.logger.warn({ order_no: v.orderNo, err: err.message }, 'wechat oauth failed');
      return again ? { screen: { kind: 'unavailable' } } : { redirect: identity.authorizeUrl(pageUrl, 'again') };
    }
  }

  private paymentRequest(order: Order, channelId: number): PaymentRequest {
    return {
      orderNo: order.orderNo,
      amountFen: order.cnyFen,
      payMethod: order.paymentMethod ?? '',
      subject: payerSubject(order),
      notifyUrl: this.adapters.notifyUrl(channelId),
      returnUrl: order.returnUrl,
      expiresAt: order.expiresAt,
    };
  }

  /**
   * A pay_url from before the cashier (`/pay/wechat/{order_no}?token=`, its token the sealed
   * code_url of the Native trade opened at createOrder): that trade is the order's prepay, and the
   * payer goes on to the cashier, which follows it. Kept while such orders can still be pending.
   */
  async legacyWechatPage(orderNo: string, token: unknown, lang: Lang): Promise<CashierAnswer> {
    const codeUrl = /^\d{22}$/.test(orderNo) ? this.adapters.openWechatPageToken(orderNo, token) : null;
    const found = codeUrl ? await this.orders.findCheckout(orderNo) : null;
    if (!codeUrl || !found || found.order.orderType !== BUY_ORDER || found.channel.adapter !== 'wechatpay') return { status: 404, html: notFoundPayPage(lang) };
    const { order } = found;
    const bound = await this.prepays.claim(order.id, 'native', null);
    if (bound.mode === 'native' && !bound.prepay) {
      const validUntil = new Date(Math.min(order.createdAt.getTime() + 2 * 3600_000, order.expiresAt.getTime()));
      await this.prepays.save(order.id, 'native', null, codeUrl, validUntil);
    }
    return { status: 303, location: withLang(this.adapters.cashierPath(orderNo), lang) };
  }

  /** A buy order on a cashier channel whose token is this order's. */
  private async resolve(orderNo: string, token: unknown): Promise<CheckoutOrder | null> {
    if (!/^\d{22}$/.test(orderNo) || !this.adapters.openCashierToken(orderNo, token)) return null;
    const found = await this.orders.findCheckout(orderNo);
    if (!found || found.order.orderType !== BUY_ORDER) return null;
    return found;
  }
}
