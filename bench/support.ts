import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import inspector from 'node:inspector';
import { Socket } from 'node:net';
import { NestFactory } from '@nestjs/core';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { Client, Client as PgClient } from 'pg';
import { loadConfig } from '@app/common';
import { runMigrations } from '@app/db';
import { sign } from '@app/signature';
import { type Credentials, ChannelSetupService, MerchantAccountService, OperatorModule } from '@app/operator';

/** Shared by the createOrder and orderQueryList benchmarks: a throwaway database, a merchant, signed load. */
export const POSTGRES = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';
export const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export async function adminQuery(query: string): Promise<void> {
  const client = new Client({ connectionString: `${POSTGRES}/postgres` });
  await client.connect();
  try {
    await client.query(query);
  } finally {
    await client.end();
  }
}

export interface BenchDatabase {
  name: string;
  url: string;
  env: NodeJS.ProcessEnv;
  /** merchants[0]. */
  merchant: Credentials;
  merchants: Credentials[];
  channelId: number;
  drop(): Promise<void>;
}

/** Deletes every Redis key under `prefix:` (a bench's queues and limits), so a run leaves nothing behind. */
export async function removeRedisPrefix(prefix: string): Promise<number> {
  const redis = new Redis(REDIS);
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) deleted += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}

/** A migrated database of its own, with `merchantCount` merchants linked to one sandbox channel. */
export async function benchDatabase(tag: string, merchantCount = 1): Promise<BenchDatabase> {
  const name = `mp_bench_${tag}_${process.pid}_${randomBytes(3).toString('hex')}`;
  await adminQuery(`CREATE DATABASE "${name}"`);
  const url = `${POSTGRES}/${name}`;
  await runMigrations(url);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: url,
    REDIS_URL: REDIS,
    MASTER_KEY: randomBytes(32).toString('base64'),
    QUEUE_PREFIX: name,
    SANDBOX_ENABLED: 'true',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    // One client sends everything: the per-api_key limit would turn the measurement into 42900s.
    RATE_LIMIT_MERCHANT_PER_SECOND: '1000000',
    RATE_LIMIT_MERCHANT_BURST: '1000000',
  };
  const cli = await NestFactory.createApplicationContext(OperatorModule.forRoot(loadConfig(env)), { logger: false });
  try {
    const merchantAccounts = cli.get(MerchantAccountService);
    const channels = cli.get(ChannelSetupService);
    const { id: channelId } = await channels.create({
      category: 'processor',
      name: 'bench sandbox',
      payMethod: 'alipay,wxpay',
      adapter: 'sandbox',
      rate: '0.006',
    });
    const merchants: Credentials[] = [];
    for (let i = 0; i < merchantCount; i++) {
      const merchant = await merchantAccounts.create({ name: `bench-${tag}-${i}`, mode: 'test' });
      await channels.link(merchant.id, channelId);
      merchants.push(merchant);
    }
    return {
      name,
      url,
      env,
      merchant: merchants[0],
      merchants,
      channelId,
      drop: async () => {
        await adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await removeRedisPrefix(name);
      },
    };
  } finally {
    await cli.close();
  }
}

/** A fresh nonce, the current timestamp and a signature on every request, as a real client sends them. */
export function signedBody(merchant: Pick<Credentials, 'api_key' | 'api_secret'>, params: Record<string, unknown>): string {
  const body: Record<string, unknown> = {
    api_key: merchant.api_key,
    timestamp: Math.floor(Date.now() / 1000),
    nonce: randomBytes(12).toString('hex'),
    ...params,
  };
  body.signature = sign(body, merchant.api_secret);
  return JSON.stringify(body);
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** autocannon POSTing a freshly signed body per request; several ports share the connections evenly. */
export async function signedLoad(port: number | number[], path: string, connections: number, seconds: number, body: () => string): Promise<LoadResult> {
  const result = await autocannon({
    // autocannon 9 takes an array of URLs (lib/url.js ofURL) and spreads connections over them; its types say string.
    url: [port].flat().map((p) => `http://127.0.0.1:${p}`) as unknown as string,
    connections,
    duration: seconds,
    requests: [{ method: 'POST', path, headers: { 'content-type': 'application/json' }, setupRequest: (req) => ({ ...req, body: body() }) }],
  });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors + result.timeouts };
}

