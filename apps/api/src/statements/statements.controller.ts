import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { type Envelope, ok } from '@app/common';
import type { Merchant } from '@app/db';
import { MerchantOperation } from '../http/api-docs';
import { CurrentMerchant, MerchantAuthGuard, MerchantParams } from '../auth/merchant-auth.guard';
import { StatementQueryDto } from './dto/statement-query.dto';
import { type StatementView, StatementsService } from './statements.service';

@Controller('merchant')
@UseGuards(MerchantAuthGuard)
export class StatementsController {
  constructor(private readonly statements: StatementsService) {}

  @Post('statementQuery')
  @MerchantOperation(
    "The merchant's statement of one day (Asia/Shanghai)",
    StatementQueryDto,
    "Opening balance, the day's ledger movements in order with the balances after each (a page of `limit`, 1 to 500, default 100; `total` counts them all), closing balance; amounts in fen. One day's closing balance is the next day's opening. A day after today (Asia/Shanghai) is 40000.",
  )
  @HttpCode(200)
  async statementQuery(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: StatementQueryDto): Promise<Envelope<StatementView>> {
    return ok(await this.statements.view(merchant.id, params.date, params.page, params.limit));
  }
}
