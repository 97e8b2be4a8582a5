import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { waitFor } from './callbacks';

/**
 * Redis topologies of Debian's redis-server and redis-sentinel, started by a spec on ports of
 * its own (each in a temporary folder, no persistence), for the Sentinel failover and Cluster
 * tests (SPEC 10). Nothing here touches the shared Redis on 6379.
 */
export interface RedisProcess {
  name: string;
  port: number;
  child: ChildProcess;
  output: () => string;
  exited: Promise<void>;
}

function start(name: string, command: string, args: string[], port: number): RedisProcess {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return { name, port, child, output: () => output, exited };
}

/** A test CA's certificate and one server certificate (for 127.0.0.1) it signed, as PEM files. */
export interface TlsFiles {
  ca: string;
  cert: string;
  key: string;
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(command, args, (err, _out, stderr) => (err ? reject(new Error(`${command} ${args.join(' ')}: ${stderr || err.message}`)) : resolve())),
  );
}

/** A new CA (openssl, EC keys: quick) in `dir`, and a certificate it signed for 127.0.0.1. */
export async function makeTlsFiles(dir: string, name = 'test-redis-ca'): Promise<TlsFiles> {
  mkdirSync(dir, { recursive: true });
  const f = (file: string) => join(dir, file);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', ['req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', `/CN=${name}`]);
  await run('openssl', ['req', ...ec, '-keyout', f('redis.key'), '-out', f('redis.csr'), '-subj', '/CN=127.0.0.1']);
  writeFileSync(f('san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    f('redis.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('redis.crt'),
    '-days',
    '2',
    '-extfile',
    f('san.ext'),
  ]);
  return { ca: f('ca.crt'), cert: f('redis.crt'), key: f('redis.key') };
}

/** The ports this module started TLS-only: redis-cli speaks TLS to them. */
const TLS_PORTS = new Map<number, TlsFiles>();

function tlsCliArgs(port: number): string[] {
  const tls = TLS_PORTS.get(port);
  return tls ? ['--tls', '--cacert', tls.ca] : [];
}

/** A server's or a sentinel's TLS-only settings: no plain-text port, and TLS to its peers too. */
function tlsSettings(port: number, tls: TlsFiles): string[][] {
  return [
    ['port', '0'],
    ['tls-port', String(port)],
    ['tls-cert-file', tls.cert],
    ['tls-key-file', tls.key],
    ['tls-ca-cert-file', tls.ca],
    ['tls-auth-clients', 'no'],
    ['tls-replication', 'yes'],
  ];
}

function cli(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...tlsCliArgs(port), ...args], (err, stdout, stderr) =>
      err ? reject(new Error(`redis-cli -p ${port} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    ),
  );
}

async function answers(port: number): Promise<boolean> {
  return cli(port, 'ping').then(
    (out) => out.trim() === 'PONG',
    () => false,
  );
}

/** Its own sign that it listens (a loaded machine takes a while), or what it said before it exited. */
async function answering(p: RedisProcess): Promise<void> {
  await waitFor(
    () => {
      if (p.child.exitCode !== null) throw new Error(`${p.name} on ${p.port} exited: ${p.output()}`);
      return /Ready to accept connections|Sentinel ID is/.test(p.output()) && answers(p.port);
    },
    60_000,
    `${p.name} on ${p.port} answering`,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${p.output()}`);
  });
}

/** A redis-server with no persistence in `dir`; with `tls`, TLS only (and TLS to its primary and cluster peers). */
async function server(name: string, port: number, dir: string, extra: string[] = [], tls: TlsFiles | null = null): Promise<RedisProcess> {
  const listen = tls ? [...tlsSettings(port, tls), ['tls-cluster', 'yes']].flatMap(([k, v]) => [`--${k}`, v]) : ['--port', String(port)];
  if (tls) TLS_PORTS.set(port, tls);
  const p = start(name, 'redis-server', [...listen, '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', ...extra], port);
  await answering(p);
  return p;
}

