import { Logger } from '@nestjs/common';
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { AppConfig, SecretBox } from '@app/common';
import { CallbackAttemptError, type CallbackJobs, type CallbackSender, DestinationGate, INTERNAL_FAILURE_TEXT, type SendOutcome } from '@app/callbacks';
import type {
  CallbackAttemptRepository,
  CallbackDeliveryRepository,
  DeliveryHead,
  FinishedAttempt,
  LoadedDelivery,
  NonceStore,
  RecordedAttempt,
} from '@app/db';
import { WorkerTuning } from '../worker-tuning';
import { type CallbackJob, CallbackDeliveryProcessor } from './callback-delivery.processor';
import type { WorkerMetrics } from './worker-metrics';

const DESTINATION = 'https://shop.example:443';
const KEY = { merchantId: 7, destination: DESTINATION };
const SCHEDULE = [15_000, 30_000];
const MAX_ATTEMPTS = SCHEDULE.length + 1;
const FAILURES_TO_OPEN = 2;

const ok: SendOutcome = { ok: true, httpStatus: 200, durationMs: 3, excerpt: 'success', error: null, retryAfterMs: null };
const failed = (httpStatus: number): SendOutcome => ({ ok: false, httpStatus, durationMs: 3, excerpt: 'no', error: `HTTP ${httpStatus}`, retryAfterMs: null });

/**
 * The processor's stages against its collaborators' contracts (the repository, the sender, the
 * nonce store as fakes; the gate, in its in-process form, and the policy real): it applies the
 * DeliveryPolicy's verdict and the gate's answer and stores them, and never decides again. The
 * rows and the queue themselves are the e2e specs' part.
 */
