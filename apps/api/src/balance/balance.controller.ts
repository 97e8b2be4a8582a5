import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { type Envelope, ok } from '@app/common';
import type { Merchant } from '@app/db';
import { MerchantOperation } from '../http/api-docs';
import { CurrentMerchant, MerchantAuthGuard } from '../auth/merchant-auth.guard';
import { BalanceService, type BalanceView } from './balance.service';
import { BalanceQueryDto } from './dto/balance-query.dto';
import { BalanceViewDoc } from './dto/balance-view.doc';

@Controller('merchant')
@UseGuards(MerchantAuthGuard)
export class BalanceController {
  constructor(private readonly balance: BalanceService) {}

  @Post('balanceQuery')
  @MerchantOperation(
    "The merchant's balances now",
    BalanceQueryDto,
    "Available and deposit balances in fen, as of `as_of` (Unix seconds): the figures today's statement (statementQuery) closes on.",
    [],
    BalanceViewDoc,
  )
  @HttpCode(200)
  async balanceQuery(@CurrentMerchant() merchant: Merchant): Promise<Envelope<BalanceView>> {
    return ok(await this.balance.view(merchant.id));
  }
}