export async function stopRedisProcess(p: RedisProcess): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGKILL');
  await p.exited;
}

/** A primary, its replica and three sentinels (quorum 2) watching it under `name`. */
export class SentinelSet {
  readonly servers: RedisProcess[] = [];
  readonly sentinels: RedisProcess[] = [];

  private constructor(
    readonly name: string,
    private readonly dir: string,
  ) {}

  /** Data nodes on `base` and `base + 1`, sentinels on `base + 10..12`; with `tls`, every one TLS only. */
  static async start(base: number, name = 'pay', tls: TlsFiles | null = null): Promise<SentinelSet> {
    const set = new SentinelSet(name, mkdtempSync(join(tmpdir(), 'mp-sentinel-')));
    try {
      set.servers.push(await server('primary', base, set.dir, [], tls));
      set.servers.push(await server('replica', base + 1, set.dir, ['--replicaof', '127.0.0.1', String(base)], tls));
      await waitFor(async () => (await cli(base + 1, 'info', 'replication')).includes('master_link_status:up'), 60_000, 'the replica in sync');
      for (const i of [0, 1, 2]) {
        const port = base + 10 + i;
        const conf = join(set.dir, `sentinel-${port}.conf`);
        // Sentinel rewrites its file (what it learned of replicas and peers): one each, writable.
        writeFileSync(
          conf,
          [
            ...(tls ? tlsSettings(port, tls).map(([k, v]) => `${k} ${v}`) : [`port ${port}`]),
            'bind 127.0.0.1',
            `dir ${set.dir}`,
            `sentinel monitor ${name} 127.0.0.1 ${base} 2`,
            `sentinel down-after-milliseconds ${name} 1000`,
            `sentinel failover-timeout ${name} 5000`,
            `sentinel parallel-syncs ${name} 1`,
            '',
          ].join('\n'),
        );
        if (tls) TLS_PORTS.set(port, tls);
        const s = start(`sentinel-${i}`, 'redis-sentinel', [conf], port);
        set.sentinels.push(s);
        await answering(s);
      }
      // Every sentinel knows the replica and the two other sentinels: a failover can be agreed.
      for (const s of set.sentinels) {
        await waitFor(
          async () => {
            const lines = (await cli(s.port, 'sentinel', 'master', name)).split('\n').map((l) => l.trim());
            const field = (key: string): number => Number(lines[lines.indexOf(key) + 1]);
            return field('num-slaves') >= 1 && field('num-other-sentinels') >= 2;
          },
          60_000,
          `sentinel ${s.port} knowing the replica and its peers`,
        );
      }
    } catch (err) {
      await set.stop();
      throw err;
    }
    return set;
  }

  get sentinelList(): string {
    return this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',');
  }

  /** The port of the primary the sentinels name now. */
  async primaryPort(): Promise<number> {
    const out = (await cli(this.sentinels[0].port, 'sentinel', 'get-master-addr-by-name', this.name)).trim().split('\n');
    return Number(out[1]);
  }

  /** Waits until every sentinel names a primary other than `old` that answers as a primary. */
  async awaitNewPrimary(old: number, timeoutMs = 30_000): Promise<number> {
    return waitFor(
      async () => {
        const named = await Promise.all(
          this.sentinels
            .filter((s) => s.child.exitCode === null)
            .map(async (s) => Number((await cli(s.port, 'sentinel', 'get-master-addr-by-name', this.name)).trim().split('\n')[1])),
        );
        if (!named.every((p) => p === named[0] && p !== old)) return false;
        const role = await cli(named[0], 'role').catch(() => '');
        return role.startsWith('master') ? named[0] : false;
      },
      timeoutMs,
      `the sentinels agreeing on a primary other than ${old}`,
    );
  }

  /** A planned switchover: the sentinels promote the replica and turn the old primary into its replica. */
  async failover(): Promise<void> {
    await cli(this.sentinels[0].port, 'sentinel', 'failover', this.name);
  }

  /** A crash: the data node on `port` is killed without a word. */
  async kill(port: number): Promise<void> {
    const p = this.servers.find((s) => s.port === port);
    if (p) await stopRedisProcess(p);
  }

  /** The replica in sync with the primary on `port` (so a crash after this loses nothing written before). */
  async awaitReplicaOf(primary: number, timeoutMs = 30_000): Promise<void> {
    await waitFor(
      async () => {
        for (const s of this.servers) {
          if (s.port === primary || s.child.exitCode !== null) continue;
          const info = await cli(s.port, 'info', 'replication').catch(() => '');
          if (info.includes(`master_port:${primary}`) && info.includes('master_link_status:up')) return true;
        }
        return false;
      },
      timeoutMs,
      `a replica in sync with ${primary}`,
    );
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.servers].map(stopRedisProcess));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Three primaries, no replicas, the 16384 slots split between them (redis-cli --cluster create). */
export class LocalCluster {
  readonly nodes: RedisProcess[] = [];

