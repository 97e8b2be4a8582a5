import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { type AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { loadConfig } from '@app/common';
import { runMigrations } from '@app/db';
import { createApiApp } from '../../apps/api/src/create-api-app';
import { POSTGRES, REDIS, adminQuery } from '../support';

/**
 * `npm run bench:region`: the real API (its own throwaway database) against a bare node:http
 * server sending the same bytes, each in a process of its own while autocannon runs here.
 * The two alternate in short rounds and the ratio is of their medians: on a shared machine a
 * neighbour's burst then hits both sides instead of one whole measurement. Each server also
 * reports its own CPU time, so the CPU per request compares them even when the load
 * generator or a neighbour is the bottleneck.
 * Env: BENCH_ROUNDS (5), BENCH_SECONDS (4 per round), BENCH_CONNECTIONS (50), BENCH_POSTGRES_URL, REDIS_URL, LOG_LEVEL (silent).
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROUTES = {
  regionData: '/addons/paychannel/channel/processor/regionData',
  cityList: `/addons/paychannel/channel/processor/cityList?province=${encodeURIComponent('广东省')}`,
};
// Headers the bare server copies from the API's answer, so both send the same response apart from x-request-id.
const COPIED_HEADERS = ['content-type', 'etag', 'cache-control', 'vary'];

interface Captured {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** Both servers answer "cpu" with their CPU time so far (user + system, microseconds). */
function reportCpuOnRequest(): void {
  process.on('message', (message) => {
    if (message !== 'cpu') return;
    const usage = process.cpuUsage();
    process.send!({ cpu: usage.user + usage.system });
  });
}

async function serveApi(): Promise<void> {
  reportCpuOnRequest();
  const app = await createApiApp(
    loadConfig({
      ...process.env,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
      // The load comes from one address: the per-IP limit would turn the measurement into 42900s.
      RATE_LIMIT_IP_PER_SECOND: '1000000',
    }),
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.send!({ port: (app.getHttpServer().address() as AddressInfo).port });
}

function serveBare(): void {
  reportCpuOnRequest();
  process.once('message', (answers: Captured[]) => {
    const byPath = new Map(answers.map((a) => [a.path, { headers: a.headers, body: Buffer.from(a.body, 'base64') }]));
    const server = createServer((req, res) => {
      const answer = byPath.get(req.url ?? '');
      if (!answer) return void res.writeHead(404).end();
      res.writeHead(200, { ...answer.headers, 'content-length': answer.body.length });
      res.end(answer.body);
    });
    server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  });
}

interface Server {
  child: ChildProcess;
  port: number;
}

function start(role: 'api' | 'bare', env: NodeJS.ProcessEnv, answers?: Captured[]): Promise<Server> {
  const child = fork(__filename, [role], { env, stdio: 'inherit' });
  if (answers) child.send(answers);
  return new Promise((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve({ child, port: m.port }));
    child.once('exit', (code) => reject(new Error(`${role} server exited with ${code}`)));
  });
}

async function capture(port: number, path: string): Promise<Captured> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { 'accept-encoding': 'identity' } });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${body.toString()}`);
  const headers = Object.fromEntries(COPIED_HEADERS.map((name) => [name, res.headers.get(name) ?? '']));
  return { path, headers, body: body.toString('base64') };
}

interface Measurement {
  rps: number;
  p99: number;
  /** The server's CPU time per answered request, in microseconds. */
  cpuPerRequest: number;
}

function cpuMicros(server: Server): Promise<number> {
  return new Promise((resolve) => {
    const onMessage = (message: { cpu?: number }) => {
      if (message.cpu === undefined) return;
      server.child.off('message', onMessage);
      resolve(message.cpu);
    };
    server.child.on('message', onMessage);
    server.child.send('cpu');
  });
}

/** The round with the median requests/s (its own p99 alongside). */
function median(measurements: Measurement[]): Measurement {
  return [...measurements].sort((x, y) => x.rps - y.rps)[Math.floor(measurements.length / 2)];
}

async function load(server: Server, path: string, seconds: number): Promise<Measurement> {
  const cpuBefore = await cpuMicros(server);
  const result = await autocannon({ url: `http://127.0.0.1:${server.port}${path}`, connections: CONNECTIONS, duration: seconds });
  const cpu = (await cpuMicros(server)) - cpuBefore;
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${path}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return { rps: result.requests.average, p99: result.latency.p99, cpuPerRequest: cpu / result.requests.total };
}

/** The API's queues leave their metadata under QUEUE_PREFIX, which is the database's name here. */
async function dropQueueKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const keys: string[] = [];
    for await (const batch of redis.scanStream({ match: `${prefix}:*`, count: 500 })) keys.push(...(batch as string[]));
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

async function main(): Promise<void> {
  const database = `mp_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  const children: ChildProcess[] = [];
  await adminQuery(`CREATE DATABASE "${database}"`);
  try {
    const databaseUrl = `${POSTGRES}/${database}`;
    await runMigrations(databaseUrl);
    const env = { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: REDIS, MASTER_KEY: randomBytes(32).toString('base64'), QUEUE_PREFIX: database };
    const api = await start('api', env);
    children.push(api.child);
    const answers = await Promise.all(Object.values(ROUTES).map((path) => capture(api.port, path)));
    const bare = await start('bare', env, answers);
    children.push(bare.child);

    console.log(`autocannon, ${CONNECTIONS} connections, identity bodies; ${ROUNDS} alternating rounds of ${SECONDS} s after a 2 s warm-up, medians`);
    console.log('route       | body bytes | Nest+Fastify req/s (p99 ms) | bare node:http req/s (p99 ms) | ratio | server CPU per request, Nest / bare');
    for (const [name, path] of Object.entries(ROUTES)) {
      const size = Buffer.from(answers.find((a) => a.path === path)!.body, 'base64').length;
      const rounds: Record<'api' | 'bare', Measurement[]> = { api: [], bare: [] };
      await load(api, path, 2);
      await load(bare, path, 2);
      for (let round = 0; round < ROUNDS; round++) {
        // Alternate which side goes first, so neither always runs in the other's wake.
        const order = round % 2 === 0 ? (['api', 'bare'] as const) : (['bare', 'api'] as const);
        for (const role of order) rounds[role].push(await load(role === 'api' ? api : bare, path, SECONDS));
      }
      const nest = median(rounds.api);
      const plain = median(rounds.bare);
      const cpu = (role: 'api' | 'bare') => [...rounds[role].map((m) => m.cpuPerRequest)].sort((x, y) => x - y)[Math.floor(ROUNDS / 2)];
      console.log(
        `${name.padEnd(11)} | ${String(size).padStart(10)} | ${nest.rps.toFixed(0).padStart(15)} (${nest.p99}) | ${plain.rps.toFixed(0).padStart(17)} (${plain.p99}) | ${(nest.rps / plain.rps).toFixed(3)} | ${cpu('api').toFixed(0)} µs / ${cpu('bare').toFixed(0)} µs`,
      );
      console.log(`  rounds req/s: Nest ${rounds.api.map((m) => m.rps.toFixed(0)).join(' ')}; bare ${rounds.bare.map((m) => m.rps.toFixed(0)).join(' ')}`);
    }
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((child) => (child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : null)));
    await adminQuery(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await dropQueueKeys(database);
  }
}

const role = process.argv[2];
if (role === 'api') void serveApi();
else if (role === 'bare') serveBare();
else
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
