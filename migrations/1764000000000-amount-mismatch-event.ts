import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * order_events may also hold `payment.amount_mismatch` (SPEC 6): a verified notification whose
 * amount differs from the order's is kept for reconciliation. The new rule allows more than the
 * old one, so NOT VALID then VALIDATE checks the existing rows without blocking writes.
 */
export class AmountMismatchEvent1764000000000 implements MigrationInterface {
  name = 'AmountMismatchEvent1764000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "order_events" DROP CONSTRAINT "order_events_type_check"`);
    await q.query(`ALTER TABLE "order_events" ADD CONSTRAINT "order_events_type_check"
      CHECK ("type" IN ('order.paid', 'order.completed', 'order.cancelled', 'payment.amount_mismatch')) NOT VALID`);
    await q.query(`ALTER TABLE "order_events" VALIDATE CONSTRAINT "order_events_type_check"`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM "order_events" WHERE "type" = 'payment.amount_mismatch'`);
    await q.query(`ALTER TABLE "order_events" DROP CONSTRAINT "order_events_type_check"`);
    await q.query(`ALTER TABLE "order_events" ADD CONSTRAINT "order_events_type_check" CHECK ("type" IN ('order.paid', 'order.completed', 'order.cancelled'))`);
  }
}
