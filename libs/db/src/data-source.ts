import { DataSource, type DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../../../migrations';
import { ENTITIES } from './entities';

/** The one TypeORM configuration: the apps, the CLI, the tests and the TypeORM CLI all use it. */
export function dataSourceOptions(databaseUrl: string, poolSize = 10, applicationName = 'merchant-pay', statementTimeoutMs = 0): DataSourceOptions {
  return {
    type: 'postgres',
    url: databaseUrl,
    // pg_stat_activity tells the API's connections from the worker's and the CLI's.
    applicationName,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    // The schema changes only through reviewed migration files.
    synchronize: false,
    migrationsRun: false,
    // statement_timeout (a startup parameter of each connection): no statement of the apps holds a connection and its locks for ever.
    extra: { max: poolSize, connectionTimeoutMillis: 5000, ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {}) },
  };
}

/** For the TypeORM CLI (`npm run migration:generate`). */
export default new DataSource(dataSourceOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/merchant_pay'));
