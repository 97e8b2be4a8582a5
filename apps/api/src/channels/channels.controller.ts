import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { type Envelope, ok } from '@app/common';
import type { Merchant } from '@app/db';
import { MerchantOperation } from '../http/api-docs';
import { CurrentMerchant, MerchantAuthGuard, MerchantParams } from '../auth/merchant-auth.guard';
import { ChannelsService, type PayChannelView } from './channels.service';
import { GetPayChannelsDto } from './dto/get-pay-channels.dto';

@Controller('merchant')
@UseGuards(MerchantAuthGuard)
export class ChannelsController {
  constructor(private readonly channels: ChannelsService) {}

  @Post('getPayChannels')
  @MerchantOperation('List the payment channels linked to the merchant', GetPayChannelsDto, 'category may also be given in the query string.')
  @HttpCode(200)
  async getPayChannels(
    @CurrentMerchant() merchant: Merchant,
    @MerchantParams() params: GetPayChannelsDto,
  ): Promise<Envelope<{ list: PayChannelView[]; total: number }>> {
    return ok(await this.channels.listForMerchant(merchant, params.category));
  }
}
