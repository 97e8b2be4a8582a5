import { type Server, type Socket, connect, createServer } from 'node:net';
import { DataSource } from 'typeorm';
import { AppConfig, SecretBox } from '@app/common';
import { MerchantRepository } from '@app/db';
import type { Credentials } from '@app/operator';
import { MerchantCredentialsCache } from '../apps/api/src/auth/merchant-credentials-cache';
import { type TestApi, startTestApi } from './helpers/api';
import { HEARD_WITHIN_MS, sleep, waitFor } from './helpers/callbacks';

/** A TCP relay to PostgreSQL that the test can cut (every connection dropped, new ones refused) and restore. */
class CuttableRelay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((done) => server.listen(this.port, '127.0.0.1', done));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise((done) => server.close(done));
  }
}

describe('MerchantCredentialsCache: invalidated by merchant_changed, bypassed while it cannot hear (real PostgreSQL)', () => {
  let api: TestApi;
  let db: DataSource;
  let relay: CuttableRelay;
  let cache: MerchantCredentialsCache;

  /** A change the trigger does not announce: only a lookup that reads the table can see it. */
  async function silently(sql: string, params: unknown[]): Promise<void> {
    await db.transaction(async (em) => {
      await em.query('ALTER TABLE "merchants" DISABLE TRIGGER "merchants_changed"');
      await em.query(sql, params);
      await em.query('ALTER TABLE "merchants" ENABLE TRIGGER "merchants_changed"');
    });
  }

  const statusOf = async (m: Credentials): Promise<string | undefined> => (await cache.find(m.api_key))?.merchant.status;

  beforeAll(async () => {
    api = await startTestApi();
    db = api.app.get(DataSource);
    const url = new URL(api.databaseUrl);
    relay = new CuttableRelay({ host: url.hostname, port: Number(url.port || 5432) });
    await relay.open();
    // The cache's listener (DATABASE_DIRECT_URL) goes through the relay; its lookups use the app's own pool.
    url.port = String(relay.port);
    const config = new AppConfig({ ...api.config, databaseDirectUrl: url.toString() });
    cache = new MerchantCredentialsCache(config, api.app.get(MerchantRepository), api.app.get(SecretBox));
    cache.listenerTimings = { reconnectMs: 100, pingMs: 200, pingTimeoutMs: 500 };
    await cache.onModuleInit();
    expect(cache.listening).toBe(true);
  });

  afterAll(async () => {
    await cache?.onApplicationShutdown();
    await relay?.cut();
    await api?.close();
  });

  it('keeps serving its copy until a change is announced, then serves the change once announced', async () => {
    const m = await api.operator.merchants.create({ name: 'cached' });
    expect(await statusOf(m)).toBe('active');
    await silently(`UPDATE "merchants" SET "status" = 'disabled' WHERE "id" = $1`, [m.id]);
    // Cached: the unannounced change is not seen.
    expect(await statusOf(m)).toBe('active');

    await api.operator.merchants.setStatus(m.id, 'disabled');
    await waitFor(async () => (await statusOf(m)) === 'disabled', HEARD_WITHIN_MS, 'the disable seen once announced');

    const rotated = await api.operator.merchants.rotateSecret(m.id);
    await waitFor(async () => (await cache.find(m.api_key))?.secrets()[0].secret === rotated.api_secret, HEARD_WITHIN_MS, 'the new secret once announced');
    // The replaced secret stays, second, until its grace ends.
    expect((await cache.find(m.api_key))!.secrets().map((s) => [s.secret, s.untilMs])).toEqual([
      [rotated.api_secret, null],
      [m.api_secret, Date.parse(rotated.previous_secret_valid_until!)],
    ]);
    await api.operator.merchants.rotateSecret(m.id, '0');
    await waitFor(async () => (await cache.find(m.api_key))?.secrets().length === 1, HEARD_WITHIN_MS, 'the revocation once announced');
  });

  it('while the listener is down nothing is cached, so a change it cannot hear is seen at once; once back it caches again', async () => {
    const m = await api.operator.merchants.create({ name: 'while-deaf' });
    expect(await statusOf(m)).toBe('active');
    expect(cache.size).toBeGreaterThan(0);

    await relay.cut();
    await waitFor(() => !cache.listening, 5000, 'the listener noticed the cut');
    expect(cache.size).toBe(0);
    expect(await statusOf(m)).toBe('active');
    await silently(`UPDATE "merchants" SET "status" = 'disabled' WHERE "id" = $1`, [m.id]);
    expect(await statusOf(m)).toBe('disabled');
    expect(cache.size).toBe(0);
    // It keeps trying: still down while the relay is closed.
    // absence check: it does not claim to listen while the relay is still closed
    await sleep(300);
    expect(cache.listening).toBe(false);

    await relay.open();
    await waitFor(() => cache.listening, 5000, 'the listener reconnected');
    expect(await statusOf(m)).toBe('disabled');
    await silently(`UPDATE "merchants" SET "status" = 'active' WHERE "id" = $1`, [m.id]);
    // Cached again: the unannounced change is not seen until announced.
    expect(await statusOf(m)).toBe('disabled');
    await api.operator.merchants.setStatus(m.id, 'active');
    await waitFor(async () => (await statusOf(m)) === 'active', HEARD_WITHIN_MS, 'the enable seen once announced');
  });
});
