import { type Refusal, RefusalTable } from '../channel-adapter';
import type { ChannelAnswer } from '../channel-http';
import { errorCode, wechatWords } from './wechatpay-wire';

/**
 * What WeChat Pay's answers mean for money (SPEC 6, outcomes a channel did not state), in one
 * place. 2xx is done. A refusal is a signed 4xx whose `code` the API's page lists as a business
 * refusal (the request was not carried out); those lists are below, each with its page. Anything
 * else is unknown and the query decides: 5xx `SYSTEM_ERROR` (the page says retry with the same
 * out_refund_no), 429 `FREQUENCY_LIMITED`, an unsigned 4xx (`SIGN_ERROR` comes unsigned: WeChat
 * signs an answer only once it has verified our request), a signature probe
 * (`WECHATPAY/SIGNTEST/...`), a code a page does not list.
 */

/** 退款申请 (POST /v3/refund/domestic/refunds), 错误码: https://pay.weixin.qq.com/docs/merchant/apis/refund/refunds/create.html */
export const REFUND_REFUSALS = new RefusalTable('pay.weixin.qq.com/docs/merchant/apis/refund/refunds/create.html (错误码)', {
  PARAM_ERROR: '参数错误',
  INVALID_REQUEST: '请求参数符合参数格式，但不符合业务规则',
  NOT_ENOUGH: '余额不足',
  NO_AUTH: '没有退款权限',
  USER_ACCOUNT_ABNORMAL: '退款请求失败 (用户账户异常)',
  MCH_NOT_EXISTS: '商户号不存在',
  RESOURCE_NOT_EXISTS: '订单号不存在',
});

/** 查询单笔退款 status: https://pay.weixin.qq.com/docs/merchant/apis/refund/refunds/query-by-out-refund-no.html (CLOSED: 退款关闭, nothing went back). */
export const REFUND_STATUS_REFUSALS = new RefusalTable('pay.weixin.qq.com/docs/merchant/apis/refund/refunds/query-by-out-refund-no.html (status)', {
  CLOSED: '退款关闭',
});

/**
 * 关闭订单 (POST /v3/pay/transactions/out-trade-no/{no}/close), 错误码:
 * https://pay.weixin.qq.com/docs/merchant/apis/native-payment/close-order.html. ORDER_CLOSED
 * and ORDER_NOT_EXIST leave nothing payable: closed.
 */
export const CLOSE_REFUSALS = new RefusalTable('pay.weixin.qq.com/docs/merchant/apis/native-payment/close-order.html (错误码)', {
  PARAM_ERROR: '参数错误',
  INVALID_REQUEST: '请求参数符合参数格式，但不符合业务规则',
  ORDERPAID: '订单已支付',
  ORDER_PAID: '订单已支付',
  TRADE_ERROR: '交易错误',
});
export const CLOSED_ALREADY = new Set(['ORDER_CLOSED', 'ORDER_NOT_EXIST']);

/** The one shape every call's answer is read into. */
export type WechatAnswerClass = { class: 'done' } | { class: 'refused'; refusal: Refusal } | { class: 'unknown'; words: string };

/** done / refused / unknown of a signed answer (ChannelAnswer that WechatpayAdapter.call verified), by the API's refusal table. */
export function classify(answer: ChannelAnswer, refusals: RefusalTable): WechatAnswerClass {
  if (answer.status >= 200 && answer.status < 300) return { class: 'done' };
  const words = wechatWords(answer);
  const refusal = answer.status >= 400 && answer.status < 500 ? refusals.refusal(errorCode(answer), words) : null;
  return refusal ? { class: 'refused', refusal } : { class: 'unknown', words };
}
