import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source';

/** Applies every pending migration, each in its own transaction; returns the names applied. */
export async function runMigrations(databaseUrl: string): Promise<string[]> {
  const ds = new DataSource(dataSourceOptions(databaseUrl, 1, 'merchant-pay-migrate'));
  await ds.initialize();
  try {
    const applied = await ds.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await ds.destroy();
  }
}
