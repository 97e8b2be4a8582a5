import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
// Relative: jest's globalSetup does not apply moduleNameMapper.
import { dataSourceOptions } from '../../libs/db/src/data-source';

const SERVER_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';
const TEMPLATE = 'mp_test_template';

export function databaseUrl(name: string): string {
  return `${SERVER_URL}/${name}`;
}

async function admin<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: databaseUrl('postgres') });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function dropTestDatabases(): Promise<void> {
  await admin(async (client) => {
    const { rows } = await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'mp\\_test\\_%'`);
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  });
}

/** A fresh database migrated exactly as production is, by the migration files. */
export async function prepareTemplateDatabase(): Promise<void> {
  await dropTestDatabases();
  await admin((client) => client.query(`CREATE DATABASE "${TEMPLATE}"`));
  const ds = new DataSource(dataSourceOptions(databaseUrl(TEMPLATE), 2));
  await ds.initialize();
  try {
    await ds.runMigrations({ transaction: 'each' });
  } finally {
    await ds.destroy();
  }
}

/** A database of its own for one spec file, cloned from the migrated template. */
export async function createTestDatabase(): Promise<string> {
  const name = `mp_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE "${name}" TEMPLATE "${TEMPLATE}"`));
  return databaseUrl(name);
}
