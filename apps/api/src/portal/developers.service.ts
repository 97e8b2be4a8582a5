import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, DomainError, ErrorCode, isHttpUrl } from '@app/common';
import { MerchantRepository } from '@app/db';
import { MerchantAccountService, type RotatedCredentials } from '@app/operator';
import type { TestAttemptView } from '@app/callbacks';
import { CallbacksService } from '../callbacks/callbacks.service';

/** The rotation choices the page offers (SPEC 3): a routine rotation keeps the old secret a day, a leak revokes it now. */
export const PORTAL_GRACE_CHOICES = ['24h', '0'] as const;

export type TestEventResult = { kind: 'sent'; attempt: TestAttemptView } | { kind: 'no_notify_url' } | { kind: 'rate_limited' };

export interface DevelopersView {
  apiKey: string;
  notifyUrl: string | null;
  baseUrl: string;
  /** Where callbacks come from, as the operator publishes it (CALLBACK_EGRESS_ADDRESSES); null when unpublished. */
  egressAddresses: string | null;
  examples: { curl: string; php: string; typescript: string };
}

/** Signing examples that list the merchant's orders; the secret comes from the API_SECRET environment variable, never the page. */
export function signingExamples(apiKey: string, endpoint: string): DevelopersView['examples'] {
  const curl = `# API_SECRET holds your api_secret, e.g. export API_SECRET='...'
API_KEY='${apiKey}'
ts=$(date +%s); nonce=$(openssl rand -hex 12)
# The canonical string: every parameter but signature, keys sorted, key=value joined by &
canonical="api_key=$API_KEY&limit=10&nonce=$nonce&page=1&timestamp=$ts"
sig=$(printf '%s' "$canonical" | openssl dgst -sha256 -hmac "$API_SECRET" | sed 's/^.* //')
curl -s '${endpoint}' -H 'content-type: application/json' \\
  -d "{\\"api_key\\":\\"$API_KEY\\",\\"page\\":1,\\"limit\\":10,\\"timestamp\\":$ts,\\"nonce\\":\\"$nonce\\",\\"signature\\":\\"$sig\\"}"
`;
  const php = `<?php
$apiKey = '${apiKey}';
$apiSecret = getenv('API_SECRET'); // your api_secret, kept out of the code

$params = ['api_key' => $apiKey, 'timestamp' => time(), 'nonce' => bin2hex(random_bytes(12)), 'page' => 1, 'limit' => 10];
// The canonical string: no null or empty values, keys sorted by bytes, key=value joined by &
$signed = array_filter($params, fn($v) => $v !== null && $v !== '');
ksort($signed, SORT_STRING);
$canonical = implode('&', array_map(fn($k, $v) => "$k=$v", array_keys($signed), $signed));
$params['signature'] = hash_hmac('sha256', $canonical, $apiSecret);

$ch = curl_init('${endpoint}');
curl_setopt_array($ch, [
    CURLOPT_POST => true,
    CURLOPT_HTTPHEADER => ['Content-Type: application/json'],
    CURLOPT_POSTFIELDS => json_encode($params),
    CURLOPT_RETURNTRANSFER => true,
]);
echo curl_exec($ch), PHP_EOL;
`;
  const typescript = `import { createHmac, randomBytes } from 'node:crypto';

const apiKey = '${apiKey}';
const apiSecret = process.env.API_SECRET ?? ''; // your api_secret, kept out of the code

async function main(): Promise<void> {
  const params: Record<string, string | number> = {
    api_key: apiKey,
    timestamp: Math.floor(Date.now() / 1000),
    nonce: randomBytes(12).toString('hex'),
    page: 1,
    limit: 10,
  };
  // The canonical string: no null or empty values, keys sorted, key=value joined by &
  const canonical = Object.keys(params)
    .filter((k) => params[k] !== '')
    .sort()
    .map((k) => \`\${k}=\${params[k]}\`)
    .join('&');
  const signature = createHmac('sha256', apiSecret).update(canonical).digest('hex');
  const res = await fetch('${endpoint}', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...params, signature }),
  });
  console.log(await res.json());
}

void main();
`;
  return { curl, php, typescript };
}

/** Told of every rotation made on the page, with the new credentials. */
export type RotationListener = (credentials: RotatedCredentials) => void;

/** The developers page: credentials, notify URL and secret rotation, through the operator's own methods. */
@Injectable()
export class DevelopersService {
  private readonly logger = new Logger(DevelopersService.name);
  private readonly rotationListeners: RotationListener[] = [];

  constructor(
    private readonly config: AppConfig,
    private readonly merchants: MerchantRepository,
    private readonly merchantAccounts: MerchantAccountService,
    private readonly callbacks: CallbacksService,
  ) {}

  async view(merchantId: number): Promise<DevelopersView> {
    const merchant = await this.merchants.findById(merchantId);
    if (!merchant) throw new DomainError(ErrorCode.MerchantDisabled);
    const baseUrl = `${this.config.publicBaseUrl}${this.config.apiPrefix}`;
    return {
      apiKey: merchant.apiKey,
      notifyUrl: merchant.notifyUrl,
      baseUrl,
      egressAddresses: this.config.callbackEgressAddresses,
      examples: signingExamples(merchant.apiKey, `${baseUrl}/merchant/orderQueryList`),
    };
  }

  /** null when `grace` is not one of the page's choices. */
  async rotateSecret(merchantId: number, grace: string): Promise<RotatedCredentials | null> {
    if (!(PORTAL_GRACE_CHOICES as readonly string[]).includes(grace)) return null;
    const rotated = await this.merchantAccounts.rotateSecret(merchantId, grace);
    for (const listener of this.rotationListeners) {
      try {
        listener(rotated);
      } catch (err) {
        // The rotation stands and its secret is on the page: a listener's trouble is for the log (never the secret).
        this.logger.error({ merchant_id: merchantId, err: (err as Error)?.message ?? String(err) }, 'a rotation listener failed');
      }
    }
    return rotated;
  }

  /** The embedded mode keeps its demo credentials file in step with rotations made here. */
  onRotation(listener: RotationListener): void {
    this.rotationListeners.push(listener);
  }

  /** callbackTest to the merchant's notify URL, as the API operation sends it (same allowance). */
  async sendTestEvent(merchantId: number): Promise<TestEventResult> {
    const merchant = await this.merchants.findById(merchantId);
    if (!merchant) throw new DomainError(ErrorCode.MerchantDisabled);
    if (!merchant.notifyUrl) return { kind: 'no_notify_url' };
    try {
      return { kind: 'sent', attempt: await this.callbacks.test(merchant, undefined) };
    } catch (err) {
      if (err instanceof DomainError && err.code === ErrorCode.RateLimited) return { kind: 'rate_limited' };
      throw err;
    }
  }

  /** false when the URL is not an http or https URL of at most 512 characters. */
  async setNotifyUrl(merchantId: number, url: string): Promise<boolean> {
    if (!isHttpUrl(url)) return false;
    await this.merchantAccounts.setNotifyUrl(merchantId, url);
    return true;
  }
}
