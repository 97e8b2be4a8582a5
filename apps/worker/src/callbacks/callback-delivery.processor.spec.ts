import { Logger } from '@nestjs/common';
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { AppConfig, SecretBox } from '@app/common';
import { CallbackAttemptError, type CallbackSender, INTERNAL_FAILURE_TEXT, type SendOutcome } from '@app/callbacks';
import type { AttemptClaim, CallbackDeliveryRepository, DeliveryHead, FinishedAttempt, NonceStore, RecordedAttempt } from '@app/db';
import type { JobsAfterCommit } from '@app/orders';
import type { JobQueue } from '@app/queue';
import { WorkerTuning } from '../worker-tuning';
import { type CallbackJob, CallbackDeliveryProcessor } from './callback-delivery.processor';
import { DestinationSlots } from './destination-slots';
import type { WorkerMetrics } from './worker-metrics';

const DESTINATION = 'https://shop.example:443';
const SCHEDULE = [15_000, 30_000];
const MAX_ATTEMPTS = SCHEDULE.length + 1;

const ok: SendOutcome = { ok: true, httpStatus: 200, durationMs: 3, excerpt: 'success', error: null, retryAfterMs: null };
const failed = (httpStatus: number): SendOutcome => ({ ok: false, httpStatus, durationMs: 3, excerpt: 'no', error: `HTTP ${httpStatus}`, retryAfterMs: null });

/**
 * The processor against its collaborators' contracts (the repository, the sender, the nonce
 * store as fakes; the slots and the policy real): it applies the DeliveryPolicy's verdict and
 * stores it, and never decides again. The rows and the queue themselves are the e2e specs' part.
 */
