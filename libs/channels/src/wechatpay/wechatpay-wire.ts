import { createDecipheriv, createSign, randomBytes } from 'node:crypto';
import type { ChannelAnswer } from '../channel-http';

/**
 * WeChat Pay API v3's wire: the Authorization header, the signed answer's message, the
 * AEAD_AES_256_GCM resource and the JSON shapes, mapped to and from our types. What a call
 * means is wechatpay.adapter.ts's; which codes are refusals, wechatpay-answers.ts's.
 */

export const WECHATPAY_GATEWAY = 'https://api.mch.weixin.qq.com';
/** WeChat Pay refuses (and so do we) a signed message older or newer than 5 minutes. */
export const WECHATPAY_CLOCK_SKEW_SECONDS = 300;

/** RFC 3339 in Beijing time, as WeChat Pay writes time_expire: 2026-01-01T12:00:00+08:00. */
export function rfc3339Beijing(at: Date): string {
  return `${new Date(at.getTime() + 8 * 3600_000).toISOString().slice(0, 19)}+08:00`;
}

/** The Authorization header of one API v3 request: RSA-SHA256 of `METHOD\nPATH\nTIMESTAMP\nNONCE\nBODY\n`. */
export function wechatpayAuthorization(
  request: { method: string; path: string; body: string },
  merchant: { mchid: string; serialNo: string; privateKey: string },
  timestamp = Math.floor(Date.now() / 1000),
  nonce = randomBytes(16).toString('hex'),
): string {
  const message = `${request.method}\n${request.path}\n${timestamp}\n${nonce}\n${request.body}\n`;
  const signature = createSign('RSA-SHA256').update(message, 'utf8').sign(merchant.privateKey, 'base64');
  return `WECHATPAY2-SHA256-RSA2048 mchid="${merchant.mchid}",nonce_str="${nonce}",signature="${signature}",timestamp="${timestamp}",serial_no="${merchant.serialNo}"`;
}

/** What WeChat Pay signs in an answer or a notification: `TIMESTAMP\nNONCE\nBODY\n`. */
export function signedMessage(timestamp: string, nonce: string, body: string): string {
  return `${timestamp}\n${nonce}\n${body}\n`;
}

/** AEAD_AES_256_GCM of a notification's resource: the ciphertext's last 16 bytes are the tag. Null when it does not authenticate. */
export function decryptResource(resource: { ciphertext: string; nonce: string; associated_data?: string }, apiV3Key: string): string | null {
  try {
    const data = Buffer.from(resource.ciphertext, 'base64');
    if (data.length < 17) return null;
    const decipher = createDecipheriv('aes-256-gcm', Buffer.from(apiV3Key, 'utf8'), Buffer.from(resource.nonce, 'utf8'));
    decipher.setAuthTag(data.subarray(data.length - 16));
    decipher.setAAD(Buffer.from(resource.associated_data ?? '', 'utf8'));
    return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

export function header(headers: Record<string, string | string[] | undefined>, name: string): string | null {
  const value = headers[name.toLowerCase()];
  return typeof value === 'string' ? value : null;
}

export interface Transaction {
  appid?: unknown;
  mchid?: unknown;
  out_trade_no?: unknown;
  transaction_id?: unknown;
  trade_state?: unknown;
  amount?: { total?: unknown };
}

export interface RefundResource {
  mchid?: unknown;
  out_trade_no?: unknown;
  out_refund_no?: unknown;
  refund_id?: unknown;
  refund_status?: unknown;
  status?: unknown;
  amount?: { refund?: unknown };
}

export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
export const text = (value: unknown): string | null => (typeof value === 'string' && value ? value : null);
export const fen = (value: unknown): number | null => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null);

/** The `code` of an error answer (`{"code": "...", "message": "..."}`), or null. */
export function errorCode(answer: ChannelAnswer): string | null {
  try {
    const parsed = JSON.parse(answer.body) as { code?: unknown };
    return typeof parsed.code === 'string' ? parsed.code : null;
  } catch {
    return null;
  }
}

/** WeChat Pay's own words in an answer (`HTTP 500 SYSTEM_ERROR 系统错误`), short and printable, for operators. */
export function wechatWords(answer: ChannelAnswer): string {
  let detail: string;
  try {
    const parsed = JSON.parse(answer.body) as { code?: unknown; message?: unknown };
    detail = `${String(parsed.code)} ${String(parsed.message ?? '')}`;
  } catch {
    detail = 'no JSON';
  }
  return `wechatpay HTTP ${answer.status} ${detail.replace(/\p{Cc}/gu, ' ').slice(0, 200)}`;
}
