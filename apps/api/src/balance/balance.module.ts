import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { BalanceController } from './balance.controller';
import { BalanceService } from './balance.service';

@Module({
  imports: [AuthModule],
  controllers: [BalanceController],
  providers: [BalanceService],
})
export class BalanceModule {}
