import { createSign, createVerify } from 'node:crypto';
import { parseYuan } from '@app/common';
import { type ChannelNotification, ChannelError } from '../channel-adapter';

/**
 * Alipay's wire: the signing content, RSA2, its time format, the signed JSON answers and the
 * form notifications, mapped to and from our types. What a call means is alipay.adapter.ts's;
 * which codes are refusals, alipay-answers.ts's.
 */

export const ALIPAY_GATEWAY = 'https://openapi.alipay.com/gateway.do';

/**
 * Alipay's "content to sign" (SPEC 6, the rule of alipay-sdk's sign and checkNotifySign): every
 * parameter but the skipped ones (sign; and sign_type when verifying a notification), empty values
 * kept as `key=`, sorted by key, `key=value` joined by `&`.
 */
export function alipaySignContent(params: Record<string, unknown>, skip: readonly string[] = ['sign']): string {
  return Object.keys(params)
    .filter((k) => !skip.includes(k) && params[k] !== undefined && params[k] !== null)
    .sort()
    .map((k) => `${k}=${String(params[k])}`)
    .join('&');
}

/** RSA2: SHA256withRSA, base64. */
export function rsa2Sign(content: string, privateKeyPem: string): string {
  return createSign('RSA-SHA256').update(content, 'utf8').sign(privateKeyPem, 'base64');
}

export function rsa2Verify(content: string, signature: unknown, publicKeyPem: string): boolean {
  if (typeof signature !== 'string' || !/^[A-Za-z0-9+/=]{1,1024}$/.test(signature)) return false;
  try {
    return createVerify('RSA-SHA256').update(content, 'utf8').verify(publicKeyPem, signature, 'base64');
  } catch {
    return false;
  }
}

/** Alipay's timestamps are Beijing time, `yyyy-MM-dd HH:mm:ss` (China has no daylight saving). */
export function beijingTime(at: Date): string {
  return new Date(at.getTime() + 8 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * The exact text of one top-level member's value in a JSON object: Alipay signs
 * `"<method>_response"`'s text as it sent it (`\/` escapes included), so parsing and
 * re-serialising would not verify.
 */
export function rawJsonMember(text: string, key: string): string | null {
  const start = text.indexOf(`"${key}"`);
  if (start < 0) return null;
  let i = start + key.length + 2;
  while (i < text.length && /[\s:]/.test(text[i])) i++;
  if (text[i] !== '{') return null;
  let depth = 0;
  let inString = false;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (inString) {
      if (c === '\\') j++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return text.slice(i, j + 1);
  }
  return null;
}

/** One `<method>_response` (or `error_response`) object. */
export interface AlipayAnswer {
  code?: string;
  msg?: string;
  sub_code?: string;
  sub_msg?: string;
  [field: string]: unknown;
}

/** Alipay's own words in an answer (`40004 ACQ.SYSTEM_ERROR 系统错误`), short and printable, for operators. */
export function alipayWords(answer: AlipayAnswer): string {
  const text = [answer.code, answer.sub_code, answer.sub_msg ?? answer.msg].filter((p) => typeof p === 'string' && p).join(' ');
  return `alipay ${text.replace(/\p{Cc}/gu, ' ').slice(0, 200)}`;
}

/** What verifies Alipay's answers: its public key, and in certificate mode the SN of the certificate it is in. */
export interface AlipayVerifier {
  publicKey: string;
  /** Certificate mode: the `alipay_cert_sn` an answer must name (Alipay names the certificate it signed with). */
  certSn: string | null;
}

/**
 * The verified answer object of one call. A gateway error Alipay did not sign (`40002
 * isv.invalid-signature`, `20000` under load) is reported as its code and message, and like any
 * answer that is not 200, not JSON or does not verify, it is a ChannelError: an outcome not stated.
 * In certificate mode an answer naming another certificate (`alipay_cert_sn`: Alipay renewed its
 * certificate) is one too, saying which: the operator downloads it (alipay.open.app.alipaycert.download).
 */
export function verifiedAnswer(method: string, http: { status: number; body: string }, verifier: string | AlipayVerifier): AlipayAnswer {
  const { publicKey: alipayPublicKey, certSn } = typeof verifier === 'string' ? { publicKey: verifier, certSn: null } : verifier;
  if (http.status !== 200) throw new ChannelError(`alipay ${method} answered HTTP ${http.status}`);
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(http.body) as Record<string, unknown>;
  } catch {
    throw new ChannelError(`alipay ${method} answered something other than JSON`);
  }
  const responseKey = `${method.replace(/\./g, '_')}_response`;
  // Errors the gateway raises before the method runs come as error_response (alipay-sdk reads both).
  const key = [responseKey, 'error_response'].find((k) => isObject(parsed?.[k]));
  if (!key) throw new ChannelError(`alipay ${method} answered without ${responseKey}`);
  const answer = parsed[key] as AlipayAnswer;
  if (parsed.sign === undefined || parsed.sign === null || parsed.sign === '') {
    throw new ChannelError(`alipay ${method}: ${alipayWords(answer)} (unsigned answer, outcome unknown)`);
  }
  if (certSn !== null && parsed.alipay_cert_sn !== undefined && parsed.alipay_cert_sn !== certSn) {
    throw new ChannelError(
      `alipay ${method} answered signed with certificate ${String(parsed.alipay_cert_sn).slice(0, 40)}, not config.alipay_cert (${certSn}): download Alipay's current certificate`,
    );
  }
  const text = rawJsonMember(http.body, key);
  if (text === null || !rsa2Verify(text, parsed.sign, alipayPublicKey)) throw new ChannelError(`alipay ${method} answer signature does not verify`);
  return answer;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

export const text = (value: unknown): string | null => (typeof value === 'string' && value ? value : null);

/**
 * What a verified trade_status_sync notification says (SPEC 6). A refund's notice (out_biz_no,
 * refund_fee or gmt_refund: a partial refund keeps TRADE_SUCCESS, a full one is TRADE_CLOSED) is
 * about that refund; TRADE_SUCCESS and TRADE_FINISHED pay; TRADE_CLOSED closes an unpaid trade;
 * anything else (WAIT_BUYER_PAY) is noted. Null when it cannot be read at all.
 */
export function notificationOf(params: Record<string, unknown>): ChannelNotification | null {
  const orderNo = text(params.out_trade_no);
  if (!orderNo) return null;
  const channelTradeNo = text(params.trade_no);
  const amountFen = parseYuan(params.total_amount);
  const refundNo = text(params.out_biz_no);
  if (refundNo && (params.refund_fee !== undefined || params.gmt_refund !== undefined)) {
    return { orderNo, channelTradeNo, amountFen: amountFen ?? 0, outcome: 'noted', refund: { refundNo, outcome: 'succeeded', channelRefundNo: refundNo } };
  }
  switch (params.trade_status) {
    case 'TRADE_SUCCESS':
    case 'TRADE_FINISHED':
      return amountFen === null ? null : { orderNo, channelTradeNo, amountFen, outcome: 'paid' };
    case 'TRADE_CLOSED':
      return { orderNo, channelTradeNo, amountFen: amountFen ?? 0, outcome: 'closed' };
    default:
      return { orderNo, channelTradeNo, amountFen: amountFen ?? 0, outcome: 'noted' };
  }
}
