import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { DestinationGate, type GateKey } from '@app/callbacks';
import { RETRY_POLICY } from '@app/common';
import { forkServer, removeRedisPrefix } from '../support';

/**
 * `npm run bench:skeletons`: the Redis and BullMQ part of
 * a delivery's path alone, in the shapes a design could take, against bare undici POSTs measured
 * in the same run (RESULTS.md, issue 36). No PostgreSQL, no signing: what each shape costs before
 * the record. N deliveries of one (merchant, destination) key with C slots, C concurrent jobs,
 * each delivery a POST of a callback-sized body to a receiver in a process of its own (the one
 * bench:callbacks forks), a nonce SET each as the real worker spends:
 *  - floor: a job per delivery, all added at once, a plain Worker: BullMQ alone;
 *  - parked: today's shape: the key's first C get jobs, the rest parked (delayed) jobs that join
 *    the key's line; each job takes its slot (the real DestinationGate's TAKE), gives it back
 *    (GIVE) and promotes the parked job of whoever GIVE admitted;
 *  - drain K: the line holds the deliveries without jobs; a job that gives its slot back sends the
 *    delivery GIVE admitted in the same run, up to K per run, then adds a job for the next one
 *    (so a key holds a worker's concurrency for at most K sends before BullMQ's FIFO turns).
 * Env: SKELETON_N (2000), SKELETON_C (32), SKELETON_K (4,16), SKELETON_RUNS (2), REDIS_URL.
 */
const N = Number(process.env.SKELETON_N ?? 2000);
const C = Number(process.env.SKELETON_C ?? 32);
const KS = (process.env.SKELETON_K ?? '4,16').split(',').filter(Boolean).map(Number);
const RUNS = Number(process.env.SKELETON_RUNS ?? 2);
const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const KEEP = { attempts: 10, removeOnComplete: RETRY_POLICY.delivery.removeOnComplete, removeOnFail: RETRY_POLICY.delivery.removeOnFail };
const PARKED_MS = 24 * 3_600_000;
const body = JSON.stringify({ event_id: 'x'.repeat(36), event: 'bench.skeleton', order_no: '0'.repeat(22), pad: 'x'.repeat(400) });

interface Shape {
  /** Adds the deliveries (their ids) and answers what a job does with the id it carries. */
  prepare(ids: string[], queue: Queue): Promise<(id: string, queue: Queue) => Promise<void>>;
}

