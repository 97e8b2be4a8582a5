import { Injectable, Optional } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig, DomainError, ErrorCode, apiMessage, keyspacePrefix } from '@app/common';
import { ADMISSION_KEYSPACE, NonceStore, claimNonceLua } from '@app/db';
import { AuthFailureThrottle, addressBlocked } from './auth-failure-throttle';
import { TAKE_TOKEN_LUA, TokenBuckets } from './token-buckets';

/**
 * KEYS: the address's failed-auth count, the nonce, the api_key's bucket.
 * ARGV: failures that block, nonce TTL (s), tokens per second, burst.
 * Answers {0, 0} admitted, {1, ms} address blocked, {2, 0} nonce used, {3, ms} no token.
 * The nonce claim is NonceStore's and the bucket takeToken's twin, each from its one home.
 */
const ADMIT_SCRIPT = `
local failures = tonumber(redis.call('GET', KEYS[1]) or '0')
if failures >= tonumber(ARGV[1]) then
  local left = redis.call('PTTL', KEYS[1])
  if left < 0 then left = 1000 end
  return {1, left}
end
if not ${claimNonceLua('KEYS[2]', 'ARGV[2]')} then
  return {2, 0}
end
${TAKE_TOKEN_LUA}
return {0, 0}
`;

/** The per-api_key budget (SPEC 8), told apart from the failed-authentication block. */
function apiKeyRateLimited(ms: number): DomainError {
  return DomainError.rateLimited(ms, apiMessage('auth.apiKeyRateLimited'));
}

const ADMITTED = 0;
const ADDRESS_BLOCKED = 1;
const NONCE_USED = 2;
const NO_TOKEN = 3;

interface RedisWithAdmit extends Redis {
  admitSignedRequest(
    failKey: string,
    nonceKey: string,
    bucketKey: string,
    blockingFailures: number,
    nonceTtl: number,
    perSecond: number,
    burst: number,
  ): Promise<[number, number]>;
}

/**
 * What a request whose signature verified must still pass (SPEC 3, 8), in order: its address
 * not blocked by the failed-auth throttle (42900), its nonce unused (40104; claimed now), a
 * token in its api_key's bucket (42900 with Retry-After). With Redis that is ONE round trip, a
 * script shared by every API instance; without it (the embedded mode) the nonce table and
 * in-memory buckets, the throttle's block being checked locally before any lookup already.
 */
@Injectable()
export class SignedRequestAdmission {
  private readonly redis: RedisWithAdmit | null;
  private readonly memoryBuckets: TokenBuckets | null;
  private readonly perSecond: number;
  private readonly burst: number;
  private readonly bucketPrefix: string;

  constructor(
    config: AppConfig,
    private readonly nonces: NonceStore,
    private readonly authFailures: AuthFailureThrottle,
    @Optional() redis?: Redis,
  ) {
    this.perSecond = config.rateLimitMerchantPerSecond;
    // A burst below the steady rate would refuse what the rate allows within one second.
    this.burst = Math.max(config.rateLimitMerchantBurst, config.rateLimitMerchantPerSecond);
    // Under QUEUE_PREFIX: deployments (and test runs) sharing one Redis keep their budgets apart;
    // on a Cluster in the admission keyspace's slot, with the nonce and failure keys the script also touches.
    this.bucketPrefix = `${keyspacePrefix(config.redis, config.queuePrefix, ADMISSION_KEYSPACE, `${config.queuePrefix}:`)}rl:merchant:`;
    if (redis) {
      redis.defineCommand('admitSignedRequest', { numberOfKeys: 3, lua: ADMIT_SCRIPT });
      this.redis = redis as RedisWithAdmit;
      this.memoryBuckets = null;
    } else {
      this.redis = null;
      this.memoryBuckets = new TokenBuckets(this.perSecond, this.burst);
    }
  }

  /** Resolves when admitted; throws the DomainError to answer otherwise. */
  async admit(ip: string, apiKey: string, nonce: string): Promise<void> {
    if (!this.redis) return this.admitWithoutRedis(apiKey, nonce);
    const [outcome, ms] = await this.redis.admitSignedRequest(
      this.authFailures.redisKey(ip),
      this.nonces.redisKey(apiKey, nonce),
      this.bucketPrefix + apiKey,
      this.authFailures.blockingFailures,
      this.nonces.ttlSeconds,
      this.perSecond,
      this.burst,
    );
    switch (outcome) {
      case ADMITTED:
        return;
      case ADDRESS_BLOCKED:
        this.authFailures.block(ip, ms);
        throw addressBlocked(ms);
      case NONCE_USED:
        throw new DomainError(ErrorCode.AuthNonceUsed);
      case NO_TOKEN:
        throw apiKeyRateLimited(ms);
      default:
        throw new Error(`admission script answered ${outcome}`);
    }
  }

  private async admitWithoutRedis(apiKey: string, nonce: string): Promise<void> {
    if (!(await this.nonces.claim(apiKey, nonce))) throw new DomainError(ErrorCode.AuthNonceUsed);
    const retryAfterMs = this.memoryBuckets!.take(apiKey);
    if (retryAfterMs > 0) throw apiKeyRateLimited(retryAfterMs);
  }
}
