import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

interface Fixture {
  file: string;
  text: string;
}

interface Judged {
  problems: string[];
  formatted: boolean;
}

/** Each fixture as `npm run lint` would judge a file of that text at that path (test/helpers/lint-fixtures.mjs). */
function judge(fixtures: Fixture[]): Judged[] {
  const out = execFileSync(process.execPath, [join(__dirname, 'helpers/lint-fixtures.mjs')], { input: JSON.stringify(fixtures), encoding: 'utf8' });
  return JSON.parse(out) as Judged[];
}

const crossings: [string, string, string, RegExp][] = [
  [
    'a lib importing an app',
    'libs/orders/src/fixture.ts',
    `import { createApiApp } from '../../../apps/api/src/create-api-app';\nexport const a = createApiApp;\n`,
    /A lib never imports an app/,
  ],
  [
    'a lib reaching into another lib by path',
    'libs/orders/src/fixture.ts',
    `import { Order } from '../../db/src/entities';\nexport type A = Order;\n`,
    /Import @app\/db, not a path into it/,
  ],
  [
    'a lib re-exporting another lib by path',
    'libs/orders/src/fixture.ts',
    `export * from '../../common/src/money';\n`,
    /Import @app\/common, not a path into it/,
  ],
  [
    'apps/cli importing apps/embedded',
    'apps/cli/src/fixture.ts',
    `import { claimDataDir } from '../../embedded/src/claim-data-dir';\nexport const a = claimDataDir;\n`,
    /An app does not import another app/,
  ],
  [
    'an app reaching into a lib by path',
    'apps/api/src/fixture.ts',
    `import { Order } from '../../../libs/db/src/entities';\nexport type A = Order;\n`,
    /Import @app\/db, not a path into it/,
  ],
  [
    'a migration importing current source',
    'migrations/1769999999999-fixture.ts',
    `import { SETTLE_ORDER } from '../libs/db/src/sql/settlement-functions';\nexport const a = SETTLE_ORDER;\n`,
    /A migration holds the SQL it ran as literal text/,
  ],
  [
    'a migration requiring a package other than typeorm',
    'migrations/1769999999999-fixture.ts',
    `export const a = require('pg');\n`,
    /A migration holds the SQL it ran as literal text/,
  ],
  ['the PostgreSQL driver outside libs/db', 'apps/api/src/fixture.ts', `import { Client } from 'pg';\nexport const a = Client;\n`, /SQL lives in libs\/db/],
  [
    'raw SQL through TypeORM outside libs/db (lower case: only the call gives it away)',
    'libs/orders/src/fixture.ts',
    `export const a = (ds: { query(s: string): unknown }) => ds.query('select 1');\n`,
    /SQL lives in libs\/db/,
  ],
  [
    'SQL text outside libs/db',
    'apps/worker/src/fixture.ts',
    `export const a = 'UPDATE "orders" SET "status" = $1 WHERE "id" = $2';\n`,
    /SQL lives in libs\/db/,
  ],
];

const allowed: [string, string, string][] = [
  ['a lib importing another by its name', 'libs/orders/src/fixture.ts', `import { Order } from '@app/db';\nexport type A = Order;\n`],
  ['a lib importing its own files', 'libs/orders/src/fixture.ts', `import { OrderLifecycle } from './order-lifecycle';\nexport const a = OrderLifecycle;\n`],
  [
    'the embedded app starting the API',
    'apps/embedded/src/fixture.ts',
    `import { createApiApp } from '../../api/src/create-api-app';\nexport const a = createApiApp;\n`,
  ],
  [
    'a migration importing typeorm and a sibling',
    'migrations/1769999999999-fixture.ts',
    `import type { MigrationInterface } from 'typeorm';\nimport { InitialSchema1763700000000 } from './1763700000000-initial-schema';\nexport const a: MigrationInterface = new InitialSchema1763700000000();\n`,
  ],
  ['SQL in libs/db', 'libs/db/src/fixture.ts', "import { Client } from 'pg';\nexport const a = (c: Client) => c.query(`SELECT 1`);\n"],
  ['a method named query that runs no SQL', 'apps/api/src/fixture.ts', `export const a = (refunds: { query(id: number): unknown }) => refunds.query(1);\n`],
];

const UNFORMATTED: Fixture = { file: 'libs/orders/src/fixture.ts', text: `export const a = {b:1,\n  c:"two"}\n` };
const FORMATTED: Fixture = { file: 'libs/orders/src/fixture.ts', text: `export const a = { b: 1, c: 'two' };\n` };

describe('npm run lint', () => {
  const fixtures: Fixture[] = [...crossings, ...allowed].map(([, file, text]) => ({ file, text }));
  let judged: Judged[];

  beforeAll(() => {
    judged = judge([...fixtures, UNFORMATTED, FORMATTED]);
  });

  it.each(crossings.map((c, i) => [...c, i] as const))('fails on %s, with that one problem', (_case, _file, _text, why, i) => {
    expect(judged[i]).toEqual({ problems: [expect.stringMatching(why)], formatted: true });
  });

  it.each(allowed.map((c, i) => [...c, crossings.length + i] as const))('passes %s', (_case, _file, _text, i) => {
    expect(judged[i]).toEqual({ problems: [], formatted: true });
  });

  it('fails on a file prettier would lay out otherwise (prettier --check), and passes it laid out', () => {
    expect(judged[fixtures.length]).toEqual({ problems: [], formatted: false });
    expect(judged[fixtures.length + 1]).toEqual({ problems: [], formatted: true });
  });
});
