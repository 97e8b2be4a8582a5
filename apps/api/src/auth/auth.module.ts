import { Module } from '@nestjs/common';
import { MerchantAuthGuard } from './merchant-auth.guard';
import { MerchantRateLimiter } from './merchant-rate-limiter';
import { NonceStore } from './nonce.store';

@Module({
  providers: [MerchantAuthGuard, NonceStore, MerchantRateLimiter],
  exports: [MerchantAuthGuard, NonceStore, MerchantRateLimiter],
})
export class AuthModule {}
