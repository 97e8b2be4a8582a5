import { Injectable, Optional } from '@nestjs/common';
import { parseNotifyUrl } from '@app/common';
import { CallbackToolsRepository, MerchantRepository, OperationsRepository } from '@app/db';
import { type DeliveryView, DestinationGate, admitCallbackJobs, deliveryView, recoverWindow } from '@app/callbacks';
import { JobQueue } from '@app/queue';
import { OperatorError } from './operator-error';
import { OperatorInputError } from './operator-input-error';

/** callback:list --merchant prints at most this many deliveries, newest first. */
export const MERCHANT_DELIVERY_LIMIT = 200;
const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'no_address'];

export interface MerchantDeliveries {
  merchant_id: number;
  status: string | null;
  since: number | null;
  deliveries: {
    delivery_id: string;
    order_no: string;
    event_id: string;
    event: string;
    status: string;
    attempts_made: number;
    destination: string;
    last_error: string | null;
    next_attempt_at: string;
    created_at: string;
    updated_at: string;
  }[];
}

export interface CircuitListing {
  open: {
    merchant_id: number;
    destination: string;
    consecutive_failures: number;
    since: string;
    next_probe_at: string | null;
    last_failure_at: string | null;
    held_deliveries: number;
  }[];
}

export interface CircuitReset {
  merchant_id: number;
  destination: string;
  was_open: boolean;
  released: number;
  /** Held jobs woken at once (the key's free slots); the rest follow as those end. */
  woken: number;
}

/** An operator's view of callbacks across merchants: what failed, which circuits are open, and closing one. */
@Injectable()
export class CallbackOperationsService {
  constructor(
    private readonly operations: OperationsRepository,
    private readonly merchants: MerchantRepository,
    private readonly callbackTools: CallbackToolsRepository,
    // Present when the command runs with the queue (callback:circuit:reset): held jobs are woken at once.
    @Optional() private readonly jobs?: JobQueue,
    @Optional() private readonly gate?: DestinationGate,
  ) {}

  /** callback:list: an order's deliveries with every attempt, newest first, as callbackQueryList shows them to the merchant. */
  async listForOrder(orderNo: string): Promise<{ order_no: string; merchant_id: number; deliveries: DeliveryView[] }> {
    const found = await this.callbackTools.deliveriesOfAnyOrder(orderNo);
    if (!found) throw new OperatorError(`no order ${orderNo}`);
    return { order_no: orderNo, merchant_id: found.merchantId, deliveries: found.deliveries.map(deliveryView) };
  }

  async listForMerchant(merchantId: number, status: string | undefined, since: string | undefined): Promise<MerchantDeliveries> {
    if (status !== undefined && !DELIVERY_STATUSES.includes(status)) throw new OperatorInputError('status', `must be one of ${DELIVERY_STATUSES.join(', ')}`);
    if (since !== undefined && !/^\d{1,12}$/.test(since)) throw new OperatorInputError('since', 'must be Unix seconds');
    if (!(await this.merchants.findById(merchantId))) throw new OperatorError(`no merchant ${merchantId}`);
    const rows = await this.operations.deliveriesOfMerchant(
      merchantId,
      status ?? null,
      since === undefined ? null : new Date(Number(since) * 1000),
      MERCHANT_DELIVERY_LIMIT,
    );
    return {
      merchant_id: merchantId,
      status: status ?? null,
      since: since === undefined ? null : Number(since),
      deliveries: rows.map((d) => ({
        delivery_id: d.id,
        order_no: d.orderNo,
        event_id: d.eventId,
        event: d.event,
        status: d.status,
        attempts_made: d.attemptsMade,
        destination: d.destination,
        last_error: d.lastError,
        next_attempt_at: d.nextAttemptAt.toISOString(),
        created_at: d.createdAt.toISOString(),
        updated_at: d.updatedAt.toISOString(),
      })),
    };
  }

  async openCircuits(): Promise<CircuitListing> {
    return {
      open: (await this.operations.openCircuits()).map((c) => ({
        merchant_id: c.merchantId,
        destination: c.destination,
        consecutive_failures: c.consecutiveFailures,
        since: c.openSince.toISOString(),
        next_probe_at: c.nextProbeAt?.toISOString() ?? null,
        last_failure_at: c.lastFailureAt?.toISOString() ?? null,
        held_deliveries: c.heldDeliveries,
      })),
    };
  }

  /**
   * Closes the circuit as a successful probe would, where the workers read it (the key's gate) and
   * in its mirror: the deliveries it held are admitted up to the key's free slots and their jobs
   * woken; the rest follow as those end.
   */
  async resetCircuit(merchantId: number, destinationOrUrl: string): Promise<CircuitReset> {
    const destination = parseNotifyUrl(destinationOrUrl)?.destination;
    if (!destination) throw new OperatorInputError('destination', 'must be an http or https URL, e.g. https://shop.example:443 as callback:circuits prints it');
    const closed = await this.operations.closeCircuit(merchantId, destination);
    if (!closed) throw new OperatorError(`no circuit for merchant ${merchantId} and ${destination} (callback:circuits lists the open ones)`);
    let released: string[] = [];
    let woken = 0;
    if (this.gate && this.jobs) {
      released = await this.gate.close({ merchantId, destination });
      woken = await admitCallbackJobs(this.gate, this.jobs, { merchantId, destination }, released);
    }
    return { merchant_id: merchantId, destination, was_open: closed.wasOpen, released: released.length, woken };
  }

  /**
   * callback:recover: callbackRecover's rules (the same 7-day window) for an operator, without
   * the merchant's once-a-minute allowance. The new rows are due now; the CLI has no queue, so
   * the workers' maintenance sweep gives them their jobs (within its grace, about a minute).
   */
  async recover(merchantId: number, since: string, until: string | undefined): Promise<{ merchant_id: number; queued: number; delivery_ids: string[] }> {
    const unix = (value: string, name: string): number => {
      if (!/^\d{1,12}$/.test(value)) throw new OperatorInputError(name, 'must be Unix seconds');
      return Number(value);
    };
    const window = recoverWindow(unix(since, 'since'), until === undefined ? undefined : unix(until, 'until'), Math.floor(Date.now() / 1000));
    if ('field' in window)
      throw new OperatorInputError(
        window.field === 'start_time' ? 'since' : 'until',
        window.message.replace(/^(start_time|end_time) /, '').replace('start_time', '`since`'),
      );
    if (!(await this.merchants.findById(merchantId))) throw new OperatorError(`no merchant ${merchantId}`);
    const result = await this.callbackTools.recoverFailed(merchantId, new Date(window.from * 1000), new Date(window.to * 1000 + 999), null);
    const ids = result.kind === 'queued' ? result.deliveryIds : [];
    return { merchant_id: merchantId, queued: ids.length, delivery_ids: ids };
  }
}
