import { Injectable } from '@nestjs/common';
import { AppConfig, SecretBox, merchantSecretContext, parseDuration, parseNotifyUrl, previousMerchantSecretContext } from '@app/common';
import { MERCHANT_MODES, type MerchantMode, MerchantRepository } from '@app/db';
import { refusedNotifyHost } from '@app/callbacks';
import { newApiKey, newApiSecret } from './credentials';
import { OperatorError } from './operator-error';
import { OperatorInputError } from './operator-input-error';
import { rateInput } from './rate-input';

/** SPEC 3: after a rotation the previous secret keeps verifying this long unless told otherwise. */
export const DEFAULT_SECRET_GRACE_MS = 24 * 3_600_000;
/** A longer overlap would leave a leaked secret alive for too long to be a rotation at all. */
export const MAX_SECRET_GRACE_MS = 30 * 86_400_000;

/** "24h", "90m", "7d"... or "0" (revoke the previous secret at once); null when it is neither. */
export function parseGrace(text: string): number | null {
  if (/^0+(ms|s|m|h|d)?$/.test(text.trim())) return 0;
  const ms = parseDuration(text);
  return ms !== null && ms <= MAX_SECRET_GRACE_MS ? ms : null;
}

export interface Credentials {
  id: number;
  api_key: string;
  api_secret: string;
  mode: MerchantMode;
}

/** merchant:rotate-secret's answer: the new secret (shown once) and until when the previous one still verifies. */
export interface RotatedCredentials extends Credentials {
  /** ISO time; null when the previous secret stopped verifying at once (grace 0). */
  previous_secret_valid_until: string | null;
}

export interface NewMerchantInput {
  name: string;
  /** Fixed for the merchant's life; live by default. */
  mode?: string;
  notifyUrl?: string;
  depositRate?: string;
}

/** The stored (canonical) form of a notify URL read by the one parser (SPEC 7 Address). */
function httpUrl(value: string, name: string, allowPrivate: boolean): string {
  const address = parseNotifyUrl(value);
  if (!address) throw new OperatorInputError(name, 'must be an absolute http or https URL without userinfo or backslash, of at most 512 characters');
  // SPEC 7 Address: a host that can never receive a callback is refused here, not retried for 24 hours.
  const refused = allowPrivate ? null : refusedNotifyHost(address.url);
  if (refused) throw new OperatorInputError(name, `is refused: ${refused} (CALLBACK_ALLOW_PRIVATE is off)`);
  return address.url;
}

/** A merchant's account as the operator keeps it: its creation, status, notify URL, deposit rate and API secret (SPEC 3, 10). */
@Injectable()
export class MerchantAccountService {
  constructor(
    private readonly merchants: MerchantRepository,
    private readonly secrets: SecretBox,
    private readonly config: AppConfig,
  ) {}

  async create({ name, mode = 'live', notifyUrl, depositRate }: NewMerchantInput): Promise<Credentials> {
    if (!name || name.length > 128) throw new OperatorInputError('name', 'is required (at most 128 characters)');
    if (!(MERCHANT_MODES as readonly string[]).includes(mode)) throw new OperatorInputError('mode', `must be ${MERCHANT_MODES.join(' or ')}`);
    const merchantMode = mode as MerchantMode;
    const apiKey = newApiKey(merchantMode);
    const apiSecret = newApiSecret();
    const merchant = await this.merchants.create({
      name,
      mode: merchantMode,
      apiKey,
      apiSecretEnc: this.secrets.seal(apiSecret, merchantSecretContext(apiKey)),
      notifyUrl: notifyUrl === undefined ? null : httpUrl(notifyUrl, 'notifyUrl', this.config.callbackAllowPrivate),
      depositRate: rateInput(depositRate, 'depositRate'),
    });
    return { id: merchant.id, api_key: apiKey, api_secret: apiSecret, mode: merchantMode };
  }

  async setStatus(id: number, status: 'active' | 'disabled'): Promise<{ id: number; status: string }> {
    if (!(await this.merchants.setStatus(id, status))) throw new OperatorError(`no merchant ${id}`);
    return { id, status };
  }

  async setNotifyUrl(id: number, url: string): Promise<{ id: number; notify_url: string }> {
    const notifyUrl = httpUrl(url, 'notifyUrl', this.config.callbackAllowPrivate);
    if (!(await this.merchants.update(id, { notifyUrl }))) throw new OperatorError(`no merchant ${id}`);
    return { id, notify_url: notifyUrl };
  }

  async setDepositRate(id: number, value: string): Promise<{ id: number; deposit_rate: string }> {
    const depositRate = rateInput(value, 'depositRate');
    if (!(await this.merchants.update(id, { depositRate }))) throw new OperatorError(`no merchant ${id}`);
    return { id, deposit_rate: depositRate };
  }

  /**
   * A new secret under the same api_key (SPEC 3). The one it replaces keeps verifying requests,
   * and signs callbacks beside the new one, for `grace` ("24h" by default; "0" revokes it at
   * once, for a leaked secret). A secret older than the replaced one stops at once.
   */
  async rotateSecret(id: number, grace?: string): Promise<RotatedCredentials> {
    const graceMs = grace === undefined ? DEFAULT_SECRET_GRACE_MS : parseGrace(grace);
    if (graceMs === null) throw new OperatorInputError('grace', 'must be 0 or a duration such as 30m, 24h or 7d, at most 30d');
    const apiSecret = newApiSecret();
    const rotated = await this.merchants.rotateSecret(id, graceMs, (apiKey, currentEnc) => ({
      currentEnc: this.secrets.seal(apiSecret, merchantSecretContext(apiKey)),
      previousEnc: this.secrets.seal(this.secrets.open(currentEnc, merchantSecretContext(apiKey)), previousMerchantSecretContext(apiKey)),
    }));
    if (!rotated) throw new OperatorError(`no merchant ${id}`);
    return {
      id,
      api_key: rotated.apiKey,
      api_secret: apiSecret,
      mode: rotated.mode,
      previous_secret_valid_until: rotated.previousUntil?.toISOString() ?? null,
    };
  }
}
