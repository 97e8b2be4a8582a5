import { Module } from '@nestjs/common';
import { MerchantAuthGuard } from './merchant-auth.guard';
import { MerchantRateLimiter } from './merchant-rate-limiter';

@Module({
  providers: [MerchantAuthGuard, MerchantRateLimiter],
  exports: [MerchantAuthGuard, MerchantRateLimiter],
})
export class AuthModule {}
