import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';

/**
 * A hot path's statement, named, straight on TypeORM's pool and outside any transaction: each
 * connection parses and plans it once, and TypeORM's query runner is skipped. The text names its
 * columns (no `*`), so a column added by a later migration never changes a prepared result type.
 */
export async function preparedQuery<R extends object>(dataSource: DataSource, name: string, text: string, values: unknown[]): Promise<R[]> {
  const pool = (dataSource.driver as unknown as { master: Pool }).master;
  return (await pool.query<R>({ name, text, values })).rows;
}