describe('CallbackDeliveryProcessor', () => {
  let claim: AttemptClaim;
  let answer: SendOutcome;
  let nonceStoreDown: boolean;
  let circuitOpen: boolean;
  let earlierPending: boolean;
  let sealedBroken: boolean;
  let lines: { level: string; fields: Record<string, unknown>; message: string }[];
  let recordedAnswer: RecordedAttempt;
  let recorded: FinishedAttempt[];
  let sent: string[];
  let added: DeliveryHead[][];
  let slots: DestinationSlots;
  let processor: CallbackDeliveryProcessor;

  const claimed = (number: number, notifyUrl: string | null = 'https://shop.example/notify'): AttemptClaim => ({
    kind: 'claimed',
    attempt: {
      deliveryId: 'd1',
      number,
      eventId: 'e1',
      eventType: 'order.paid',
      payload: { order_no: 'X' },
      notifyUrl,
      merchantApiKey: 'mk_test',
      merchantSecretEnc: 'sealed',
      merchantPreviousSecretEnc: null,
      probe: false,
    },
  });

  /** A job that remembers what was done to it, in order: parked until T, promoted. */
  function job(deliveryId = 'd1'): CallbackJob & { delayedUntil?: number; moves: string[] } {
    const j = {
      data: { deliveryId, merchantId: 7, destination: DESTINATION },
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
    nonceStoreDown = false;
    circuitOpen = true;
    earlierPending = true;
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
    recordedAnswer = { ended: true, circuitClosed: false, circuitOpened: false, next: null };
    slots = new DestinationSlots(1, null, 'test');
    const config = { callbackRetryScheduleMs: SCHEDULE, callbackCircuitProbeSeconds: 60, callbackCircuitFailures: 20 } as unknown as AppConfig;
    const deliveries = {
      claim: async () => claim,
      record: async (f: FinishedAttempt) => {
        recorded.push(f);
        return recordedAnswer;
      },
      heldBy: async () => [],
      circuitIsOpen: async () => circuitOpen,
      hasEarlierPending: async () => earlierPending,
    } as unknown as CallbackDeliveryRepository;
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
    const afterCommit = { addDeliveryJobs: async (heads: DeliveryHead[]) => void added.push(heads) } as unknown as JobsAfterCommit;
    const jobs = { queue: () => ({ getJob: async () => undefined }) } as unknown as JobQueue;
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
    processor = new CallbackDeliveryProcessor(config, new WorkerTuning(), deliveries, secrets, sender, nonces, slots, afterCommit, jobs, metrics);
  });

  it('a success is recorded as succeeded and closes nothing it should not: circuit told success', async () => {
    claim = claimed(1);
    await expect(processor.deliver(job(), 'token')).resolves.toEqual({ deliveryId: 'd1', status: 'succeeded', attempt: 1 });
    expect(recorded).toEqual([expect.objectContaining({ number: 1, status: 'succeeded', nextAttemptAt: null, circuit: 'success', destination: DESTINATION })]);
  });

  it('a failure before the last attempt is recorded pending with the policy delay, and BullMQ gets the same delay', async () => {
    claim = claimed(1);
    answer = failed(500);
    const before = Date.now();
    const thrown = await processor.deliver(job(), 'token').catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(CallbackAttemptError);
    const delay = (thrown as CallbackAttemptError).retryDelayMs;
    expect(delay).toBeGreaterThanOrEqual(15_000);
    expect(delay).toBeLessThanOrEqual(16_500);
    expect(recorded[0]).toMatchObject({ status: 'pending', circuit: 'failure', error: 'HTTP 500' });
    expect(recorded[0].nextAttemptAt!.getTime() - before).toBeGreaterThanOrEqual(delay);
  });

  it('the last attempt failing ends the delivery: never one attempt too many', async () => {
    claim = claimed(MAX_ATTEMPTS);
    answer = failed(500);
    await expect(processor.deliver(job(), 'token')).rejects.toBeInstanceOf(UnrecoverableError);
    expect(recorded).toEqual([expect.objectContaining({ number: MAX_ATTEMPTS, status: 'failed', nextAttemptAt: null, circuit: 'failure' })]);
  });

  it('410 ends it at once', async () => {
    claim = claimed(1);
    answer = failed(410);
    await expect(processor.deliver(job(), 'token')).rejects.toThrow(/410/);
    expect(recorded[0]).toMatchObject({ status: 'failed' });
  });

  it('the nonce store down: nothing is sent, the schedule goes on, and it never counts against the merchant circuit', async () => {
    claim = claimed(1);
    nonceStoreDown = true;
    await expect(processor.deliver(job(), 'token')).rejects.toBeInstanceOf(CallbackAttemptError);
    expect(sent).toEqual([]);
    // The merchant reads a fixed text; the log line keeps the store's own error.
    expect(recorded[0]).toMatchObject({ status: 'pending', circuit: 'none', httpStatus: null, error: INTERNAL_FAILURE_TEXT });
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
    claim = claimed(1);
    sealedBroken = true;
    await expect(processor.deliver(job(), 'token')).rejects.toBeInstanceOf(CallbackAttemptError);
    expect(sent).toEqual([]);
    expect(recorded[0]).toMatchObject({ status: 'pending', circuit: 'none', error: INTERNAL_FAILURE_TEXT });
    expect(lines[0].fields).toMatchObject({
      delivery_id: 'd1',
      event_id: 'e1',
      merchant_id: 7,
      destination: DESTINATION,
      attempt: 1,
      status: 'retry',
      err: 'Unsupported state or unable to authenticate data',
    });
  });

  it('one log line per attempt, ids as fields: delivered, retry with its next time, ended', async () => {
    claim = claimed(1);
    await processor.deliver(job(), 'token');
    answer = failed(500);
    await processor.deliver(job(), 'token').catch(() => undefined);
    claim = claimed(MAX_ATTEMPTS);
    await processor.deliver(job(), 'token').catch(() => undefined);
    expect(lines.map((l) => [l.level, l.fields.status, l.fields.attempt, l.fields.http_status])).toEqual([
      ['log', 'succeeded', 1, 200],
      ['log', 'retry', 1, 500],
      ['warn', 'exhausted', MAX_ATTEMPTS, 500],
    ]);
    expect(lines[1].fields).toMatchObject({ delivery_id: 'd1', event_id: 'e1', merchant_id: 7, reason: 'HTTP 500', next_attempt_at: expect.any(String) });
    expect(lines[0].message).not.toContain('d1');
  });

  it("'opened' is logged from the record's answer: only the failure that opened the circuit says so", async () => {
    claim = claimed(1);
    answer = failed(500);
    recordedAnswer = { ended: false, circuitClosed: false, circuitOpened: false, next: null };
    await processor.deliver(job('d1'), 'token').catch(() => undefined);
    recordedAnswer = { ended: false, circuitClosed: false, circuitOpened: true, next: null };
    await processor.deliver(job('d1'), 'token').catch(() => undefined);
    const opened = lines.filter((l) => l.fields.circuit === 'opened');
    expect(opened).toEqual([
      {
        level: 'warn',
        fields: { merchant_id: 7, destination: DESTINATION, circuit: 'opened', delivery_id: 'd1', attempt: 1, failures: 20 },
        message: expect.stringMatching(/circuit opened/),
      },
    ]);
  });

  it('no address: a failed attempt on our side, never against a circuit', async () => {
    claim = claimed(1, null);
    await expect(processor.deliver(job(), 'token')).rejects.toBeInstanceOf(CallbackAttemptError);
    expect(sent).toEqual([]);
    expect(recorded[0]).toMatchObject({ circuit: 'none', error: expect.stringMatching(/no callback address/) });
  });

  it('an open circuit parks the job until the probe time without an attempt, and frees its slot', async () => {
    const probeAt = new Date(Date.now() + 60_000);
    claim = { kind: 'held', until: probeAt };
    const j = job();
    await expect(processor.deliver(j, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(j.delayedUntil).toBe(probeAt.getTime());
    expect(j.moves).toEqual(['parked']);
    expect(recorded).toEqual([]);
    expect(await slots.take({ merchantId: 7, destination: DESTINATION }, 'other', 1000)).toBe(true);
  });

  it.each([
    ['an open circuit', { kind: 'held', until: new Date(Date.now() + 3_600_000) }, () => (circuitOpen = false)],
    ['an earlier event of its order pending', { kind: 'waiting' }, () => (earlierPending = false)],
  ] as [string, AttemptClaim, () => void][])(
    '%s parks the job; if that ended between the claim and the park (its other side found nothing parked yet), the parked job wakes itself',
    async (_why, heldClaim, endIt) => {
      claim = heldClaim;
      const still = job();
      await expect(processor.deliver(still, 'token')).rejects.toBeInstanceOf(DelayedError);
      expect(still.delayedUntil).toBeGreaterThan(Date.now() + 30_000);
      expect(still.moves).toEqual(['parked']);

      endIt();
      const freed = job();
      await expect(processor.deliver(freed, 'token')).rejects.toBeInstanceOf(DelayedError);
      expect(freed.moves).toEqual(['parked', 'promoted']);
      expect(sent).toEqual([]);
    },
  );

  it('no free slot: parked before anything is read or sent', async () => {
    claim = claimed(1);
    await slots.take({ merchantId: 7, destination: DESTINATION }, 'busy', 60_000);
    const j = job();
    await expect(processor.deliver(j, 'token')).rejects.toBeInstanceOf(DelayedError);
    expect(j.delayedUntil).toBeGreaterThan(Date.now());
    expect(sent).toEqual([]);
    expect(recorded).toEqual([]);
  });

  it("a settled delivery's job ends quietly; an exhausted one fails for good unsent", async () => {
    claim = { kind: 'settled' };
    await expect(processor.deliver(job(), 'token')).resolves.toEqual({ deliveryId: 'd1', status: 'settled' });
    claim = { kind: 'exhausted' };
    await expect(processor.deliver(job(), 'token')).rejects.toBeInstanceOf(UnrecoverableError);
    expect(sent).toEqual([]);
  });

  it("the end of a delivery adds its order's next one", async () => {
    claim = claimed(1);
    const next = { id: 'd2', merchantId: 7, notifyUrl: 'https://shop.example/notify' };
    recordedAnswer = { ended: true, circuitClosed: false, circuitOpened: false, next };
    await processor.deliver(job(), 'token');
    expect(added).toEqual([[next]]);
  });
});
