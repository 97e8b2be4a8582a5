import { type Refusal, RefusalTable } from '../channel-adapter';
import { type AlipayAnswer, alipayWords } from './alipay-wire';

/**
 * What Alipay's answers mean for money (SPEC 6, outcomes a channel did not state), in one place.
 * `10000` is done. A refusal is `40004` (业务处理失败) with a sub_code the method's page lists
 * as "the request was refused; fix it and ask again"; those lists are below, each with its page.
 * Everything else is unknown and the query decides: `ACQ.SYSTEM_ERROR` (the page says "call
 * again with the same parameters", the refund may have been made), `20000`/`isp.*` (service
 * unavailable), `ACQ.DISCORDANT_REPEAT_REQUEST` (an earlier request used this number), gateway
 * errors (`40001`, `40002`, `40006`: usually unsigned, see verifiedAnswer), a code a page does not
 * list. A sub_code missing below leaves a refund processing for an operator, never repaid wrongly.
 */

/** alipay.trade.refund, 业务错误码: https://opendocs.alipay.com/apis/api_1/alipay.trade.refund */
export const REFUND_REFUSALS = new RefusalTable('opendocs.alipay.com/apis/api_1/alipay.trade.refund (业务错误码)', {
  'ACQ.INVALID_PARAMETER': '参数无效',
  'ACQ.SELLER_BALANCE_NOT_ENOUGH': '卖家余额不足',
  'ACQ.REFUND_AMT_NOT_EQUAL_TOTAL': '退款金额超限',
  'ACQ.REASON_TRADE_BEEN_FREEZEN': '请求退款的交易被冻结',
  'ACQ.TRADE_NOT_EXIST': '交易不存在',
  'ACQ.TRADE_HAS_FINISHED': '交易已完结',
  'ACQ.TRADE_STATUS_ERROR': '交易状态非法',
  'ACQ.REASON_TRADE_REFUND_FEE_ERR': '退款金额无效',
  'ACQ.TRADE_NOT_ALLOW_REFUND': '当前交易不允许退款',
  'ACQ.REFUND_FEE_ERROR': '交易退款金额有误',
  'ACQ.ONLINE_TRADE_VOUCHER_NOT_ALLOW_REFUND': '交易已使用过支付宝优惠券，不允许部分退款',
  'ACQ.NOT_ALLOW_PARTIAL_REFUND': '不支持部分退款',
});

/** alipay.trade.close, 业务错误码: https://opendocs.alipay.com/apis/api_1/alipay.trade.close (ACQ.TRADE_NOT_EXIST is a trade never opened: closed). */
export const CLOSE_REFUSALS = new RefusalTable('opendocs.alipay.com/apis/api_1/alipay.trade.close (业务错误码)', {
  'ACQ.INVALID_PARAMETER': '参数无效',
  'ACQ.TRADE_STATUS_ERROR': '交易状态不合法 (paid, finished or closed already)',
});

/** A trade or a refund Alipay has no record of: the query's way of saying it never got the request. */
export const TRADE_NOT_EXIST = 'ACQ.TRADE_NOT_EXIST';

/** The one shape every call's answer is read into. */
export type AlipayAnswerClass = { class: 'done' } | { class: 'refused'; refusal: Refusal } | { class: 'unknown'; words: string };

/** done / refused / unknown of a verified answer, by the method's refusal table. */
export function classify(answer: AlipayAnswer, refusals: RefusalTable): AlipayAnswerClass {
  if (answer.code === '10000') return { class: 'done' };
  const words = alipayWords(answer);
  const refusal = answer.code === '40004' ? refusals.refusal(answer.sub_code, words) : null;
  return refusal ? { class: 'refused', refusal } : { class: 'unknown', words };
}

/**
 * Where Alipay serves bill files: bill_download_url of alipay.data.dataservice.bill.downloadurl.query
 * (https://opendocs.alipay.com/apis/api_15/alipay.data.dataservice.bill.downloadurl.query) is
 * `http://dwbillcenter.alipay.com/downloadBillFile.resource?...`, plain http; its sandbox's the
 * alipaydev host. Nothing else is fetched, whatever a (signed) answer says.
 */
export const ALIPAY_BILL_HOSTS: readonly string[] = ['dwbillcenter.alipay.com', 'dwbillcenter.alipaydev.com'];

/** The same page: "获取连接后30秒后未下载，链接地址失效" (the link works for 30 s). */
export const ALIPAY_BILL_LINK_LIFETIME_MS = 30_000;
