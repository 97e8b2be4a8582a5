import { Injectable } from '@nestjs/common';
import { BUY_ORDER, formatYuan } from '@app/common';
import { ChannelAdapters } from '@app/channels';
import { ChannelRepository, MerchantRepository, OrderRepository } from '@app/db';
import { type PageLanguage, wechatNotFoundPage, wechatPayPage } from './wechat-pay-page';

export interface HtmlAnswer {
  status: number;
  html: string;
}

/**
 * `/pay/wechat/{order_no}?token=...` (SPEC 6): the QR code of a native payment's code_url,
 * which the token carries sealed to that order, and the order's status as it moves.
 */
@Injectable()
export class WechatPayPageService {
  constructor(
    private readonly orders: OrderRepository,
    private readonly channels: ChannelRepository,
    private readonly merchants: MerchantRepository,
    private readonly adapters: ChannelAdapters,
  ) {}

  async page(orderNo: string, token: unknown, language: PageLanguage): Promise<HtmlAnswer> {
    const notFound = { status: 404, html: wechatNotFoundPage(language) };
    if (!/^\d{22}$/.test(orderNo)) return notFound;
    const codeUrl = this.adapters.openWechatPageToken(orderNo, token);
    if (!codeUrl) return notFound;
    const order = await this.orders.findForCheckout(orderNo);
    if (!order || order.orderType !== BUY_ORDER) return notFound;
    const channel = await this.channels.findById(order.channelId);
    if (channel?.adapter !== 'wechatpay') return notFound;
    const merchant = await this.merchants.findById(order.merchantId);
    const other: PageLanguage = language === 'en' ? 'zh-CN' : 'en';
    return {
      status: 200,
      html: wechatPayPage({
        language,
        orderNo,
        merchantName: merchant?.name ?? '',
        amount: formatYuan(order.cnyFen),
        status: order.status,
        codeUrl,
        otherLanguageUrl: `/pay/wechat/${orderNo}?token=${encodeURIComponent(token as string)}&lang=${other}`,
      }),
    };
  }
}
