import { Injectable } from '@nestjs/common';
import { AppConfig, SecretBox, formatRate, isEmailAddress, merchantSecretContext, parseDuration, parseNotifyUrl, parseRate, parseYuan, previousMerchantSecretContext } from '@app/common';
import {
  CHANNEL_ADAPTERS,
  CHANNEL_CATEGORIES,
  type ChannelAdapterName,
  type ChannelCategory,
  CallbackToolsRepository,
  ChannelRepository,
  LedgerRepository,
  MERCHANT_MODES,
  type MerchantMode,
  MerchantRepository,
  MerchantUserRepository,
  PAY_METHODS,
} from '@app/db';
import { type DeliveryView, deliveryView, recoverWindow, refusedNotifyHost } from '@app/callbacks';
import { channelConfigContext, channelMode, newChannelMode, parseChannelConfig, withGeneratedSecret } from '@app/channels';
import { newApiKey, newApiSecret, newInvitationToken } from './credentials';

/** SPEC 8a: an invitation link works for 24 hours, once. */
export const INVITATION_TTL_SECONDS = 24 * 3600;

export interface Invitation {
  merchant_id: number;
  email: string;
  invitation_url: string;
  expires_at: string;
}

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

/** merchant:rotate-secret's answer: the new secret (shown once) and until when the previous one still verifies. */
export interface RotatedCredentials extends Credentials {
  /** ISO time; null when the previous secret stopped verifying at once (--grace 0). */
  previous_secret_valid_until: string | null;
}

/** A request the service refuses (no such merchant, a link across modes), worded for any front end. */
export class OperatorError extends Error {}

/**
 * A bad input, named by the service's own parameter (`notifyUrl`, `grace`), not by any front
 * end's wording of it: the CLI says its flag (--notify-url), the portal its form field. Another
 * parameter named in the reason is written `like this`, for the front end to word too.
 */
