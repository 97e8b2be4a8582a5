import { DataSource } from 'typeorm';
import { dataSourceOptions } from '@app/db';
import { createTestDatabase } from './helpers/database';

/**
 * Tables with no entity yet, each with the issue that gives it one. Everything else the migrations
 * create has an entity whose columns are exactly the table's (STYLE: every table has an entity).
 */
const WITHOUT_ENTITY: Record<string, string> = {};

/** Columns an entity does not map yet, likewise. */
const COLUMNS_WITHOUT_FIELD: Record<string, string> = {};

describe('entities and the migrated schema (real PostgreSQL)', () => {
  let dataSource: DataSource;
  beforeAll(async () => {
    dataSource = await new DataSource(dataSourceOptions(await createTestDatabase(), 1)).initialize();
  });
  afterAll(() => dataSource?.destroy());

  it('every table the migrations make has an entity with exactly its columns', async () => {
    const rows: { table_name: string; column_name: string }[] = await dataSource.query(
      `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> 'migrations' ORDER BY table_name, column_name`,
    );
    const tables = new Map<string, string[]>();
    for (const r of rows) {
      if (!(`${r.table_name}.${r.column_name}` in COLUMNS_WITHOUT_FIELD)) tables.set(r.table_name, [...(tables.get(r.table_name) ?? []), r.column_name]);
    }
    const entities = new Map(dataSource.entityMetadatas.map((m) => [m.tableName, m.columns.map((c) => c.databaseName).sort()]));

    const missing = [...tables.keys()].filter((t) => !entities.has(t) && !(t in WITHOUT_ENTITY));
    expect(missing).toEqual([]);
    for (const [table, columns] of entities) expect({ table, columns }).toEqual({ table, columns: tables.get(table) });
    // A table given its entity leaves the list: the list never hides one that has it.
    expect(Object.keys(WITHOUT_ENTITY).filter((t) => entities.has(t) || !tables.has(t))).toEqual([]);
  });

  it("each field declares its column's type, length and nullability as the migrations made them", async () => {
    const rows: { table_name: string; column_name: string; data_type: string; character_maximum_length: number | null; is_nullable: 'YES' | 'NO' }[] =
      await dataSource.query(
        `SELECT table_name, column_name, data_type, character_maximum_length, is_nullable FROM information_schema.columns WHERE table_schema = 'public'`,
      );
    const schema = new Map(
      rows.map((r) => [`${r.table_name}.${r.column_name}`, { type: r.data_type, length: r.character_maximum_length, nullable: r.is_nullable === 'YES' }]),
    );
    for (const m of dataSource.entityMetadatas) {
      for (const c of m.columns) {
        const column = `${m.tableName}.${c.databaseName}`;
        const declared = { type: dataSource.driver.normalizeType(c), length: c.length ? Number(c.length) : null, nullable: c.isNullable };
        expect({ column, ...declared }).toEqual({ column, ...schema.get(column) });
      }
    }
  });

  it('reads and writes a portal user, an invitation, a session and the sign-in throttle through their entities', async () => {
    const [{ id: merchantId }] = await dataSource.query(
      `INSERT INTO merchants (name, api_key, api_secret_enc) VALUES ('m', 'mk_test_entities', 'x') RETURNING id`,
    );
    const user = await dataSource.getRepository('PortalUser').save({ merchantId, email: 'a@shop.test', passwordHash: 'scrypt$...' });
    expect(user).toMatchObject({ id: expect.any(Number), status: 'active' });
    await dataSource.getRepository('PortalSession').insert({ idHash: 'a'.repeat(64), userId: user.id, expiresAt: new Date(Date.now() + 60_000) });
    await dataSource.getRepository('MerchantUserInvitation').insert({ merchantId, email: 'b@shop.test', tokenHash: 'b'.repeat(64), expiresAt: new Date() });
    await dataSource.getRepository('SignInFailure').insert({ email: 'a@shop.test' });
    await dataSource.getRepository('SignInLock').insert({ email: 'a@shop.test', lockedUntil: new Date() });
    const [counts] = await dataSource.query(
      `SELECT (SELECT count(*)::int FROM portal_sessions WHERE user_id = $1) AS sessions, (SELECT count(*)::int FROM merchant_user_invitations) AS invitations,
              (SELECT count(*)::int FROM portal_sign_in_failures) AS failures, (SELECT count(*)::int FROM portal_sign_in_locks) AS locks`,
      [user.id],
    );
    expect(counts).toEqual({ sessions: 1, invitations: 1, failures: 1, locks: 1 });
  });
});
