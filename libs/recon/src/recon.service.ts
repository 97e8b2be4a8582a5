import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { BUY_ORDER, formatYuan } from '@app/common';
import { ChannelAdapters, ChannelError, type ChannelAdapter, type FetchedBill } from '@app/channels';
import { type Channel, ChannelRepository, OrderRepository, ReconRepository, type ReconRunRow, type StoredReconLine } from '@app/db';
import { OrderLifecycle } from '@app/orders';
import { type BillLine, BillRefusedError } from './bill-line';
import { parseBill } from './bills/parse-bill';
import { reconcile } from './matcher';
import { shanghaiDayBounds } from './recon-day';

/** A mistake in what the operator asked (unknown channel, a day that does not exist): no run is made. */
export class ReconInputError extends Error {}

/** A bill supplied by hand (recon:run --file), for a channel whose adapter cannot download one: bytes, never "no bill". */
export type SuppliedBill = Omit<FetchedBill, 'noBill'>;

/** recon:run's answer and the daily job's result: a run with its totals and every line that did not match. */
export interface ReconReport {
  run_id: string;
  channel_id: number;
  date: string;
  status: 'completed' | 'refused';
  /** false when this exact bill had been reconciled before: the earlier run is answered, nothing changed. */
  new_run: boolean;
  bill_format: string;
  bill_sha256: string;
  error: string | null;
  bill_total: string;
  our_total: string;
  fees: string;
  difference: string;
  counts: Record<string, number>;
  mismatches: MismatchView[];
}

export interface MismatchView {
  class: string;
  kind: string;
  order_no: string | null;
  refund_no: string | null;
  channel_trade_no: string | null;
  bill_amount: string | null;
  our_amount: string | null;
  our_status: string | null;
  note: string | null;
  resolution: string | null;
  bill_line_no: number | null;
  bill_line: string | null;
}

const yuan = (fen: number | null): string | null => (fen === null ? null : formatYuan(fen));

/** A bill download may query a whole day of orders (epay): far longer than one channel call. */
const FETCH_TIMEOUT_MS = 10 * 60_000;

/** Resolutions after which a missing_local line is not picked up again by a re-run. */
const FINAL = new Set(['moved_paid', 'moved_late_paid', 'already_moved', 'unknown_order', 'amount_mismatch']);

/**
 * SPEC 6 Reconciliation: fetch a channel's bill of a day, keep it with its SHA-256, classify every
 * line and every movement of ours, store the run, then pick up what the channel took and we did
 * not record, through the order lifecycle exactly as a late notification (one credit, ever).
 */
@Injectable()
export class ReconService {
  private readonly logger = new Logger('Reconciliation');

  constructor(
    private readonly channels: ChannelRepository,
    private readonly adapters: ChannelAdapters,
    private readonly recon: ReconRepository,
    private readonly orders: OrderRepository,
    private readonly lifecycle: OrderLifecycle,
  ) {}

  async run(channelId: number, date: string, supplied: SuppliedBill | null = null): Promise<ReconReport> {
    const day = shanghaiDayBounds(date);
    if (!day) throw new ReconInputError('--date must be a day YYYY-MM-DD');
    const channel = await this.channels.findById(channelId);
    if (!channel) throw new ReconInputError(`no channel ${channelId}`);
    const adapter = this.adapters.forChannel(channel);
    const bill: FetchedBill = supplied ?? (await this.fetch(channel, adapter, date, day));
    const sha256 = createHash('sha256').update(bill.raw).digest('hex');

    let lines: BillLine[];
    try {
      if (bill.noBill)
        this.logger.log(
          { channel_id: channelId, bill_date: date, answer: bill.noBill },
          'reconciliation: the channel has no bill for the day (nothing traded); read as a bill of no lines',
        );
      lines = bill.noBill ? [] : await parseBill(bill.format, bill.raw, bill.digest ?? null);
    } catch (err) {
      if (!(err instanceof BillRefusedError)) throw err;
      const { run } = await this.recon.store({
        channelId,
        billDate: date,
        format: bill.format,
        sha256,
        raw: bill.raw,
        status: 'refused',
        error: err.message,
        totals: null,
        lines: [],
      });
      this.logger.error(
        { channel_id: channelId, bill_date: date, bill_sha256: sha256, run_id: run.id, reason: err.message },
        'reconciliation bill refused, nothing applied',
      );
      // The same bytes read before under another digest: the earlier run stands, this asking is refused.
      return run.status === 'refused' ? this.report(run, false, []) : { ...this.report(run, false, []), status: 'refused', error: err.message, counts: {} };
    }

    const ours = await this.recon.movements(
      channelId,
      day.from,
      day.to,
      lines.filter((l) => l.kind === 'pay').map((l) => l.orderNo),
      lines.flatMap((l) => (l.kind === 'refund' && l.refundNo ? [l.refundNo] : [])),
    );
    const result = reconcile(lines, ours);
    const { run, created } = await this.recon.store({
      channelId,
      billDate: date,
      format: bill.format,
      sha256,
      raw: bill.raw,
      status: 'completed',
      error: null,
      totals: result.totals,
      lines: result.lines,
    });
    let mismatches = await this.recon.linesOf(run.id);
    if (created) {
      for (const line of mismatches) {
        this.logger.warn(
          {
            class: line.class,
            channel_id: channelId,
            bill_date: date,
            run_id: run.id,
            kind: line.kind,
            order_no: line.orderNo,
            refund_no: line.refundNo,
            bill_amount_fen: line.billAmountFen,
            our_amount_fen: line.ourAmountFen,
            bill_line_no: line.billLineNo,
          },
          'reconciliation mismatch',
        );
      }
    }
    const open = mismatches.filter((l) => l.class === 'missing_local' && l.kind === 'pay' && !FINAL.has(l.resolution ?? ''));
    if (open.length > 0) {
      for (const line of open) await this.recon.setResolution(line.id, await this.pickUp(channel, adapter, line));
      mismatches = await this.recon.linesOf(run.id);
    }
    return this.report(run, created, mismatches);
  }