export class OperatorInputError extends OperatorError {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field} ${reason}`);
  }
}

export interface Credentials {
  id: number;
  api_key: string;
  api_secret: string;
  mode: MerchantMode;
}

/** merchant:ledger's answer. */
export interface LedgerListing {
  merchant_id: number;
  entries: { id: string; kind: string; account: string; amount_fen: number; order_no: string; refund_no: string | null; created_at: string }[];
  /** Every entry of the merchant summed per balance (not only those listed). */
  totals: { available_fen: number; deposit_fen: number };
}

export interface NewMerchantInput {
  name: string;
  /** Fixed for the merchant's life; live by default. */
  mode?: string;
  notifyUrl?: string;
  depositRate?: string;
}

export interface NewChannelInput {
  category: string;
  name: string;
  payMethod: string;
  adapter: string;
  rate?: string;
  min?: string;
  max?: string;
  config?: string;
  /** `test` for a provider channel pointed at the provider's own sandbox; the sandbox adapter is always test. */
  mode?: string;
}

function rate(value: string | undefined, name: string): string {
  const parsed = value === undefined ? 0 : parseRate(value);
  if (parsed === null || parsed > 100_000_000) throw new OperatorInputError(name, 'must be a rate from 0 to 1 with at most 8 decimals');
  return formatRate(parsed);
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

/** What the operator CLI does: merchants, channels and links (SPEC 10). */
@Injectable()
export class OperatorService {
  constructor(
    private readonly merchants: MerchantRepository,
    private readonly channels: ChannelRepository,
    private readonly ledger: LedgerRepository,
    private readonly secrets: SecretBox,
    private readonly users: MerchantUserRepository,
    private readonly config: AppConfig,
    private readonly callbackTools: CallbackToolsRepository,
  ) {}

  async createMerchant({ name, mode = 'live', notifyUrl, depositRate }: NewMerchantInput): Promise<Credentials> {
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
      depositRate: rate(depositRate, 'depositRate'),
    });
    return { id: merchant.id, api_key: apiKey, api_secret: apiSecret, mode: merchantMode };
  }

  async setMerchantStatus(id: number, status: 'active' | 'disabled'): Promise<{ id: number; status: string }> {
    if (!(await this.merchants.setStatus(id, status))) throw new OperatorError(`no merchant ${id}`);
    return { id, status };
  }

  async setNotifyUrl(id: number, url: string): Promise<{ id: number; notify_url: string }> {
    const notifyUrl = httpUrl(url, 'notifyUrl', this.config.callbackAllowPrivate);
    if (!(await this.merchants.update(id, { notifyUrl }))) throw new OperatorError(`no merchant ${id}`);
    return { id, notify_url: notifyUrl };
  }

  async setDepositRate(id: number, value: string): Promise<{ id: number; deposit_rate: string }> {
    const depositRate = rate(value, 'depositRate');
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

  async balance(id: number): Promise<{ available_fen: number; deposit_fen: number }> {
    if (!(await this.merchants.findById(id))) throw new OperatorError(`no merchant ${id}`);
    const balance = await this.ledger.balanceOf(id);
    return { available_fen: balance.availableFen, deposit_fen: balance.depositFen };
  }

  /**
   * The merchant's latest ledger entries, newest first (at most `limit`, 1 to 1000), and the sum of
   * all of them per balance: what merchant:balance must show.
   */
  async ledgerEntries(id: number, limit: string | undefined): Promise<LedgerListing> {
    const count = limit === undefined ? 50 : Number(limit);
    if (!/^\d{1,4}$/.test(limit ?? '50') || count < 1 || count > 1000) throw new OperatorInputError('limit', 'must be an integer from 1 to 1000');
    if (!(await this.merchants.findById(id))) throw new OperatorError(`no merchant ${id}`);
    const [entries, totals] = await Promise.all([this.ledger.latest(id, count), this.ledger.totals(id)]);
    return {
      merchant_id: id,
      entries: entries.map((e) => ({
        id: e.id,
        kind: e.kind,
        account: e.account,
        amount_fen: e.amountFen,
        order_no: e.orderNo,
        refund_no: e.refundNo,
        created_at: e.createdAt.toISOString(),
      })),
      totals: { available_fen: totals.available, deposit_fen: totals.deposit },
    };
  }

  async createChannel(input: NewChannelInput): Promise<{ id: number }> {
    if (!(CHANNEL_CATEGORIES as readonly string[]).includes(input.category)) {
      throw new OperatorInputError('category', `must be one of ${CHANNEL_CATEGORIES.join(', ')}`);
    }
    if (!input.name || input.name.length > 128) throw new OperatorInputError('name', 'is required (at most 128 characters)');
    const methods = (input.payMethod ?? '').split(',');
    if (!methods.every((m) => (PAY_METHODS as readonly string[]).includes(m)) || new Set(methods).size !== methods.length) {
      throw new OperatorInputError('payMethod', `must be a comma list of distinct ${PAY_METHODS.join(', ')}`);
    }
    if (!(CHANNEL_ADAPTERS as readonly string[]).includes(input.adapter)) {
      throw new OperatorInputError('adapter', `must be one of ${CHANNEL_ADAPTERS.join(', ')}`);
    }
    const mode = newChannelMode(input.adapter as ChannelAdapterName, input.mode);
    if (!mode) throw new OperatorInputError('mode', input.adapter === 'sandbox' ? 'is refused: the sandbox adapter only moves test money' : 'must be live or test');
    const minFen = parseYuan(input.min ?? '0.01');
    const maxFen = parseYuan(input.max ?? '1000000.00');
    if (minFen === null || minFen <= 0) throw new OperatorInputError('min', 'must be a yuan amount greater than 0');
    if (maxFen === null || maxFen < minFen) throw new OperatorInputError('max', 'must be a yuan amount not below `min`');
    let config;
    try {
      config = parseChannelConfig(JSON.parse(input.config ?? '{}'), { allowHttpGateway: this.config.channelAllowHttp, adapter: input.adapter as ChannelAdapterName });
    } catch (err) {
      throw new OperatorInputError('config', `is refused: ${(err as Error).message}`);
    }
    if (input.adapter === 'sandbox') config = withGeneratedSecret(config);
    const sealed = JSON.stringify(config);
    const channel = await this.channels.create(
      {
        category: input.category as ChannelCategory,
        name: input.name,
        payMethod: methods.join(','),
        adapter: input.adapter as ChannelAdapterName,
        mode,
        minFen,
        maxFen,
        defaultRate: rate(input.rate, 'rate'),
        enabled: true,
      },
      (id) => this.secrets.seal(sealed, channelConfigContext(id)),
    );
    return { id: channel.id };
  }

  async setChannelEnabled(id: number, enabled: boolean): Promise<{ id: number; enabled: boolean }> {
    if (!(await this.channels.setEnabled(id, enabled))) throw new OperatorError(`no channel ${id}`);
    return { id, enabled };
  }

  async link(merchantId: number, channelId: number, linkRate?: string): Promise<{ merchant_id: number; channel_id: number; service_rate: string }> {
    const merchant = await this.merchants.findById(merchantId);
    if (!merchant) throw new OperatorError(`no merchant ${merchantId}`);
    const channel = await this.channels.findById(channelId);
    if (!channel) throw new OperatorError(`no channel ${channelId}`);
    if (channelMode(channel) !== merchant.mode) {
      throw new OperatorError(
        `channel ${channelId} (${channel.adapter}) moves ${channelMode(channel)} money and merchant ${merchantId} is a ${merchant.mode} merchant: ` +
          'sandbox channels link only to test merchants, other channels only to live merchants (merchant:create --mode test|live)',
      );
    }
    const own = linkRate === undefined ? null : rate(linkRate, 'rate');
    await this.channels.link(merchantId, channelId, own);
    return { merchant_id: merchantId, channel_id: channelId, service_rate: own ?? channel.defaultRate };
  }

  /**
   * A link where the person sets a password and becomes a portal user of the merchant. For an
   * existing user of the same merchant it is a password reset (and re-enables a disabled user).
   */
  async inviteUser(merchantId: number, email: string): Promise<Invitation> {
    if (!isEmailAddress(email)) throw new OperatorInputError('email', 'must be an email address of at most 254 characters');
    if (!(await this.merchants.findById(merchantId))) throw new OperatorError(`no merchant ${merchantId}`);
    const existing = await this.users.findByEmail(email);
    if (existing && existing.merchantId !== merchantId) throw new OperatorError(`${email} is already a user of another merchant`);
    const token = newInvitationToken();
    const expiresAt = await this.users.createInvitation(merchantId, existing?.email ?? email, token, INVITATION_TTL_SECONDS);
    return {
      merchant_id: merchantId,
      email: existing?.email ?? email,
      invitation_url: `${this.config.publicBaseUrl}/portal/invite/${token}`,
      expires_at: expiresAt.toISOString(),
    };
  }

  /** Disables the portal user: every session of it ends at once, and its pending invitations stop working. */
  async disableUser(email: string): Promise<{ email: string; status: 'disabled'; sessions_ended: number; invitations_revoked: number }> {
    const result = await this.users.disableByEmail(email);
    if (!result.userFound && result.invitationsRevoked === 0) throw new OperatorError(`no portal user or pending invitation for ${email}`);
    return { email, status: 'disabled', sessions_ended: result.sessionsEnded, invitations_revoked: result.invitationsRevoked };
  }

  /** callback:list: an order's deliveries with every attempt, newest first, as callbackQueryList shows them to the merchant. */
  async callbackList(orderNo: string): Promise<{ order_no: string; merchant_id: number; deliveries: DeliveryView[] }> {
    const found = await this.callbackTools.deliveriesOfAnyOrder(orderNo);
    if (!found) throw new OperatorError(`no order ${orderNo}`);
    return { order_no: orderNo, merchant_id: found.merchantId, deliveries: found.deliveries.map(deliveryView) };
  }

  /**
   * callback:recover: callbackRecover's rules (the same 7-day window) for an operator, without
   * the merchant's once-a-minute allowance. The new rows are due now; the CLI has no queue, so
   * the workers' maintenance sweep gives them their jobs (within its grace, about a minute).
   */
  async callbackRecover(merchantId: number, since: string, until: string | undefined): Promise<{ merchant_id: number; queued: number; delivery_ids: string[] }> {
    const unix = (value: string, name: string): number => {
      if (!/^\d{1,12}$/.test(value)) throw new OperatorInputError(name, 'must be Unix seconds');
      return Number(value);
    };
    const window = recoverWindow(unix(since, 'since'), until === undefined ? undefined : unix(until, 'until'), Math.floor(Date.now() / 1000));
    if ('field' in window) throw new OperatorInputError(window.field === 'start_time' ? 'since' : 'until', window.message.replace(/^(start_time|end_time) /, '').replace('start_time', '`since`'));
    if (!(await this.merchants.findById(merchantId))) throw new OperatorError(`no merchant ${merchantId}`);
    const result = await this.callbackTools.recoverFailed(merchantId, new Date(window.from * 1000), new Date(window.to * 1000 + 999), null);
    const ids = result.kind === 'queued' ? result.deliveryIds : [];
    return { merchant_id: merchantId, queued: ids.length, delivery_ids: ids };
  }

  /** Whether the email has set a password (accepted an invitation): for the embedded demo's banner. */
  async hasPortalUser(email: string): Promise<boolean> {
    return (await this.users.findByEmail(email)) !== null;
  }
}
