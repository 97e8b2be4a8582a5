import { Module } from '@nestjs/common';
import { OrdersCoreModule } from '@app/orders';
import { CashierController } from './cashier.controller';
import { CashierService } from './cashier.service';

/** The cashier of alipay and wechatpay orders, at the root (not under {base_url}). */
@Module({
  imports: [OrdersCoreModule],
  controllers: [CashierController],
  providers: [CashierService],
})
export class CashierModule {}
