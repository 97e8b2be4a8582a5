import { DataSource } from 'typeorm';
import { NonceStore, dataSourceOptions } from '@app/db';
import { newNonce } from './helpers/api';
import { testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';

/** The embedded mode's nonce table (no Redis): the replay and race rules the Redis store is held to. */
describe('NonceStore without Redis (real PostgreSQL)', () => {
  const CONCURRENT = 12;
  let dataSource: DataSource;
  let nonces: NonceStore;

  beforeAll(async () => {
    const url = await createTestDatabase();
    // One connection per concurrent claim, so the claims really race in PostgreSQL.
    dataSource = await new DataSource(dataSourceOptions(url, CONCURRENT)).initialize();
    nonces = new NonceStore(testConfig(url), dataSource);
  });
  afterAll(() => dataSource?.destroy());

  const apiKey = (): string => `mk_${newNonce()}`;

  it('refuses a replay, for that api_key only', async () => {
    const key = apiKey();
    const nonce = newNonce();
    expect(await nonces.claim(key, nonce)).toBe(true);
    expect(await nonces.claim(key, nonce)).toBe(false);
    expect(await nonces.claim(key, nonce)).toBe(false);
    expect(await nonces.claim(apiKey(), nonce)).toBe(true);
    expect(await nonces.claim(key, newNonce())).toBe(true);
  });

  it(`lets exactly one of ${CONCURRENT} concurrent claims of one nonce pass`, async () => {
    for (let round = 0; round < 5; round++) {
      const key = apiKey();
      const nonce = newNonce();
      const claims = await Promise.all(Array.from({ length: CONCURRENT }, () => nonces.claim(key, nonce)));
      expect(claims.filter(Boolean)).toHaveLength(1);
      const [{ n }] = await dataSource.query(`SELECT count(*)::int AS n FROM nonces WHERE api_key = $1 AND nonce = $2`, [key, nonce]);
      expect(n).toBe(1);
    }
  });

  it('lets an expired nonce be used again, once', async () => {
    const key = apiKey();
    const nonce = newNonce();
    expect(await nonces.claim(key, nonce)).toBe(true);
    await dataSource.query(`UPDATE nonces SET expires_at = now() - interval '1 second' WHERE api_key = $1 AND nonce = $2`, [key, nonce]);
    const claims = await Promise.all(Array.from({ length: CONCURRENT }, () => nonces.claim(key, nonce)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await nonces.claim(key, nonce)).toBe(false);
    const [{ live }] = await dataSource.query(`SELECT (expires_at > now()) AS live FROM nonces WHERE api_key = $1 AND nonce = $2`, [key, nonce]);
    expect(live).toBe(true);
  });
});
