import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { orderTraceIds, startTracing, stopTracing, tracingOn, tracingRequested } from '@app/common';
import type { Credentials } from '@app/operator';
import { createWorkerApp } from '../apps/worker/src/create-worker-app';
import { type TestApi, merchantWithChannels, startTestApi } from './helpers/api';
import { CallbackReceiver, waitFor } from './helpers/callbacks';
import { createOrder } from './helpers/orders';

type Line = Record<string, unknown> & { msg: string };

/**
 * Issue 40 item 6: one payment's trace, read end to end from an in-memory exporter. The real API
 * and worker, real PostgreSQL and Redis, a real merchant endpoint: createOrder, the sandbox's Pay,
 * the callback job and the POST to the merchant are one trace, and every log line of that work
 * names it. Logs are read where pino writes them (stdout, taken over before the apps start).
 */
describe('traces: one payment, one trace', () => {
  const exporter = new InMemorySpanExporter();
  const output: string[] = [];
  let stdout: jest.SpyInstance;
  let api: TestApi;
  let worker: INestApplicationContext;
  let receiver: CallbackReceiver;
  let merchant: Credentials;
  let channel: number;

  beforeAll(async () => {
    // Before the apps: their loggers add trace ids only when tracing is on as they are built.
    expect(startTracing('merchant-pay-test', { exporter })).toBe(true);
    stdout = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      output.push(chunk.toString());
      return true;
    });
    receiver = await CallbackReceiver.start();
    api = await startTestApi({ CALLBACK_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'info' });
    worker = await createWorkerApp(api.config, { shutdownHooks: false, tuning: { sweepIntervalMs: 300, callbackPollMs: 200 } });
    const made = await merchantWithChannels(api.operator, { notifyUrl: receiver.url });
    merchant = made.merchant;
    channel = made.channels.processor;
  });

  afterAll(async () => {
    await worker?.close();
    await api?.close();
    await receiver?.close();
    stdout?.mockRestore();
    await stopTracing();
  });

  const lines = (): Line[] =>
    output
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line);

  it('createOrder -> Pay -> the callback job -> the POST to the merchant: one trace, each span under the one before', async () => {
    const created = await createOrder(api.app, merchant, { cny_amount: '42.00', paychannel_id: channel });
    expect(created.body.code).toBe(1);
    const orderNo = created.body.data.order_no;
    const token = new URL(created.body.data.pay_url!).searchParams.get('token')!;
    const paid = await api.app.inject({
      method: 'POST',
      url: `/sandbox/checkout/${orderNo}/pay`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token }).toString(),
    });
    expect(paid.statusCode).toBe(200);

    // The merchant got its callback, and the span of that POST ended.
    const callback = await waitFor(
      () => receiver.received.find((c) => c.body.order_no === orderNo && c.body.event === 'order.paid'),
      20_000,
      'the order.paid callback',
    );
    const { traceId } = orderTraceIds(orderNo);
    const post = await waitFor(
      () => exporter.getFinishedSpans().find((s) => s.name === 'callback POST' && s.spanContext().traceId === traceId),
      20_000,
      'the callback POST span',
    );

    // The job's span ends after the POST's: once its attempt is recorded.
    await waitFor(() => exporter.getFinishedSpans().some((s) => s.spanContext().spanId === post.parentSpanContext?.spanId), 20_000, 'the job span');
    const trace = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const one = (name: string): ReadableSpan => {
      const found = trace.filter((s) => s.name === name);
      expect(found.map((s) => s.name)).toContain(name);
      return found[0];
    };
    const parentOf = (span: ReadableSpan): ReadableSpan | undefined => trace.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId);
    const createOrderSpan = one('createOrder');
    const pay = one('pay');
    // The job that delivered this event: the POST's parent.
    const job = parentOf(post)!;

    expect(createOrderSpan.parentSpanContext).toBeUndefined();
    expect(createOrderSpan.attributes['merchant_pay.order_no']).toBe(orderNo);
    expect(parentOf(pay)).toBe(createOrderSpan);
    expect(job.name).toBe('job callback.deliver');
    expect(job.attributes['messaging.destination.name']).toBe('callbacks');
    // The job was enqueued inside Pay (or inside a job Pay enqueued): its ancestors lead back to Pay.
    const ancestors: string[] = [];
    for (let s = parentOf(job); s; s = parentOf(s)) ancestors.push(s.name);
    expect(ancestors).toContain('pay');
    expect(ancestors[ancestors.length - 1]).toBe('createOrder');
    expect(post.attributes['http.request.method']).toBe('POST');
    expect(post.attributes['http.response.status_code']).toBe(200);
    expect(post.attributes['server.address']).toBe(new URL(receiver.url).host);
    // The service name rides on every span.
    expect(post.resource.attributes['service.name']).toBe('merchant-pay-test');
    expect(callback.headers.traceparent).toBeUndefined();

    // Every log line of that work names the trace: the access lines of createOrder and of Pay,
    // the notification's, the worker's callback line. Found by what they are about, not by trace id.
    const deliveryIds = new Set(
      lines()
        .filter((l) => l.order_no === orderNo && typeof l.delivery_id === 'string')
        .map((l) => l.delivery_id),
    );
    const about = lines().filter((l) => l.order_no === orderNo || deliveryIds.has(l.delivery_id) || String(l.path ?? '').includes(orderNo));
    const msgs = about.map((l) => l.msg);
    expect(msgs).toEqual(expect.arrayContaining(['request completed', 'success notification', 'callback delivered']));
    expect(about.filter((l) => l.path === '/api/merchant/createOrder')).toHaveLength(1);
    expect(about.filter((l) => l.path === `/sandbox/checkout/${orderNo}/pay`)).toHaveLength(1);
    for (const line of about) expect({ msg: line.msg, trace_id: line.trace_id }).toEqual({ msg: line.msg, trace_id: traceId });
    // The lines written inside a span also name that span.
    const spanIds = new Set(trace.map((s) => s.spanContext().spanId));
    expect(spanIds).toContain(about.find((l) => l.msg === 'callback delivered')!.span_id);
  });

  it('another order is another trace', async () => {
    const a = await createOrder(api.app, merchant, { cny_amount: '1.00', paychannel_id: channel });
    const b = await createOrder(api.app, merchant, { cny_amount: '2.00', paychannel_id: channel });
    const ids = [a, b].map((r) => orderTraceIds(r.body.data.order_no).traceId);
    expect(ids[0]).not.toBe(ids[1]);
    for (const id of ids) expect(exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === id && s.name === 'createOrder')).toHaveLength(1);
  });

  it('off, the compiled apps load no OpenTelemetry SDK; on, they do (npm test builds first)', () => {
    // Every module of the API and the worker, as their mains load them, then what node holds.
    const probe = `
      require('reflect-metadata');
      require('./dist/apps/api/src/create-api-app.js');
      require('./dist/apps/worker/src/create-worker-app.js');
      if (process.argv[1] === 'on') require('./dist/libs/common/src/tracing.js').startTracing('probe');
      const sdk = Object.keys(require.cache).filter((f) => /@opentelemetry[/](sdk-|exporter-|context-async-hooks|resources|core)/.test(f));
      process.stdout.write(JSON.stringify(sdk.map((f) => f.split('node_modules/').pop().split('/').slice(0, 2).join('/'))));
    `;
    const loaded = (mode: string, env: Record<string, string>): string[] =>
      JSON.parse(
        execFileSync(process.execPath, ['-e', probe, mode], {
          cwd: resolve(__dirname, '..'),
          env: { PATH: process.env.PATH, ...env },
          encoding: 'utf8',
          timeout: 60_000,
        }),
      ) as string[];
    expect(loaded('off', {})).toEqual([]);
    expect(loaded('on', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).toEqual(
      expect.arrayContaining(['@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-proto', '@opentelemetry/context-async-hooks']),
    );
  }, 120_000);

  it('traces are off unless OTEL_EXPORTER_OTLP_ENDPOINT is set', () => {
    expect(tracingOn()).toBe(true);
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
  });
});
