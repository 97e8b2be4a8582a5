import { Client, type ClientConfig } from 'pg';

/** Creates database `name` on the server unless it exists, connected as `admin` to its maintenance database. */
export async function createDatabaseIfMissing(admin: ClientConfig, name: string): Promise<void> {
  const client = new Client(admin);
  await client.connect();
  try {
    const { rowCount } = await client.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [name]);
    if (!rowCount) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
}
