import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
// Relative: jest's globalSetup does not apply moduleNameMapper.
import { dataSourceOptions } from '../../libs/db/src/data-source';

const SERVER_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';

/**
 * Databases of one jest run are named mp_e2e_<run id>_...: a random id set once per run, so runs
 * side by side on one server (two terminals, two clones, two containers sharing a PostgreSQL)
 * never drop each other's databases. A run killed before its teardown leaves its own behind,
 * for a person to drop: no run guesses which other run is dead.
 */
export function testRunId(): string {
  process.env.MP_TEST_RUN ??= randomBytes(6).toString('hex');
  // It names databases and Redis key patterns: nothing that could widen either.
  if (!/^[0-9a-z]{1,24}$/.test(process.env.MP_TEST_RUN))
    throw new Error(`MP_TEST_RUN must be 1-24 lowercase letters or digits, not ${process.env.MP_TEST_RUN}`);
  return process.env.MP_TEST_RUN;
}

function runPrefix(): string {
  return `mp_e2e_${testRunId()}_`;
}

function templateName(): string {
  return `${runPrefix()}template`;
}

export function databaseUrl(name: string): string {
  return `${SERVER_URL}/${name}`;
}

/**
 * TEST_PGBOUNCER_URL (.ci/pgbouncer.sh): a PgBouncer in transaction pooling in front of the test
 * server, whose wildcard entry reaches every database of the run. The apps' DATABASE_URL then
 * goes through it and DATABASE_DIRECT_URL to PostgreSQL itself; fixtures keep the direct URL.
 */
const PGBOUNCER_URL = process.env.TEST_PGBOUNCER_URL || null;

/** The apps' database variables for a spec's database (its direct URL): through PgBouncer when the run has one. */
export function databaseEnv(directUrl: string): { DATABASE_URL: string; DATABASE_DIRECT_URL?: string } {
  if (!PGBOUNCER_URL) return { DATABASE_URL: directUrl };
  const pooled = new URL(directUrl);
  const bouncer = new URL(PGBOUNCER_URL);
  pooled.host = bouncer.host;
  return { DATABASE_URL: pooled.toString(), DATABASE_DIRECT_URL: directUrl };
}

/** Through a pooler the statement limit is the database's default (no startup parameter passes): the apps' own 30 s. */
async function pooledDefaults(client: Client, name: string): Promise<void> {
  if (PGBOUNCER_URL) await client.query(`ALTER DATABASE "${name}" SET statement_timeout = 30000`);
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

/** The names of this run's databases still on the server, the template included. */
export async function testDatabases(): Promise<string[]> {
  const pattern = `${runPrefix().replace(/_/g, '\\_')}%`;
  const { rows } = await admin((client) => client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [pattern]));
  return rows.map((r) => r.datname);
}

/** This run's databases, and no other's. */
export async function dropTestDatabases(): Promise<void> {
  const names = await testDatabases();
  await admin(async (client) => {
    for (const name of names) await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
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
  await admin(async (client) => {
    await client.query(`CREATE DATABASE "${name}"`);
    await pooledDefaults(client, name);
  });
  return databaseUrl(name);
}

/** A database of its own for one spec file, cloned from the migrated template. */
export async function createTestDatabase(): Promise<string> {
  const name = `${runPrefix()}${randomBytes(4).toString('hex')}`;
  await admin(async (client) => {
    await client.query(`CREATE DATABASE "${name}" TEMPLATE "${templateName()}"`);
    await pooledDefaults(client, name);
  });
  return databaseUrl(name);
}