export interface Child {
  child: ChildProcess;
  port: number;
  /** Resident memory of the child, in MiB. */
  rss(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Forks `file` with `role` as its argument; the child sends `{port}` once listening and answers
 * the message 'rss' with `{rss}` (see answerRss).
 */
export function forkServer(file: string, role: string, env: NodeJS.ProcessEnv): Promise<Child> {
  // The child's stdout (its log lines) goes to our stderr: our stdout is the result the runner records.
  const child = fork(file, [role], { env, stdio: ['inherit', 2, 2, 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${role} server exited with ${code}`)));
    child.once('message', (m: { port: number }) =>
      resolve({
        child,
        port: m.port,
        rss: () =>
          new Promise((done) => {
            child.once('message', (r: { rss: number }) => done(r.rss / 1024 / 1024));
            child.send('rss');
          }),
        stop: async () => {
          if (child.exitCode !== null) return;
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await exited;
        },
      }),
    );
  });
}

export function answerRss(): void {
  process.on('message', (message) => {
    if (message === 'rss') process.send!({ rss: process.memoryUsage().rss });
  });
}

export interface ServerCost {
  requests: number;
  cpuMs: number;
  pgQueries: number;
  redisCommands: number;
}

/**
 * Counts, in this server process, what it sends PostgreSQL (pg Client.query calls: one round
 * trip each) and Redis (ioredis commands), and its CPU time; the message 'cost' answers the
 * totals so far as `{cost}`. Call before anything connects.
 */
export function countCosts(): { request(): void } {
  const cost: ServerCost = { requests: 0, cpuMs: 0, pgQueries: 0, redisCommands: 0 };
  const pgQuery = PgClient.prototype.query as (...args: unknown[]) => unknown;
  (PgClient.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function (this: PgClient, ...args: unknown[]) {
    cost.pgQueries++;
    return pgQuery.apply(this, args);
  };
  const sendCommand = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
    cost.redisCommands++;
    return sendCommand.apply(this, args);
  };
  process.on('message', (message) => {
    if (message !== 'cost') return;
    const cpu = process.cpuUsage();
    process.send!({ cost: { ...cost, cpuMs: (cpu.user + cpu.system) / 1000 } });
  });
  return { request: () => void cost.requests++ };
}

/**
 * countCosts for this process itself (a worker running in it): PostgreSQL queries and Redis
 * commands sent so far, and the Redis commands by name (a script by the name it was defined
 * under: BullMQ's and the gate's).
 */
export function countHere(): () => { pgQueries: number; redisCommands: number; redisWrites: number; redisByName: Record<string, number> } {
  const cost = { pgQueries: 0, redisCommands: 0, redisWrites: 0 };
  // Writes on this process's sockets to Redis's port: the round trips (a pipeline is one write).
  const redisPort = Number(new URL(REDIS).port || 6379);
  const socketWrite = Socket.prototype.write as (...args: unknown[]) => boolean;
  (Socket.prototype as unknown as { write: (...args: unknown[]) => boolean }).write = function (this: Socket, ...args: unknown[]) {
    if (this.remotePort === redisPort) cost.redisWrites++;
    return socketWrite.apply(this, args);
  };
  const byName: Record<string, number> = {};
  const pgQuery = PgClient.prototype.query as (...args: unknown[]) => unknown;
  (PgClient.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function (this: PgClient, ...args: unknown[]) {
    cost.pgQueries++;
    return pgQuery.apply(this, args);
  };
  const sendCommand = Redis.prototype.sendCommand;
  // A script's name by its sha (or its text, for an EVAL), looked up once: the counting must not cost the worker it measures.
  const scriptNames = new Map<string, string>();
  Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
    cost.redisCommands++;
    const command = args[0] as unknown as { name: string; args: unknown[] };
    let name = command.name;
    if (name === 'evalsha' || name === 'eval') {
      const first = String(command.args[0]);
      let known = scriptNames.get(first);
      if (known === undefined) {
        const scripts = (this as unknown as { scriptsSet?: Record<string, { sha: string; lua: string }> }).scriptsSet ?? {};
        known = Object.entries(scripts).find(([, s]) => s.sha === first || s.lua === first)?.[0] ?? `${name}:${first.slice(0, 8)}`;
        scriptNames.set(first, known);
      }
      name = known;
    }
    byName[name] = (byName[name] ?? 0) + 1;
    return sendCommand.apply(this, args);
  };
  return () => ({ ...cost, redisByName: { ...byName } });
}

export function askCost(child: ChildProcess): Promise<ServerCost> {
  return new Promise((done) => {
    const listen = (m: { cost?: ServerCost }): void => {
      if (!m.cost) return;
      child.off('message', listen);
      done(m.cost);
    };
    child.on('message', listen);
    child.send('cost');
  });
}

export const fmt = (n: number, digits = 0): string => n.toFixed(digits);

/** The whole machine's CPU jiffies so far (/proc/stat), every process's: busy (not idle or iowait) and total; zeros off Linux. */
export function machineCpu(): { busy: number; total: number } {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1, 9).map(Number);
    const total = fields.reduce((a, b) => a + b, 0);
    return { busy: total - fields[3] - fields[4], total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/** CPU time of a process on this machine, in ms, from /proc/<pid>/stat (utime + stime, 100 ticks a second); 0 when unreadable. */
function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

export interface BackendCpu {
  /** PostgreSQL backend pid -> its CPU ms so far. */
  postgres: Map<number, number>;
  redisMs: number;
  loadMs: number;
}

/**
 * The CPU the servers behind a benchmark have spent so far, read from /proc (PostgreSQL and
 * Redis run on this machine): every PostgreSQL backend connected to `database`, the Redis
 * server, and this process (the load generator). backendCpuSpent tells what a run cost them.
 */
export async function backendCpu(database: string): Promise<BackendCpu> {
  const client = new Client({ connectionString: `${POSTGRES}/postgres` });
  const redis = new Redis(REDIS);
  try {
    await client.connect();
    const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]);
    const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1] ?? 0);
    const own = process.cpuUsage();
    return {
      postgres: new Map(rows.map((r) => [r.pid, procCpuMs(r.pid)])),
      redisMs: redisPid ? procCpuMs(redisPid) : 0,
      loadMs: (own.user + own.system) / 1000,
    };
  } finally {
    await client.end();
    redis.disconnect();
  }
}

/** What a run cost between two readings: a backend that ended meanwhile (an idle pool connection closing) is left out, one that started counts whole. */
export function backendCpuSpent(before: BackendCpu, after: BackendCpu): { postgresMs: number; redisMs: number; loadMs: number } {
  let postgresMs = 0;
  for (const [pid, ms] of after.postgres) postgresMs += ms - (before.postgres.get(pid) ?? 0);
  return { postgresMs, redisMs: after.redisMs - before.redisMs, loadMs: after.loadMs - before.loadMs };
}

/** Percent of the machine's CPU (all cores) busy between two machineCpu readings; 'n/a' off Linux. */
export function busyPercent(before: { busy: number; total: number }, after: { busy: number; total: number }): string {
  const total = after.total - before.total;
  return total > 0 ? `${Math.round((100 * (after.busy - before.busy)) / total)}%` : 'n/a';
}

export interface ProfileRow {
  fn: string;
  where: string;
  selfPercent: number;
}

/**
 * Lets the parent CPU-profile this process with node:inspector (the same sampler as
 * `node --cpu-prof`): 'profile-start' starts it, 'profile-stop' answers `{profile}`, the
 * functions with the most self time, summed over every node of the same function.
 */
export function answerProfile(top = 15): void {
  const session = new inspector.Session();
  session.connect();
  const post = (method: string, params?: object): Promise<unknown> =>
    new Promise((done, fail) => session.post(method, params ?? {}, (err, result) => (err ? fail(err) : done(result))));
  process.on('message', (message) => {
    if (message === 'profile-start') {
      void post('Profiler.enable')
        .then(() => post('Profiler.setSamplingInterval', { interval: 200 }))
        .then(() => post('Profiler.start'))
        .then(() => process.send!({ profiling: true }));
    } else if (message === 'profile-stop') {
      void post('Profiler.stop').then((result) => {
        const { profile } = result as { profile: CpuProfile };
        // BENCH_CPUPROFILE=<file>: the whole profile too, for Chrome DevTools or a per-package sum.
        if (process.env.BENCH_CPUPROFILE) writeFileSync(process.env.BENCH_CPUPROFILE, JSON.stringify(profile));
        process.send!({ profile: summarizeProfile(profile, top) });
      });
    }
  });
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

function summarizeProfile(profile: CpuProfile, top: number): ProfileRow[] {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, { fn: string; where: string; us: number }>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const frame = byNode.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    // The profiler's own session (starting and stopping it) is not the process's work.
    if (!frame || frame.url === 'node:inspector') return;
    total += us;
    // Paths relative to the project: node_modules/..., or apps|libs|bench/... of whichever build ran.
    const url = frame.url.replace(/^.*\/node_modules\//, 'node_modules/').replace(/^file:\/\/.*?\/(apps|libs|bench)\//, '$1/');
    const where = frame.url ? `${url}:${frame.lineNumber + 1}` : '(native)';
    const key = `${frame.functionName}@${where}`;
    const row = self.get(key) ?? { fn: frame.functionName || '(anonymous)', where, us: 0 };
    row.us += us;
    self.set(key, row);
  });
  return [...self.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
    .map((r) => ({ fn: r.fn, where: r.where, selfPercent: (100 * r.us) / Math.max(1, total) }));
}

/**
 * Profiles this process itself while `load` runs (the deliveries alone: the worker is in it);
 * BENCH_CPUPROFILE_HERE=<file> keeps the whole profile for DevTools or a per-package sum.
 */
export async function profileHere<T>(load: () => Promise<T>, top = 20): Promise<{ result: T; profile: ProfileRow[] }> {
  const session = new inspector.Session();
  session.connect();
  const post = (method: string, params?: object): Promise<unknown> =>
    new Promise((done, fail) => session.post(method, params ?? {}, (err, result) => (err ? fail(err) : done(result))));
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 200 });
  await post('Profiler.start');
  const result = await load();
  const { profile } = (await post('Profiler.stop')) as { profile: CpuProfile };
  session.disconnect();
  if (process.env.BENCH_CPUPROFILE_HERE) writeFileSync(process.env.BENCH_CPUPROFILE_HERE, JSON.stringify(profile));
  return { result, profile: summarizeProfile(profile, top) };
}

/** Profiles `child` (which called answerProfile) while `load` runs. */
export async function profileWhile(child: ChildProcess, load: () => Promise<unknown>): Promise<ProfileRow[]> {
  const reply = <T>(key: string): Promise<T> =>
    new Promise((done) => {
      const listen = (m: Record<string, unknown>): void => {
        if (!(key in m)) return;
        child.off('message', listen);
        done(m[key] as T);
      };
      child.on('message', listen);
    });
  const started = reply<boolean>('profiling');
  child.send('profile-start');
  await started;
  await load();
  const rows = reply<ProfileRow[]>('profile');
  child.send('profile-stop');
  return rows;
}
