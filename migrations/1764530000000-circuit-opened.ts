import type { MigrationInterface, QueryRunner } from 'typeorm';
import { RECORD_CALLBACK_ATTEMPT } from '../libs/db/src/sql/callback-functions';

const RECORD_SIGNATURE = `"record_callback_attempt"(uuid, integer, text, integer, integer, text, text, text, timestamptz, text, text, integer, integer)`;

/**
 * record_callback_attempt answers circuit_opened too: whether this failure is the one that opened
 * its (merchant, destination) circuit, so the worker logs 'opened' once even when several failures
 * of one key are recorded at once. CREATE OR REPLACE cannot change a result type: dropped first.
 */
export class CircuitOpened1764530000000 implements MigrationInterface {
  name = 'CircuitOpened1764530000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION ${RECORD_SIGNATURE}`);
    await q.query(RECORD_CALLBACK_ATTEMPT);
  }

  async down(): Promise<void> {
    // Kept: the code before this reads the function's columns by name and ignores the added one.
  }
}
