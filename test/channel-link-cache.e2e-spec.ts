import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Credentials } from '@app/operator';
import { createApiApp } from '../apps/api/src/create-api-app';
import { ChannelLinkCache } from '../apps/api/src/orders/channel-link-cache';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { HEARD_WITHIN_MS, waitFor } from './helpers/callbacks';
import { createOrder, sql } from './helpers/orders';

/**
 * createOrder's channel lookup is cached per API process (ChannelLinkCache) and dropped on
 * `channel_link_changed`: two instances on one database both see a disabled, unlinked, relinked
 * or re-rated channel once it is announced, and neither serves what it could not hear about.
 */
describe('ChannelLinkCache: two API instances see channel and link changes once announced (real PostgreSQL)', () => {
  let api: TestApi;
  let second: NestFastifyApplication;
  let apps: NestFastifyApplication[];
  let merchant: Credentials;
  let channel: number;

  const codeOn = async (app: NestFastifyApplication): Promise<number> =>
    (await createOrder(app, merchant, { cny_amount: '100.00', paychannel_id: channel })).body.code;

  /** Polls both instances until each answers `code`; fails when one still answers otherwise after 1 s. */
  async function bothAnswer(code: number): Promise<void> {
    await Promise.all(apps.map((app, i) => waitFor(async () => (await codeOn(app)) === code, HEARD_WITHIN_MS, `instance ${i} answers ${code} once announced`)));
  }

  beforeAll(async () => {
    api = await startTestApi();
    second = await createApiApp(api.config);
    apps = [api.app, second];
    ({
      merchant,
      channels: { processor: channel },
    } = await merchantWithChannels(api.operator));
    for (const app of apps) expect(app.get(ChannelLinkCache).listening).toBe(true);
  });

  afterAll(async () => {
    await second?.close();
    await api?.close();
  });

  it('serves its cached link until a change is announced: a silent change is not seen, an announced one is', async () => {
    for (const app of apps) expect(await codeOn(app)).toBe(1);
    for (const app of apps) expect(app.get(ChannelLinkCache).size).toBeGreaterThan(0);
    await sql(api.app).transaction(async (em) => {
      await em.query('ALTER TABLE "channels" DISABLE TRIGGER "channels_link_changed"');
      await em.query('UPDATE "channels" SET "enabled" = false WHERE "id" = $1', [channel]);
      await em.query('ALTER TABLE "channels" ENABLE TRIGGER "channels_link_changed"');
    });
    // Cached on both: the unannounced disable is not seen.
    for (const app of apps) expect(await codeOn(app)).toBe(1);
    await api.operator.channels.setEnabled(channel, false);
    await bothAnswer(40301);
    await api.operator.channels.setEnabled(channel, true);
    await bothAnswer(1);
  });

  it('an unlinked channel is refused by both instances once announced, and a relink the same way', async () => {
    for (const app of apps) expect(await codeOn(app)).toBe(1);
    await sql(api.app).query('DELETE FROM "merchant_channels" WHERE "merchant_id" = $1 AND "channel_id" = $2', [merchant.id, channel]);
    await bothAnswer(40301);
    await api.operator.channels.link(merchant.id, channel);
    await bothAnswer(1);
  });

  it("a new rate on the merchant's link is charged by both instances once announced", async () => {
    const serviceOn = async (app: NestFastifyApplication): Promise<number> =>
      (await createOrder(app, merchant, { cny_amount: '100.00', paychannel_id: channel })).body.data.service_amount;
    for (const app of apps) expect(await serviceOn(app)).toBe(60);
    await api.operator.channels.link(merchant.id, channel, '0.01');
    await Promise.all(
      apps.map((app, i) => waitFor(async () => (await serviceOn(app)) === 100, HEARD_WITHIN_MS, `instance ${i} charges the new rate once announced`)),
    );
  });

  it("the notification route's channel row is cached by id, dropped on both instances when the channel changes; a missing one is not kept", async () => {
    for (const app of apps) expect((await app.get(ChannelLinkCache).findChannel(channel))?.enabled).toBe(true);
    await api.operator.channels.setEnabled(channel, false);
    await Promise.all(
      apps.map((app, i) =>
        waitFor(
          async () => (await app.get(ChannelLinkCache).findChannel(channel))?.enabled === false,
          HEARD_WITHIN_MS,
          `instance ${i} reads the disabled channel once announced`,
        ),
      ),
    );
    await api.operator.channels.setEnabled(channel, true);
    await Promise.all(
      apps.map((app, i) =>
        waitFor(
          async () => (await app.get(ChannelLinkCache).findChannel(channel))?.enabled === true,
          HEARD_WITHIN_MS,
          `instance ${i} reads the enabled channel once announced`,
        ),
      ),
    );
    expect(await api.app.get(ChannelLinkCache).findChannel(999_999_999)).toBeNull();
  });

  it('while its listener is down an instance caches nothing and reads every change at once', async () => {
    const cache = second.get(ChannelLinkCache);
    await cache.onApplicationShutdown();
    expect(cache.listening).toBe(false);
    expect(await codeOn(second)).toBe(1);
    await sql(api.app).transaction(async (em) => {
      await em.query('ALTER TABLE "channels" DISABLE TRIGGER "channels_link_changed"');
      await em.query('UPDATE "channels" SET "enabled" = false WHERE "id" = $1', [channel]);
      await em.query('ALTER TABLE "channels" ENABLE TRIGGER "channels_link_changed"');
    });
    expect(await codeOn(second)).toBe(40301);
    await api.operator.channels.setEnabled(channel, true);
    await cache.onModuleInit();
    expect(cache.listening).toBe(true);
    expect(await codeOn(second)).toBe(1);
  });
});
