import { Module } from '@nestjs/common';
import { OrdersCoreModule } from '@app/orders';
import { SandboxCheckoutController } from './sandbox-checkout.controller';
import { SandboxCheckoutService } from './sandbox-checkout.service';

/** The sandbox channel's checkout pages, at the root (not under {base_url}). */
@Module({
  imports: [OrdersCoreModule],
  controllers: [SandboxCheckoutController],
  providers: [SandboxCheckoutService],
})
export class SandboxModule {}
