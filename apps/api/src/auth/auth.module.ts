import { Module } from '@nestjs/common';
import { AuthFailureThrottle } from './auth-failure-throttle';
import { MerchantAuthGuard } from './merchant-auth.guard';
import { MerchantRateLimiter } from './merchant-rate-limiter';

@Module({
  providers: [MerchantAuthGuard, MerchantRateLimiter, AuthFailureThrottle],
  exports: [MerchantAuthGuard, MerchantRateLimiter, AuthFailureThrottle],
})
export class AuthModule {}