describe('CallbackDeliveryProcessor', () => {
  let loaded: LoadedDelivery | null;
  let answer: SendOutcome;
  let nonceStoreDown: boolean;
  let sealedBroken: boolean;
  let lines: { level: string; fields: Record<string, unknown>; message: string }[];
  let recordedAnswer: RecordedAttempt;
  let recorded: FinishedAttempt[];
  let sent: string[];
  let added: DeliveryHead[][];
  let promoted: string[][];
  let gate: DestinationGate;
  let processor: CallbackDeliveryProcessor;
  let prefix = 0;

  const pending = (attemptsMade: number, notifyUrl: string | null = 'https://shop.example/notify'): LoadedDelivery => ({
    deliveryId: 'd1',
    status: 'pending',
    attemptsMade,
    eventId: 'e1',
    eventType: 'order.paid',
    payload: { order_no: 'X1' },
    notifyUrl,
    merchantApiKey: 'mk_test',
    merchantSecretEnc: 'sealed',
    merchantPreviousSecretEnc: null,
  });

  /** A job that remembers what was done to it, in order: parked until T, promoted. */
  function job(deliveryId = 'd1'): CallbackJob & { delayedUntil?: number; moves: string[] } {
    const j = {
      data: { deliveryId, merchantId: 7, destination: DESTINATION },
      attemptsMade: 0,
      moves: [] as string[],
      moveToDelayed: async (until: number) => {
        j.delayedUntil = until;
        j.moves.push('parked');
      },
      promote: async () => void j.moves.push('promoted'),
    } as unknown as CallbackJob & { delayedUntil?: number; moves: string[] };
    return j;
  }

  afterEach(() => jest.restoreAllMocks());

  beforeEach(() => {
    answer = ok;
    loaded = pending(0);
    nonceStoreDown = false;
    sealedBroken = false;
    lines = [];
    for (const level of ['log', 'warn'] as const) {
      jest
        .spyOn(Logger.prototype, level)
        .mockImplementation(
          (fields: unknown, message?: unknown, ..._rest: unknown[]) =>
            void lines.push({ level, fields: fields as Record<string, unknown>, message: String(message) }),
        );
    }
    jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
    recorded = [];
    sent = [];
    added = [];
    promoted = [];
    recordedAnswer = { recorded: true, ended: true, next: null };
    gate = new DestinationGate({ limit: 1, leaseMs: 60_000, failures: FAILURES_TO_OPEN, probeMs: 60_000 }, null, `processor-spec-${++prefix}`);
    const config = { callbackRetryScheduleMs: SCHEDULE, callbackCircuitProbeSeconds: 60, callbackCircuitFailures: FAILURES_TO_OPEN } as unknown as AppConfig;
    const attempts = {
      load: async () => loaded,
      record: async (f: FinishedAttempt) => {
        recorded.push(f);
        return recordedAnswer;
      },
    } as unknown as CallbackAttemptRepository;
    const sender = {
      timeoutMs: 10_000,
      send: async (url: string) => {
        sent.push(url);
        return answer;
      },
    } as unknown as CallbackSender;
    const nonces = {
      claim: async () => {
        if (nonceStoreDown) throw new Error('Redis is down');
        return true;
      },
    } as unknown as NonceStore;
    const callbacks = {
      deliverHeads: async (heads: DeliveryHead[]) => void added.push(heads),
      promoteDeliveries: async (_key: unknown, ids: string[]) => void (ids.length > 0 && promoted.push(ids)),
    } as unknown as CallbackJobs;
    const metrics = {
      attemptSeconds: { observe: () => undefined },
      settled: () => undefined,
      failedDeliveries: { inc: () => undefined },
    } as unknown as WorkerMetrics;
    const secrets = {
      open: () => {
        if (sealedBroken) throw new Error('Unsupported state or unable to authenticate data');
        return 'secret';
      },
    } as unknown as SecretBox;
    processor = new CallbackDeliveryProcessor(
      config,
      new WorkerTuning(),
      attempts,
      {} as CallbackDeliveryRepository,
      secrets,
      sender,
      nonces,
      gate,
      callbacks,
      metrics,
    );
  });

  it('a success is recorded as succeeded and closes nothing it should not: circuit told success', async () => {
    await expect(processor.deliver(job(), 'token')).resolves.toEqual({ deliveryId: 'd1', status: 'succeeded', attempt: 1 });
    expect(recorded).toEqual([expect.objectContaining({ number: 1, status: 'succeeded', nextAttemptAt: null, circuit: null, destination: DESTINATION })]);
    // Its slot is back.
    expect((await gate.take(KEY, 'other')).kind).toBe('run');
  });

  it('a failure before the last attempt is recorded pending with the policy delay, and BullMQ gets the same delay', async () => {
    answer = failed(500);
    const before = Date.now();
    const thrown = await processor.deliver(job(), 'token').catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(CallbackAttemptError);
    const delay = (thrown as CallbackAttemptError).retryDelayMs;
    expect(delay).toBeGreaterThanOrEqual(15_000);
    expect(delay).toBeLessThanOrEqual(16_500);
    expect(recorded[0]).toMatchObject({ number: 1, status: 'pending', circuit: null, error: 'HTTP 500' });
    expect(recorded[0].nextAttemptAt!.getTime() - before).toBeGreaterThanOrEqual(delay);
  });

  it('the last attempt failing ends the delivery: never one attempt too many', async () => {
    loaded = pending(MAX_ATTEMPTS - 1);
    answer = failed(500);
    await expect(processor.deliver(job(), 'token')).rejects.toBeInstanceOf(UnrecoverableError);
    expect(recorded).toEqual([expect.objectContaining({ number: MAX_ATTEMPTS, status: 'failed', nextAttemptAt: null })]);
  });

  it('410 ends it at once', async () => {
    answer = failed(410);
    await expect(processor.deliver(job(), 'token')).rejects.toThrow(/410/);
    expect(recorded[0]).toMatchObject({ status: 'failed' });
  });

  it('the nonce store down: nothing is sent, the schedule goes on, and it never counts against the merchant circuit', async () => {
    nonceStoreDown = true;
    await expect(processor.deliver(job(), 'token')).rejects.toBeInstanceOf(CallbackAttemptError);
    expect(sent).toEqual([]);
    // The merchant reads a fixed text; the log line keeps the store's own error.
    expect(recorded[0]).toMatchObject({ status: 'pending', circuit: null, httpStatus: null, error: INTERNAL_FAILURE_TEXT });
    expect(lines).toEqual([
      expect.objectContaining({
        fields: expect.objectContaining({
          status: 'retry',
          reason: INTERNAL_FAILURE_TEXT,
          err: expect.stringMatching(/nonce could not be recorded: Redis is down/),
        }),
      }),
    ]);
  });

  it('a secret that does not open: nothing sent, a retry on our side with the fixed text, the decryption error in the log only', async () => {
    sealedBroken = true;
    await expect(processor.deliver(job(), 'token')).rejects.toBeInstanceOf(CallbackAttemptError);
    expect(sent).toEqual([]);
    expect(recorded[0]).toMatchObject({ status: 'pending', circuit: null, error: INTERNAL_FAILURE_TEXT });
    expect(lines[0].fields).toMatchObject({
      delivery_id: 'd1',
      event_id: 'e1',
      order_no: 'X1',
      merchant_id: 7,
      destination: DESTINATION,
      attempt: 1,
      status: 'retry',
      err: 'Unsupported state or unable to authenticate data',
    });
  });

  it('one log line per attempt, ids as fields: delivered, retry with its next time, ended', async () => {
    await processor.deliver(job(), 'token');
    answer = failed(500);
    await processor.deliver(job(), 'token').catch(() => undefined);
    loaded = pending(MAX_ATTEMPTS - 1);
    await processor.deliver(job(), 'token').catch(() => undefined);
    expect(lines.filter((l) => l.fields.status).map((l) => [l.level, l.fields.status, l.fields.attempt, l.fields.http_status])).toEqual([
      ['log', 'succeeded', 1, 200],
      ['log', 'retry', 1, 500],
      ['warn', 'exhausted', MAX_ATTEMPTS, 500],
    ]);
    expect(lines[1].fields).toMatchObject({ delivery_id: 'd1', event_id: 'e1', merchant_id: 7, reason: 'HTTP 500', next_attempt_at: expect.any(String) });
    expect(lines[0].message).not.toContain('d1');
  });

  it("the circuit's transitions come from the gate, logged once and handed to the record as its mirror; our own failures never count", async () => {
    answer = failed(500);
    await processor.deliver(job('d1'), 'token').catch(() => undefined);
    nonceStoreDown = true;
    await processor.deliver(job('d2'), 'token').catch(() => undefined);
    nonceStoreDown = false;
    await processor.deliver(job('d3'), 'token').catch(() => undefined);
    expect(recorded.map((r) => r.circuit?.transition ?? null)).toEqual([null, null, 'opened']);
    expect(recorded[2].circuit).toMatchObject({ failures: FAILURES_TO_OPEN, nextProbeAt: expect.any(Date) });
    expect(lines.filter((l) => l.fields.circuit === 'opened')).toEqual([
      {
        level: 'warn',
        fields: { merchant_id: 7, destination: DESTINATION, circuit: 'opened', delivery_id: 'd3', order_no: 'X1', attempt: 1, failures: FAILURES_TO_OPEN },
        message: expect.stringMatching(/circuit opened/),
      },
    ]);
    // Open: the next due delivery waits without an attempt, parked until the probe time as the key's waker.
    const held = job('d4');
    await expect(processor.deliver(held, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(held.delayedUntil).toBe(recorded[2].circuit!.nextProbeAt!.getTime());
    expect(held.moves).toEqual(['parked']);
    expect(recorded).toHaveLength(3);
  });

  it('no free slot: parked (no attempt, nothing read or sent) and lined up; the end of the one in flight promotes it', async () => {
    expect((await gate.take(KEY, 'busy')).kind).toBe('run');
    const j = job('d2');
    await expect(processor.deliver(j, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(j.delayedUntil).toBeGreaterThan(Date.now() + 3_600_000);
    expect(j.moves).toEqual(['parked']);
    expect(sent).toEqual([]);
    expect(recorded).toEqual([]);
    expect((await gate.give(KEY, 'busy', 'success', false)).admitted).toEqual(['d2']);
  });

  it('a slot freed while the job was being parked is taken by its line-up: the job promotes itself', async () => {
    expect((await gate.take(KEY, 'busy')).kind).toBe('run');
    const j = job('d2');
    const moveToDelayed = j.moveToDelayed.bind(j);
    j.moveToDelayed = (async (until: number, token?: string) => {
      await moveToDelayed(until, token);
      await gate.give(KEY, 'busy', 'success', false);
    }) as typeof j.moveToDelayed;
    await expect(processor.deliver(j, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(j.moves).toEqual(['parked', 'promoted']);
  });

  it('a delivery waiting out its retry delay is never sent early by a closing circuit: only the lined-up due ones are admitted', async () => {
    answer = failed(500);
    // d1 fails (retry in 15 s: BullMQ's delayed set, not the line); d2 fails and opens the circuit.
    await processor.deliver(job('d1'), 'token').catch(() => undefined);
    await processor.deliver(job('d2'), 'token').catch(() => undefined);
    expect(recorded.map((r) => r.circuit?.transition ?? null)).toEqual([null, 'opened']);
    // d3 comes due while open: parked and lined up.
    await processor.deliver(job('d3'), 'token').catch(() => undefined);
    // The circuit closes (an operator's reset here; a probe's success does the same): only d3 is admitted.
    expect(await gate.close(KEY)).toEqual(['d3']);
  });

  it('PostgreSQL away before anything is sent: the slot back, the job comes back shortly, no attempt spent', async () => {
    (processor as unknown as { attempts: { load: () => Promise<never> } }).attempts.load = async () => {
      throw new Error('connection refused');
    };
    const j = job();
    await expect(processor.deliver(j, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(j.delayedUntil).toBeLessThan(Date.now() + 60_000);
    expect(sent).toEqual([]);
    expect((await gate.take(KEY, 'other')).kind).toBe('run');
  });

  it("a settled delivery's job ends quietly, unsent, and frees its slot", async () => {
    loaded = { ...pending(1), status: 'succeeded' };
    await expect(processor.deliver(job(), 'token')).resolves.toEqual({ deliveryId: 'd1', status: 'settled' });
    loaded = null;
    await expect(processor.deliver(job(), 'token')).resolves.toEqual({ deliveryId: 'd1', status: 'settled' });
    expect(sent).toEqual([]);
    expect((await gate.take(KEY, 'other')).kind).toBe('run');
  });

  // The chaos run's stall: a job added again for a delivery another run had settled got a slot, and
  // its quiet end gave the slot to the next in line without waking it: the key's slots then held
  // nobody until their leases ended, each freed batch going the same way.
  it.each([
    ['has ended meanwhile', () => void (loaded = { ...pending(1), status: 'succeeded' })],
    [
      'cannot be read (PostgreSQL away)',
      () =>
        void ((processor as unknown as { attempts: { load: () => Promise<never> } }).attempts.load = async () => {
          throw new Error('connection refused');
        }),
    ],
  ])('a job whose delivery %s gives its slot to the next in line and wakes it', async (_why, arrange) => {
    expect((await gate.take(KEY, 'd1')).kind).toBe('run');
    await gate.lineUp(KEY, ['d2']);
    arrange();
    await processor.deliver(job('d1'), 'token').catch(() => undefined);
    expect(sent).toEqual([]);
    expect(promoted).toEqual([['d2']]);
  });

  it('an outcome that cannot be recorded (PostgreSQL away) still wakes whom the freed slot admitted; the job fails to come back', async () => {
    (processor as unknown as { attempts: { record: () => Promise<never> } }).attempts.record = async () => {
      throw new Error('connection refused');
    };
    expect((await gate.take(KEY, 'd1')).kind).toBe('run');
    await gate.lineUp(KEY, ['d2']);
    await expect(processor.deliver(job('d1'), 'token')).rejects.toThrow('connection refused');
    expect(sent).toHaveLength(1);
    expect(promoted).toEqual([['d2']]);
  });

  it("the end of a delivery adds its order's next one", async () => {
    const next = { id: 'd2', merchantId: 7, notifyUrl: 'https://shop.example/notify' };
    recordedAnswer = { recorded: true, ended: true, next };
    await processor.deliver(job(), 'token');
    expect(added).toEqual([[next]]);
  });
});
