import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Client } from 'pg';
import { runMigrations } from '@app/db';
import { SNAPSHOT_COMMAND, describeSchema, functionDefinitions, snapshotPath } from '../scripts/schema-snapshot';
import { createEmptyTestDatabase } from './helpers/database';

/** The one home of the functions' current bodies. */
const SQL_HOME = join(__dirname, '../libs/db/src/sql');

const CREATE_FUNCTION = /^\s*CREATE\s+(OR\s+REPLACE\s+)?FUNCTION\b/i;

/** Every CREATE FUNCTION text a module of SQL_HOME exports (alone or in a list), each once. */
function currentFunctionSources(): string[] {
  const texts = new Set<string>();
  for (const file of readdirSync(SQL_HOME).filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))) {
    const exported = Object.values(require(join(SQL_HOME, file)) as Record<string, unknown>).flat();
    for (const value of exported) if (typeof value === 'string' && CREATE_FUNCTION.test(value)) texts.add(value);
  }
  return [...texts];
}

/** What to do when libs/db/src/sql and the migrations disagree. */
const SHIP_IT =
  `Ship the change in a new migration that holds the new SQL as literal text in its own file (never an import of ` +
  `libs/db/src/sql), listed in migrations/index.ts; then run \`${SNAPSHOT_COMMAND}\` and commit its diff.`;

/** Runs an assertion; on failure its message starts with what to do about it. */
function explained(what: string, assertion: () => void): void {
  try {
    assertion();
  } catch (err) {
    if (err instanceof Error) err.message = `${what}\n\n${err.message}`;
    throw err;
  }
}

describe('the migrations, replayed on an empty database', () => {
  let db: Client;

  beforeAll(async () => {
    const url = await createEmptyTestDatabase();
    await runMigrations(url);
    db = new Client({ connectionString: url });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
  });

  it(`build the schema in ${relative(process.cwd(), snapshotPath())}, so every schema change is a reviewed diff of it`, async () => {
    const built = await describeSchema(db);
    const snapshot = readFileSync(snapshotPath(), 'utf8');
    explained(
      `The schema the migrations build differs from migrations/schema.snapshot.txt (- the file, + the migrations).\n` +
        `If the migrations are right, regenerate the file with \`${SNAPSHOT_COMMAND}\` and commit it.`,
      () => expect(built).toBe(snapshot),
    );
  });

  it('install exactly the function bodies in libs/db/src/sql, the current source', async () => {
    const sources = currentFunctionSources();
    // Texts are found as exported strings: one built only by an exported function would be missed.
    expect(sources.length).toBeGreaterThan(0);
    const installed = await functionDefinitions(db);
    await db.query('BEGIN');
    try {
      // Files load in name order: a LANGUAGE sql body calling a function of a later file must not fail on it.
      await db.query('SET LOCAL check_function_bodies = off');
      for (const sql of sources) {
        await db.query(sql).catch((err: Error) => {
          const name = /FUNCTION\s+"?(\w+)/i.exec(sql)?.[1];
          throw new Error(`${name} in libs/db/src/sql cannot replace the one the migrations installed (${err.message}).\n${SHIP_IT}`);
        });
      }
      const current = await functionDefinitions(db);
      const drifted = [...current.keys()].filter((name) => current.get(name) !== installed.get(name));
      const texts = (of: Map<string, string>) => drifted.map((name) => of.get(name) ?? `(no ${name})`).join('\n\n');
      explained(`libs/db/src/sql holds bodies no migration installs (- installed, + source): ${drifted.join(', ')}.\n${SHIP_IT}`, () =>
        expect(texts(current)).toBe(texts(installed)),
      );
    } finally {
      await db.query('ROLLBACK');
    }
  });
});
