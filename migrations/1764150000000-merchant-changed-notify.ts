import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every change to a merchant row (a disable, a secret rotation, a new rate) is announced on
 * the `merchant_changed` channel with the row's id and api_key, so each API instance drops
 * its cached copy within moments of the commit (NOTIFY is delivered on commit).
 */
export class MerchantChangedNotify1764150000000 implements MigrationInterface {
  name = 'MerchantChangedNotify1764150000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE FUNCTION "merchant_changed_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('merchant_changed', json_build_object('id', OLD.id, 'api_key', OLD.api_key)::text);
        IF TG_OP = 'UPDATE' AND NEW.api_key IS DISTINCT FROM OLD.api_key THEN
          PERFORM pg_notify('merchant_changed', json_build_object('id', NEW.id, 'api_key', NEW.api_key)::text);
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER "merchants_changed" AFTER UPDATE OR DELETE ON "merchants"
      FOR EACH ROW EXECUTE FUNCTION "merchant_changed_notify"()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER "merchants_changed" ON "merchants"`);
    await q.query(`DROP FUNCTION "merchant_changed_notify"()`);
  }
}
