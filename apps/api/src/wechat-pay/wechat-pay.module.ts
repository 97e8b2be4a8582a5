import { Module } from '@nestjs/common';
import { OrdersCoreModule } from '@app/orders';
import { WechatPayPageController } from './wechat-pay-page.controller';
import { WechatPayPageService } from './wechat-pay-page.service';

/** The wechatpay channel's QR code pages, at the root (not under {base_url}). */
@Module({
  imports: [OrdersCoreModule],
  controllers: [WechatPayPageController],
  providers: [WechatPayPageService],
})
export class WechatPayModule {}
