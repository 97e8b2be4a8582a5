import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';

/** The DataSources whose connections go through a transaction pooler (DATABASE_DIRECT_URL set apart from DATABASE_URL). */
const pooled = new WeakSet<DataSource>();

/**
 * Says `dataSource` reaches PostgreSQL through a transaction pooler: each statement may land on
 * another server connection, so none of its statements is named (PgBouncer 1.18 does not carry
 * a named statement from the server connection that parsed it to the next one).
 */
export function markPooled(dataSource: DataSource): DataSource {
  pooled.add(dataSource);
  return dataSource;
}

export function isPooled(dataSource: DataSource): boolean {
  return pooled.has(dataSource);
}

/**
 * A hot path's statement straight on TypeORM's pool and outside any transaction, TypeORM's query
 * runner skipped. On PostgreSQL itself it is named: each connection parses and plans it once.
 * Through a pooler it is unnamed, parsed each time (bench/create-order measures both). The text
 * names its columns (no `*`), so a column added by a later migration never changes a prepared
 * result type.
 */
export async function preparedQuery<R extends object>(dataSource: DataSource, name: string, text: string, values: unknown[]): Promise<R[]> {
  const pool = (dataSource.driver as unknown as { master: Pool }).master;
  return (await pool.query<R>(pooled.has(dataSource) ? { text, values } : { name, text, values })).rows;
}
