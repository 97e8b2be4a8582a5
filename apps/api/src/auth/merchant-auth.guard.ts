import { type CanActivate, type ExecutionContext, Injectable, createParamDecorator } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { type ApiMessage, AppConfig, DomainError, ErrorCode, apiMessage, unixSeconds } from '@app/common';
import type { Merchant } from '@app/db';
import { canonicalString, verify } from '@app/signature';
import { AUTH_FAILURE_CODES, AuthFailureThrottle } from './auth-failure-throttle';
import { type MerchantCredentials, MerchantCredentialsCache } from './merchant-credentials-cache';
import { SignedRequestAdmission } from './signed-request-admission';
import { createValidationPipe } from '../http/validation';
import { mergeRequestParams } from '../http/request-params';

const API_KEY = /^[A-Za-z0-9_]{1,64}$/;
const NONCE = /^[A-Za-z0-9_-]{8,64}$/;
const SIGNATURE = /^[0-9a-fA-F]{64}$/;

export interface AuthenticatedRequest extends FastifyRequest {
  merchant: Merchant;
  /** Query and body merged: what the signature covered. */
  merchantParams: Record<string, unknown>;
}

function authMissing(param: string, problem: ApiMessage): DomainError {
  return DomainError.ofFields(ErrorCode.AuthMissing, [{ field: param, message: problem }]);
}

function readTimestamp(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string' && /^\d{1,15}$/.test(value)) return Number(value);
  throw authMissing('timestamp', apiMessage(value === undefined ? 'auth.required' : 'auth.timestampFormat'));
}

function readText(params: Record<string, unknown>, name: string, pattern: RegExp, rule: ApiMessage): string {
  const value = params[name];
  if (value === undefined || value === null || value === '') throw authMissing(name, apiMessage('auth.required'));
  if (typeof value !== 'string' || !pattern.test(value)) throw authMissing(name, rule);
  return value;
}

/** Unix seconds this large are milliseconds (13 digits: after the year 33658 as seconds). */
const LOOKS_LIKE_MILLISECONDS = 1e12;

/** 40103 naming the window, and the usual cause when the value is a millisecond clock (Date.now()). */
function timestampOutsideWindow(timestamp: number, toleranceSeconds: number): DomainError {
  const key = timestamp >= LOOKS_LIKE_MILLISECONDS ? 'auth.timestampWindowMilliseconds' : 'auth.timestampWindow';
  return new DomainError(ErrorCode.AuthTimestamp, apiMessage(key, { tolerance: toleranceSeconds }));
}

/**
 * 40102; for a test-mode merchant (mk_test_ keys) with the canonical string the service signed
 * (SPEC 3), so a developer sees what differs from theirs. Never for a live key, as SPEC 3 says.
 */
function signatureMismatch(params: Record<string, unknown>, merchant: Merchant): DomainError {
  if (merchant.mode !== 'test') return new DomainError(ErrorCode.AuthBadSignature);
  return new DomainError(ErrorCode.AuthBadSignature, apiMessage('auth.canonical'), { canonical: canonicalString(params) });
}

/** True when one of the merchant's secrets that is still valid signed the parameters. */
function verifiesWithAny(params: Record<string, unknown>, signature: string, credentials: MerchantCredentials): boolean {
  const now = Date.now();
  return credentials.secrets().some((s) => (s.untilMs === null || s.untilMs > now) && verify(params, signature, s.secret));
}

/**
 * Signed merchant requests (SPEC 3): an address blocked for failed authentications first
 * (42900), then the checks in the contract's order, 40100, 40101, 40300, 40103, 40102, 40104,
 * then the per-api_key rate limit. The nonce is claimed only after the signature verified, so
 * a forged request cannot burn a merchant's nonce. The merchant comes from this instance's
 * cache; the nonce, the rate limit and the shared block are one Redis round trip.
 */
@Injectable()
export class MerchantAuthGuard implements CanActivate {
  constructor(
    private readonly config: AppConfig,
    private readonly credentials: MerchantCredentialsCache,
    private readonly admission: SignedRequestAdmission,
    private readonly authFailures: AuthFailureThrottle,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    this.authFailures.refuseIfBlocked(request.ip);
    let authenticated: { merchant: Merchant; params: Record<string, unknown> };
    try {
      authenticated = await this.authenticate(request);
    } catch (err) {
      if (err instanceof DomainError && AUTH_FAILURE_CODES.has(err.code)) throw await this.authFailures.recordFailure(request.ip, err);
      throw err;
    }
    request.merchant = authenticated.merchant;
    request.merchantParams = authenticated.params;
    return true;
  }

  private async authenticate(request: FastifyRequest): Promise<{ merchant: Merchant; params: Record<string, unknown> }> {
    const params = mergeRequestParams(request);

    const apiKey = readText(params, 'api_key', API_KEY, apiMessage('auth.apiKeyFormat'));
    const timestamp = readTimestamp(params.timestamp);
    const nonce = readText(params, 'nonce', NONCE, apiMessage('auth.nonceFormat'));
    const signature = readText(params, 'signature', SIGNATURE, apiMessage('auth.signatureFormat'));

    const credentials = await this.credentials.find(apiKey);
    if (!credentials) throw new DomainError(ErrorCode.AuthUnknownKey);
    const { merchant } = credentials;
    if (merchant.status !== 'active') throw new DomainError(ErrorCode.MerchantDisabled);
    if (Math.abs(unixSeconds() - timestamp) > this.config.authToleranceSeconds) throw timestampOutsideWindow(timestamp, this.config.authToleranceSeconds);

    if (!verifiesWithAny(params, signature, credentials)) throw signatureMismatch(params, merchant);
    // 40104 (counted as a failure) or 42900, past the signature only.
    await this.admission.admit(request.ip, apiKey, nonce);
    return { merchant, params };
  }
}

/** The authenticated merchant, set by MerchantAuthGuard. */
export const CurrentMerchant = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): Merchant => ctx.switchToHttp().getRequest<AuthenticatedRequest>().merchant,
);

const merchantParams = createParamDecorator((_data: unknown, ctx: ExecutionContext): Record<string, unknown> => ({
  ...ctx.switchToHttp().getRequest<AuthenticatedRequest>().merchantParams,
}));

/** The signed parameter map (query and body merged), validated into the parameter's DTO class. */
export const MerchantParams = (): ParameterDecorator => merchantParams(undefined, createValidationPipe(true));
