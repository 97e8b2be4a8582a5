import type { MigrationInterface, QueryRunner } from 'typeorm';
import { SETTLEMENT_FUNCTIONS } from '../libs/db/src/sql/settlement-functions';

/**
 * A top-up's settlement (the move to completed, its events and deliveries, the credit) as one
 * statement, settle_order, and the credit it ends with, credit_order (issue 20): a final payment
 * settles without BEGIN and COMMIT round trips. Their bodies live in
 * libs/db/src/sql/settlement-functions.ts.
 */
export class SettlementFunctions1764523000000 implements MigrationInterface {
  name = 'SettlementFunctions1764523000000';

  async up(q: QueryRunner): Promise<void> {
    for (const fn of SETTLEMENT_FUNCTIONS) await q.query(fn);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION "settle_order"(bigint, varchar[], smallint[], varchar, boolean, varchar, uuid[], varchar[], jsonb[], uuid[])`);
    await q.query(`DROP FUNCTION "credit_order"(integer, bigint, bigint, bigint)`);
  }
}
