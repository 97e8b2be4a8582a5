import { Module } from '@nestjs/common';
import { AuthFailureThrottle } from './auth-failure-throttle';
import { MerchantAuthGuard } from './merchant-auth.guard';
import { MerchantCredentialsCache } from './merchant-credentials-cache';
import { SignedRequestAdmission } from './signed-request-admission';

@Module({
  providers: [MerchantAuthGuard, MerchantCredentialsCache, SignedRequestAdmission, AuthFailureThrottle],
  exports: [MerchantAuthGuard, MerchantCredentialsCache, SignedRequestAdmission, AuthFailureThrottle],
})
export class AuthModule {}