  private constructor(
    private readonly dir: string,
    private readonly tls: TlsFiles | null,
  ) {}

  /** Nodes on `base`, `base + 1`, `base + 2` (their cluster bus on port + 10000); with `tls`, TLS only, the bus too. */
  static async start(base: number, tls: TlsFiles | null = null): Promise<LocalCluster> {
    const cluster = new LocalCluster(mkdtempSync(join(tmpdir(), 'mp-cluster-')), tls);
    try {
      for (const i of [0, 1, 2]) {
        const port = base + i;
        const dir = join(cluster.dir, String(port));
        mkdirSync(dir);
        cluster.nodes.push(
          await server(`node-${i}`, port, dir, ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000'], tls),
        );
      }
      await new Promise<void>((resolve, reject) =>
        execFile(
          'redis-cli',
          [...tlsCliArgs(base), '--cluster', 'create', ...cluster.nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'],
          (err, _out, stderr) => (err ? reject(new Error(`redis-cli --cluster create: ${stderr || err.message}`)) : resolve()),
        ),
      );
      for (const n of cluster.nodes) {
        await waitFor(async () => (await cli(n.port, 'cluster', 'info')).includes('cluster_state:ok'), 60_000, `node ${n.port} seeing the cluster ok`);
      }
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  get nodeList(): string {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  }

  /** Every key on every node (KEYS is fine on a test's own small cluster). */
  async keys(): Promise<string[]> {
    const all: string[] = [];
    for (const n of this.nodes) {
      const redis = new Redis({ host: '127.0.0.1', port: n.port, lazyConnect: true, ...(this.tls ? { tls: { ca: readFileSync(this.tls.ca) } } : {}) });
      await redis.connect();
      try {
        all.push(...(await redis.keys('*')));
      } finally {
        redis.disconnect();
      }
    }
    return all;
  }

  /** The port of the node serving `key`'s slot (the others answer MOVED). */
  async ownerOf(key: string): Promise<number> {
    for (const n of this.nodes) if (/^\d+$/.test((await cli(n.port, 'exists', key)).trim())) return n.port;
    throw new Error(`no node serves ${key}`);
  }

  /** A node lost: killed without a word (no replica takes its slots over: the cluster is down once the others agree). */
  async kill(port: number): Promise<void> {
    const n = this.nodes.find((x) => x.port === port);
    if (n) await stopRedisProcess(n);
  }

  /** Waits until the live nodes say cluster_state:fail (node-timeout 2 s, then their agreement). */
  async awaitDown(timeoutMs = 60_000): Promise<void> {
    const live = this.nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
    await waitFor(
      async () => (await Promise.all(live.map((n) => cli(n.port, 'cluster', 'info').catch(() => '')))).every((i) => i.includes('cluster_state:fail')),
      timeoutMs,
      'the cluster down',
    );
  }

  /** How many keys each node holds: a keyspace spread over the nodes, or all in one slot. */
  async keysPerNode(): Promise<number[]> {
    return Promise.all(this.nodes.map(async (n) => Number((await cli(n.port, 'dbsize')).trim())));
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map(stopRedisProcess));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
