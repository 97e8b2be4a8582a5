import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
// Relative: jest's globalSetup does not apply moduleNameMapper.
import { dataSourceOptions } from '../../libs/db/src/data-source';

const SERVER_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';

/**
 * Databases of one jest run are named mp_test_<pid of the run>_...: runs side by side on one
 * server (two terminals, CI beside a developer) never drop each other's databases.
 */
function runPrefix(): string {
  process.env.MP_TEST_RUN ??= String(process.pid);
  return `mp_test_${process.env.MP_TEST_RUN}_`;
}

function templateName(): string {
  return `${runPrefix()}template`;
}

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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** This run's databases, and those of runs whose process is gone (a run killed before its teardown). */
export async function dropTestDatabases(): Promise<void> {
  const mine = runPrefix();
  await admin(async (client) => {
    const { rows } = await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'mp\\_test\\_%'`);
    for (const { datname } of rows) {
      const pid = Number(/^mp_test_(\d+)_/.exec(datname)?.[1]);
      if (datname.startsWith(mine) || !pid || !alive(pid)) {
        await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
      }
    }
  });
}

/** A fresh database migrated exactly as production is, by the migration files. */
export async function prepareTemplateDatabase(): Promise<void> {
  await dropTestDatabases();
  await admin((client) => client.query(`CREATE DATABASE "${templateName()}"`));
  const ds = new DataSource(dataSourceOptions(databaseUrl(templateName()), 2));
  await ds.initialize();
  try {
    await ds.runMigrations({ transaction: 'each' });
  } finally {
    await ds.destroy();
  }
}

/** An empty database (no migration applied), for tests of a migration over existing rows. */
export async function createEmptyTestDatabase(): Promise<string> {
  const name = `${runPrefix()}${randomBytes(4).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE "${name}"`));
  return databaseUrl(name);
}

/** A database of its own for one spec file, cloned from the migrated template. */
export async function createTestDatabase(): Promise<string> {
  const name = `${runPrefix()}${randomBytes(4).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE "${name}" TEMPLATE "${templateName()}"`));
  return databaseUrl(name);
}
