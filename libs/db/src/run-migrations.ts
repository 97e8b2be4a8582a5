import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source';

/** Applies every pending migration, each in its own transaction; returns the names applied. `databaseUrl` is PostgreSQL itself (DATABASE_DIRECT_URL), never a pooler. */
export async function runMigrations(databaseUrl: string): Promise<string[]> {
  const options = dataSourceOptions(databaseUrl, 1, 'merchant-pay-migrate');
  // No statement limit for a migration, whatever default the role carries for the pooled apps (deploy/pgbouncer/app-role.sql).
  const ds = new DataSource({ ...options, extra: { ...options.extra, options: '-c statement_timeout=0' } } as typeof options);
  await ds.initialize();
  try {
    const applied = await ds.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await ds.destroy();
  }
}
