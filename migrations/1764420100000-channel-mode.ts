import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * SPEC 6, live and test mode: an alipay, wechatpay or epay channel may be created in test mode,
 * pointed at the provider's own sandbox; the sandbox adapter is always test. Existing channels
 * keep the mode their adapter gave them. Queries read a sandbox channel as test whatever the
 * column says (channelMode, CHANNEL_MODE_SQL).
 */
export class ChannelMode1764420100000 implements MigrationInterface {
  name = 'ChannelMode1764420100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "channels" ADD COLUMN "mode" varchar(4) NOT NULL DEFAULT 'live' CHECK ("mode" IN ('live', 'test'))`);
    await q.query(`UPDATE "channels" SET "mode" = 'test' WHERE "adapter" = 'sandbox'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "channels" DROP COLUMN "mode"`);
  }
}
