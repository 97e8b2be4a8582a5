import { DataSource, type DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../../../migrations';
import { ENTITIES } from './entities';

export interface ConnectionShape {
  /**
   * The URL is a transaction pooler (PgBouncer): no startup parameter it would refuse (Debian's
   * 1.18 refuses any it does not know, or drops it when told to ignore it); statement_timeout
   * then comes from the role's default (deploy/pgbouncer/app-role.sql), checked at start.
   */
  pooled?: boolean;
  /** A streaming replica: the read-only merchant queries that ask for it read there (TypeORM's replication, writes and everything else on the primary). */
  replicaUrl?: string | null;
}

/** The one TypeORM configuration: the apps, the CLI, the tests and the TypeORM CLI all use it. */
export function dataSourceOptions(
  databaseUrl: string,
  poolSize = 10,
  applicationName = 'merchant-pay',
  statementTimeoutMs = 0,
  shape: ConnectionShape = {},
): DataSourceOptions {
  // statement_timeout (a startup parameter of each connection): no statement of the apps holds a
  // connection and its locks for ever. Through a pooler, the role's default instead.
  const timeout = statementTimeoutMs > 0 && !shape.pooled ? { statement_timeout: statementTimeoutMs } : {};
  return {
    type: 'postgres',
    ...(shape.replicaUrl
      ? // Every query on the primary unless a query runner asks for the replica ('slave'): a lookup right after a write still finds it.
        { replication: { master: { url: databaseUrl }, slaves: [{ url: shape.replicaUrl }], defaultMode: 'master' as const } }
      : { url: databaseUrl }),
    // pg_stat_activity tells the API's connections from the worker's and the CLI's.
    applicationName,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    // The schema changes only through reviewed migration files.
    synchronize: false,
    migrationsRun: false,
    extra: { max: poolSize, connectionTimeoutMillis: 5000, ...timeout },
  };
}

/** For the TypeORM CLI (`npm run migration:generate`). */
export default new DataSource(dataSourceOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/merchant_pay'));
