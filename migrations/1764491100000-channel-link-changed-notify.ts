import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every change to a channel row (a disable, a new config, rate or limits) or to a merchant's link
 * to a channel (a link, an unlink, a new rate) is announced on `channel_link_changed`, so each
 * API instance drops its cached copy of the link createOrder reads (NOTIFY is delivered on
 * commit). A TRUNCATE of either table announces '' (forget everything).
 */
export class ChannelLinkChangedNotify1764491100000 implements MigrationInterface {
  name = 'ChannelLinkChangedNotify1764491100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE FUNCTION "channel_link_changed_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'TRUNCATE' THEN
          PERFORM pg_notify('channel_link_changed', '');
        ELSIF TG_TABLE_NAME = 'channels' THEN
          PERFORM pg_notify('channel_link_changed', json_build_object('channel_id', OLD.id)::text);
        ELSIF TG_OP = 'INSERT' THEN
          PERFORM pg_notify('channel_link_changed', json_build_object('merchant_id', NEW.merchant_id, 'channel_id', NEW.channel_id)::text);
        ELSE
          PERFORM pg_notify('channel_link_changed', json_build_object('merchant_id', OLD.merchant_id, 'channel_id', OLD.channel_id)::text);
          IF TG_OP = 'UPDATE' AND (NEW.merchant_id, NEW.channel_id) IS DISTINCT FROM (OLD.merchant_id, OLD.channel_id) THEN
            PERFORM pg_notify('channel_link_changed', json_build_object('merchant_id', NEW.merchant_id, 'channel_id', NEW.channel_id)::text);
          END IF;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER "channels_link_changed" AFTER UPDATE OR DELETE ON "channels"
      FOR EACH ROW EXECUTE FUNCTION "channel_link_changed_notify"()`);
    await q.query(`CREATE TRIGGER "merchant_channels_link_changed" AFTER INSERT OR UPDATE OR DELETE ON "merchant_channels"
      FOR EACH ROW EXECUTE FUNCTION "channel_link_changed_notify"()`);
    await q.query(`CREATE TRIGGER "channels_link_truncated" AFTER TRUNCATE ON "channels"
      FOR EACH STATEMENT EXECUTE FUNCTION "channel_link_changed_notify"()`);
    await q.query(`CREATE TRIGGER "merchant_channels_link_truncated" AFTER TRUNCATE ON "merchant_channels"
      FOR EACH STATEMENT EXECUTE FUNCTION "channel_link_changed_notify"()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER "merchant_channels_link_truncated" ON "merchant_channels"`);
    await q.query(`DROP TRIGGER "channels_link_truncated" ON "channels"`);
    await q.query(`DROP TRIGGER "merchant_channels_link_changed" ON "merchant_channels"`);
    await q.query(`DROP TRIGGER "channels_link_changed" ON "channels"`);
    await q.query(`DROP FUNCTION "channel_link_changed_notify"()`);
  }
}