async function main(): Promise<void> {
  const receiver = await forkServer(require.resolve('./run'), 'receiver', process.env);
  const url = `http://127.0.0.1:${receiver.port}/notify`;
  const agent = new Agent({ keepAliveTimeout: 4000 });
  const post = async (): Promise<void> => {
    const res = await request(url, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: agent });
    await res.body.text();
  };
  const redis = new Redis(REDIS, { enableAutoPipelining: true, maxRetriesPerRequest: null });
  const prefix = `mp-skeleton-${randomBytes(4).toString('hex')}`;
  const gate = new DestinationGate({ limit: C, leaseMs: 60_000, failures: 1_000_000, probeMs: 60_000 }, redis, prefix);
  const nonce = (): Promise<unknown> => redis.set(`${prefix}:nonce:${randomBytes(12).toString('hex')}`, '1', 'PX', 300_000, 'NX');
  let sent = 0;
  const send = async (): Promise<void> => {
    await nonce();
    await post();
    sent++;
  };

  const floor: Shape = {
    async prepare(ids, queue) {
      await queue.addBulk(ids.map((id) => ({ name: 'd', data: { id }, opts: { ...KEEP, jobId: id } })));
      return () => send();
    },
  };
  const parked = (key: GateKey): Shape => ({
    async prepare(ids, queue) {
      const answers = await gate.enlist(key, ids);
      const run = ids.filter((_, i) => answers[i].kind === 'run');
      const wait = ids.filter((_, i) => answers[i].kind !== 'run');
      await queue.addBulk(run.map((id) => ({ name: 'd', data: { id }, opts: { ...KEEP, jobId: id } })));
      await queue.addBulk(wait.map((id) => ({ name: 'd', data: { id }, opts: { ...KEEP, jobId: id, delay: PARKED_MS } })));
      for (let i = 0; i < wait.length; i += 1000) await gate.lineUp(key, wait.slice(i, i + 1000));
      return async (id, q) => {
        await gate.take(key, id);
        await send();
        const released = await gate.give(key, id, 'success', false);
        for (const next of released.admitted) await q.backend.promote(next);
      };
    },
  });
  const drain = (key: GateKey, k: number): Shape => ({
    async prepare(ids, queue) {
      const answers = await gate.enlist(key, ids, { parked: true });
      const run = ids.filter((_, i) => answers[i].kind === 'run');
      await queue.addBulk(run.map((id) => ({ name: 'd', data: { id }, opts: { ...KEEP, jobId: id } })));
      return async (first, q) => {
        await gate.take(key, first);
        let id = first;
        for (let n = 1; ; n++) {
          await send();
          const { admitted } = await gate.give(key, id, 'success', false);
          if (admitted.length === 0) return;
          // Past K sends (or more than one admitted): the others get jobs, BullMQ's FIFO turns.
          const inline = n < k ? admitted.shift()! : null;
          if (admitted.length > 0) await q.addBulk(admitted.map((next) => ({ name: 'd', data: { id: next }, opts: { ...KEEP, jobId: next } })));
          if (inline === null) return;
          id = inline;
        }
      };
    },
  });

  const measure = async (name: string, shape: Shape): Promise<number> => {
    const queueName = `skeleton-${name.replace(/\W/g, '')}-${randomBytes(3).toString('hex')}`;
    const connection = { url: REDIS, maxRetriesPerRequest: null };
    const queue = new Queue(queueName, { connection, prefix });
    const ids = Array.from({ length: N }, (_, i) => `${queueName}-${i}`);
    sent = 0;
    let finished!: () => void;
    const all = new Promise<void>((resolve) => (finished = resolve));
    const started = performance.now();
    const work = await shape.prepare(ids, queue);
    const worker = new Worker(
      queueName,
      async (job) => {
        await work((job.data as { id: string }).id, queue);
        if (sent >= N) finished();
      },
      { connection, prefix, concurrency: C },
    );
    await all;
    const rate = N / ((performance.now() - started) / 1000);
    await worker.close();
    await queue.close();
    return rate;
  };
  const bare = async (): Promise<number> => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: C }, async () => {
        while (next++ < N) await post();
      }),
    );
    return N / ((performance.now() - started) / 1000);
  };

  // A bare loop first, not counted: the receiver's and the client's code warm, their connections open.
  await bare();
  const rows: Record<string, number | string>[] = [];
  for (let run = 0; run < RUNS; run++) {
    const key = (shape: string): GateKey => ({ merchantId: run + 1, destination: `http://skeleton-${shape}:80` });
    const row: Record<string, number | string> = { run: run + 1 };
    const shapes: [string, Shape][] = [
      ['floor', floor],
      ['parked', parked(key('parked'))],
      ...KS.map((k): [string, Shape] => [`drain_${k}`, drain(key(`drain${k}`), k)]),
    ];
    // Each shape against a bare loop measured just before it: the machine's noise moves both alike.
    for (const [name, shape] of shapes) {
      const b = await bare();
      const rate = await measure(name, shape);
      row[name] = `${Math.round(rate)}/s, ${(rate / b).toFixed(3)}x of ${Math.round(b)} bare POSTs/s`;
    }
    rows.push(row);
  }
  process.stdout.write(`${JSON.stringify({ deliveries: N, slots: C, runs: rows }, null, 2)}\n`);
  await agent.close();
  await receiver.stop();
  await removeRedisPrefix(prefix);
  redis.disconnect();
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
