import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * order_events may also hold `payment.attempt_failed` (SPEC 5, issue 38): a failed payment attempt
 * is no transition, the order stays payable, and the attempt is kept in its history (no callback).
 * The new rule allows more than the old one, so NOT VALID then VALIDATE checks the existing rows
 * without blocking writes.
 */
export class AttemptFailedEvent1764690000000 implements MigrationInterface {
  name = 'AttemptFailedEvent1764690000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "order_events" DROP CONSTRAINT "order_events_type_check"`);
    await q.query(`ALTER TABLE "order_events" ADD CONSTRAINT "order_events_type_check"
      CHECK ("type" IN ('order.paid', 'order.completed', 'order.cancelled', 'payment.amount_mismatch', 'payment.attempt_failed', 'refund.succeeded', 'refund.failed')) NOT VALID`);
    await q.query(`ALTER TABLE "order_events" VALIDATE CONSTRAINT "order_events_type_check"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM "order_events" WHERE "type" = 'payment.attempt_failed'`);
    await q.query(`ALTER TABLE "order_events" DROP CONSTRAINT "order_events_type_check"`);
    await q.query(`ALTER TABLE "order_events" ADD CONSTRAINT "order_events_type_check"
      CHECK ("type" IN ('order.paid', 'order.completed', 'order.cancelled', 'payment.amount_mismatch', 'refund.succeeded', 'refund.failed'))`);
  }
}
