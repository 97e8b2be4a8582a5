import { Injectable } from '@nestjs/common';
import { parseDuration } from '@app/common';
import { CallbackToolsRepository, OperationsRepository } from '@app/db';
import { deliveryView } from '@app/callbacks';
import { OperatorError } from './operator-error';
import { OperatorInputError } from './operator-input-error';

/** order:stuck's default: the lifecycle moves a paid order on within seconds, its sweep re-enqueues one after 5 minutes. */
export const DEFAULT_STUCK_AFTER = '15m';
const STUCK_LIMIT = 100;

const iso = (value: unknown): unknown => (value instanceof Date ? value.toISOString() : value);

function isoFields(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, iso(v)]));
}

/** What an operator asks about one order (order:show) and about orders that stopped moving (order:stuck). */
@Injectable()
export class OrderInspectionService {
  constructor(
    private readonly operations: OperationsRepository,
    private readonly callbackTools: CallbackToolsRepository,
  ) {}

  /** The order, its event timeline, its refunds and payout (the account masked), its ledger lines and its deliveries with attempts. */
  async show(orderNo: string): Promise<object> {
    if (!/^\d{1,22}$/.test(orderNo)) throw new OperatorError('order:show needs an order_no (digits), e.g. order:show 2025112112000012345678');
    const detail = await this.operations.orderDetail(orderNo);
    if (!detail) throw new OperatorError(`no order ${orderNo}`);
    const { id: _id, ...order } = detail.order;
    const deliveries = (await this.callbackTools.deliveriesOfAnyOrder(orderNo))?.deliveries ?? [];
    return {
      order: isoFields(order),
      events: detail.events.map((e) => ({ event_id: e.id, type: e.type, at: e.createdAt.toISOString() })),
      refunds: detail.refunds.map(isoFields),
      payout: detail.payout && isoFields(detail.payout),
      ledger: detail.ledger.map((l) => ({ id: l.id, kind: l.kind, amount_fen: l.amountFen, refund_no: l.refundNo, created_at: l.createdAt.toISOString() })),
      deliveries: deliveries.map(deliveryView),
    };
  }

  async stuck(olderThan: string | undefined): Promise<{ older_than: string; stuck: object[] }> {
    const text = olderThan ?? DEFAULT_STUCK_AFTER;
    const ms = parseDuration(text);
    if (ms === null) throw new OperatorInputError('olderThan', 'must be a duration such as 15m, 2h or 1d');
    const items = await this.operations.stuck(new Date(Date.now() - ms), STUCK_LIMIT);
    return {
      older_than: text,
      stuck: items.map((s) => ({
        kind: s.kind,
        order_no: s.orderNo,
        refund_no: s.refundNo,
        merchant_id: s.merchantId,
        status: s.status,
        since: s.since.toISOString(),
      })),
    };
  }
}
