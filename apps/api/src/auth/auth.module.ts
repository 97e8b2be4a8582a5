import { Module } from '@nestjs/common';
import { AuthFailureThrottle } from './auth-failure-throttle';
import { MerchantAuthGuard } from './merchant-auth.guard';
import { MerchantCredentialsCache } from './merchant-credentials-cache';
import { MerchantRateLimiter } from './merchant-rate-limiter';

@Module({
  providers: [MerchantAuthGuard, MerchantCredentialsCache, MerchantRateLimiter, AuthFailureThrottle],
  exports: [MerchantAuthGuard, MerchantCredentialsCache, MerchantRateLimiter, AuthFailureThrottle],
})
export class AuthModule {}
