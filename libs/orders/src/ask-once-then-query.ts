import type { Logger } from '@nestjs/common';

/** The two states every money-out answer has besides its outcomes: taken, and never received. */
export interface MoneyOutStatus {
  state: string;
}

/** One money-out request (a refund, a payout) as the protocol sees it: what was stored about it, and the channel calls. */
export interface MoneyOutTalk<S extends MoneyOutStatus> {
  /** Names it in logs: `{ refund_no }`, `{ order_no }` (never the payee account). */
  logFields: Record<string, string>;
  /** When we first asked the channel (null: never), and the channel's number once it took the request. */
  requestedAt: Date | null;
  channelNo: string | null;
  ourNo: string;
  ask(): Promise<S>;
  query(): Promise<S>;
  /** Stored before asking: an outcome lost after it (a timeout, a crash) makes the next round query first. */
  markRequested(): Promise<void>;
  /** Stored once the channel took it: never asked for again, only queried. */
  markAccepted(channelNo: string): Promise<void>;
  channelNoOf(status: S): string | null;
  /** The answer "taken, not settled" under the channel's number. */
  processing(channelNo: string): S;
  /** Query once more right after the channel took it, for a channel that settles at once (refunds). */
  confirmWhenTaken: boolean;
}

/**
 * "Ask the channel once, then query" (SPEC 5), the rule refunds and payouts share so money never
 * leaves twice: ask only when never asked, or when the channel says it never got the request; a
 * request whose outcome was lost is queried first, and one the channel took is only queried.
 */
export async function askOnceThenQuery<S extends MoneyOutStatus>(talk: MoneyOutTalk<S>, logger: Logger): Promise<S> {
  if (talk.requestedAt !== null) {
    const known = await talk.query();
    if (known.state === 'processing' && !talk.channelNo) await talk.markAccepted(talk.channelNoOf(known) ?? talk.ourNo);
    if (known.state !== 'not_found') return known;
    if (talk.channelNo) return talk.processing(talk.channelNo);
    logger.warn(talk.logFields, 'the channel never got the earlier request; asking again');
  }
  await talk.markRequested();
  const answer = await talk.ask();
  if (answer.state !== 'processing') return answer;
  // Taken, to be finished by the channel: numbered now, so it is never asked for again.
  await talk.markAccepted(talk.channelNoOf(answer) ?? talk.ourNo);
  if (!talk.confirmWhenTaken) return answer;
  const confirmed = await talk.query();
  return confirmed.state === 'not_found' ? answer : confirmed;
}
