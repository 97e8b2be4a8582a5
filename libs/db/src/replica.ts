import type { DataSource, EntityManager } from 'typeorm';

/**
 * Runs `read` on the read replica (DATABASE_REPLICA_URL) when the DataSource has one, else on the
 * primary: only for the read-only merchant queries that may lag a moment behind a write (the
 * order lists, statements' movements, exports). A lookup that must see what was just written
 * (an order's detail after its create) stays on the primary, the DataSource's default.
 */
export async function onReplica<T>(dataSource: DataSource, read: (em: EntityManager) => Promise<T>): Promise<T> {
  if (!('replication' in dataSource.options) || !dataSource.options.replication) return read(dataSource.manager);
  const runner = dataSource.createQueryRunner('slave');
  try {
    return await read(runner.manager);
  } finally {
    await runner.release();
  }
}
