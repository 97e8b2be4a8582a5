import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { isPooled } from '@app/db';
import { createApiApp } from '../apps/api/src/create-api-app';
import { testConfig } from './helpers/config';
import { createTestDatabase } from './helpers/database';
import { removeTestKeys } from './helpers/redis-keys';

/**
 * DATABASE_DIRECT_URL set apart from DATABASE_URL says DATABASE_URL is a transaction pooler: no
 * startup parameter passes there, so the statement limit must be the database's (or role's)
 * default, and the app checks it at start. Shown here on PostgreSQL itself, the pooler stood
 * for by a second spelling of the same URL (.ci/pgbouncer.sh runs the suites through a real one).
 */
describe('DATABASE_URL behind a transaction pooler (SPEC 10)', () => {
  it('refuses to start while the limit in force is not DATABASE_STATEMENT_TIMEOUT_MS, and starts once the database carries it', async () => {
    const direct = await createTestDatabase();
    const env = { DATABASE_DIRECT_URL: `${direct}?application_name=direct`, DATABASE_STATEMENT_TIMEOUT_MS: '45000' };
    const config = testConfig(direct, env);
    expect(config.databasePooled).toBe(true);
    await expect(createApiApp(config)).rejects.toThrow(
      /^DATABASE_STATEMENT_TIMEOUT_MS is 45000 but statements through the pooler at DATABASE_URL run with statement_timeout \d+ ms .*ALTER ROLE <role> IN DATABASE <database> SET statement_timeout = '45000ms'/,
    );

    const admin = new Client({ connectionString: direct });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE "${new URL(direct).pathname.slice(1)}" SET statement_timeout = 45000`);
    } finally {
      await admin.end();
    }
    const app = await createApiApp(config);
    try {
      const db = app.get(DataSource);
      expect(isPooled(db)).toBe(true);
      expect(await db.query(`SELECT current_setting('statement_timeout') AS limit`)).toEqual([{ limit: '45s' }]);
    } finally {
      await app.close();
      await removeTestKeys(config.queuePrefix, direct);
    }
  });
});