  /** recon:show: every run of the day (all channels unless one is named), each with its mismatches and their bill lines. */
  async show(date: string, channelId: number | null = null): Promise<{ date: string; runs: ReconReport[] }> {
    if (!shanghaiDayBounds(date)) throw new ReconInputError('--date must be a day YYYY-MM-DD');
    const runs = await this.recon.runsOf(date, channelId);
    return { date, runs: await Promise.all(runs.map(async (run) => this.report(run, false, await this.recon.linesOf(run.id)))) };
  }

  private async fetch(channel: Channel, adapter: ChannelAdapter, date: string, day: { from: Date; to: Date }): Promise<FetchedBill> {
    const bills = adapter.bills;
    if (!bills) throw new ReconInputError(`channel ${channel.id} (${channel.adapter}) cannot download its bill: give it with --file and --format`);
    try {
      return await bills.fetchBill(
        {
          date,
          ...day,
          orders: async () =>
            (await this.recon.ordersOfDay(channel.id, day.from, day.to)).map((o) => ({
              orderNo: o.orderNo,
              amountFen: o.amountFen,
              channelTradeNo: o.channelTradeNo,
              paidAt: o.paidAt,
            })),
          refunds: () => this.recon.refundsOfDay(channel.id, day.from, day.to),
        },
        AbortSignal.timeout(FETCH_TIMEOUT_MS),
      );
    } catch (err) {
      this.logger.error({ channel_id: channel.id, bill_date: date, reason: (err as Error).message }, 'reconciliation: the bill could not be fetched');
      throw new ChannelError(`channel ${channel.id}: the bill of ${date} could not be fetched`, { cause: err });
    }
  }

  /**
   * missing_local: ask the channel about the order; if it was paid, move it as a late notification
   * would (markPaid: one conditional update, so a real notification racing this credits once).
   */
  private async pickUp(channel: Channel, adapter: ChannelAdapter, line: StoredReconLine): Promise<string> {
    const order = line.orderNo ? await this.orders.findForChannel(channel.id, line.orderNo) : null;
    if (!order || order.orderType !== BUY_ORDER) return 'unknown_order';
    try {
      const status = await this.adapters.call((signal) =>
        adapter.queryPayment({ orderNo: order.orderNo, amountFen: order.cnyFen, channelTradeNo: order.channelTradeNo, paidAt: order.paidAt }, signal),
      );
      if (status.state !== 'paid') return `channel_says_${status.state}`;
      const result = await this.lifecycle.markPaid(
        order,
        { amountFen: status.amountFen ?? line.billAmountFen ?? order.cnyFen, channelTradeNo: status.channelTradeNo },
        { final: adapter.paidIsFinal },
      );
      const resolution = result === 'paid' ? 'moved_paid' : result === 'late_paid' ? 'moved_late_paid' : result === 'unchanged' ? 'already_moved' : result;
      this.logger.warn({ channel_id: channel.id, order_no: order.orderNo, resolution }, 'reconciliation picked up a payment');
      return resolution;
    } catch (err) {
      if (!(err instanceof ChannelError)) throw err;
      this.logger.warn({ channel_id: channel.id, order_no: order.orderNo, reason: err.message }, 'reconciliation: the query failed, a re-run asks again');
      return 'query_failed';
    }
  }

  private report(run: ReconRunRow, created: boolean, lines: StoredReconLine[]): ReconReport {
    return {
      run_id: run.id,
      channel_id: run.channelId,
      date: run.billDate,
      status: run.status,
      new_run: created,
      bill_format: run.format,
      bill_sha256: run.sha256,
      error: run.error,
      bill_total: formatYuan(run.billTotalFen),
      our_total: formatYuan(run.ourTotalFen),
      fees: formatYuan(run.feeFen),
      difference: formatYuan(run.differenceFen),
      counts: run.counts,
      mismatches: lines.map((l) => ({
        class: l.class,
        kind: l.kind,
        order_no: l.orderNo,
        refund_no: l.refundNo,
        channel_trade_no: l.channelTradeNo,
        bill_amount: yuan(l.billAmountFen),
        our_amount: yuan(l.ourAmountFen),
        our_status: l.ourStatus,
        note: l.note,
        resolution: l.resolution,
        bill_line_no: l.billLineNo,
        bill_line: l.billLine,
      })),
    };
  }
}
