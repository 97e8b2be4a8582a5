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
    "Opening balance, every ledger movement of the day in order with the balances after it, closing balance; amounts in fen. One day's closing balance is the next day's opening.",
  )
  @HttpCode(200)
  async statementQuery(@CurrentMerchant() merchant: Merchant, @MerchantParams() params: StatementQueryDto): Promise<Envelope<StatementView>> {
    return ok(await this.statements.view(merchant.id, params.date));
  }
}
