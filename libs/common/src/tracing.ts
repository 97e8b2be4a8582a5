import { createHash } from 'node:crypto';
import type { Context, Span, SpanKind, Tracer } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';

/**
 * OpenTelemetry traces (issue 40 item 6), off unless OTEL_EXPORTER_OTLP_ENDPOINT is set. Off,
 * nothing of OpenTelemetry is loaded (every require below runs only in startTracing) and each
 * traced step costs one test of a module variable before it runs its work as before.
 *
 * One payment is one trace: createOrder's span is its root, with ids derived from the order_no
 * (so no store is needed to find it again); Pay (the channel's paid notification, the sandbox's
 * Pay included) is its child; a job enqueued inside a span carries its W3C traceparent in the
 * job data, and the worker runs the job in a span under it, the merchant's callback POST a span
 * under that. Log lines written inside a span carry its trace_id and span_id.
 */

interface Live {
  api: typeof import('@opentelemetry/api');
  tracer: Tracer;
  ids: OrderIds;
  shutdown(): Promise<void>;
}

let live: Live | null = null;

/** The W3C traceparent of the job's enqueuer, in the job data (JobQueue adds it, QueueWorkers reads it). */
export const TRACE_FIELD = 'traceparent';

export function tracingOn(): boolean {
  return live !== null;
}

/** Whether this environment asks for traces. */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim() !== '' || (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '').trim() !== '';
}

/**
 * Ids for the next root span only, when one is named (an order's createOrder span): the SDK asks
 * for the span id and then, having no parent, for the trace id, both within one synchronous
 * startSpan call, so a value set just before it is taken by that span alone.
 */
class OrderIds {
  next: { traceId: string; spanId: string } | null = null;
  constructor(private readonly random: { generateTraceId(): string; generateSpanId(): string }) {}
  generateTraceId(): string {
    const id = this.next?.traceId;
    this.next = null;
    return id ?? this.random.generateTraceId();
  }
  generateSpanId(): string {
    return this.next?.spanId ?? this.random.generateSpanId();
  }
}

/** The order's trace id and its createOrder span's id: from the order_no, so Pay finds them with no lookup. */
export function orderTraceIds(orderNo: string): { traceId: string; spanId: string } {
  const hex = createHash('sha256').update(`merchant-pay order ${orderNo}`).digest('hex');
  return { traceId: hex.slice(0, 32), spanId: hex.slice(32, 48) };
}

/**
 * Starts tracing for this process when OTEL_EXPORTER_OTLP_ENDPOINT is set (or an exporter is
 * given: the tests' in-memory one). The OTLP exporter (http/protobuf) reads the standard
 * OTEL_EXPORTER_OTLP_* variables itself; the service name is OTEL_SERVICE_NAME or `service`.
 */
export function startTracing(service: string, options: { exporter?: SpanExporter; env?: NodeJS.ProcessEnv } = {}): boolean {
  const env = options.env ?? process.env;
  if (live) return true;
  if (!options.exporter && !tracingRequested(env)) return false;
  const api = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  const sdk = require('@opentelemetry/sdk-trace') as typeof import('@opentelemetry/sdk-trace');
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks') as typeof import('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const exporter =
    options.exporter ??
    new (require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
  const ids = new OrderIds(new sdk.RandomIdGenerator());
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || service }),
    idGenerator: ids,
    // The tests read spans as they end; a deployment sends them in batches, off the request's path.
    spanProcessors: [options.exporter ? new sdk.SimpleSpanProcessor({ exporter }) : new sdk.BatchSpanProcessor({ exporter })],
  });
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(provider);
  live = {
    api,
    tracer: api.trace.getTracer('merchant-pay'),
    ids,
    async shutdown() {
      await provider.shutdown();
      api.trace.disable();
      api.context.disable();
      api.propagation.disable();
    },
  };
  return true;
}

/** Sends what is left and stops (a process's stop, a test's end). */
export async function stopTracing(): Promise<void> {
  const current = live;
  live = null;
  await current?.shutdown();
}

type Attributes = Record<string, string | number | boolean>;

/** Runs `work` in a span (when tracing is on), ended when the work settles; an error marks it and goes on. */
function runInSpan<T>(t: Live, name: string, kind: SpanKind, parent: Context, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  const span = t.tracer.startSpan(name, { kind, attributes }, parent);
  return t.api.context.with(t.api.trace.setSpan(parent, span), async () => {
    try {
      return await work(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: t.api.SpanStatusCode.ERROR, message: (err as Error)?.message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** createOrder's making of one order: the root of that order's trace. */
export function orderCreateSpan<T>(orderNo: string, work: () => Promise<T>): Promise<T> {
  const t = live;
  if (!t) return work();
  t.ids.next = orderTraceIds(orderNo);
  // A root whatever is active: the order's trace starts here.
  return runInSpan(t, 'createOrder', t.api.SpanKind.SERVER, t.api.ROOT_CONTEXT, { 'merchant_pay.order_no': orderNo }, () => work());
}

/** Pay: the channel says the order was paid; a child of the order's createOrder span. */
export function orderPaySpan<T>(orderNo: string, channel: string, work: () => Promise<T>): Promise<T> {
  const t = live;
  if (!t) return work();
  const { traceId, spanId } = orderTraceIds(orderNo);
  const parent = t.api.trace.setSpanContext(t.api.ROOT_CONTEXT, { traceId, spanId, traceFlags: t.api.TraceFlags.SAMPLED, isRemote: true });
  return runInSpan(t, 'pay', t.api.SpanKind.SERVER, parent, { 'merchant_pay.order_no': orderNo, 'merchant_pay.channel': channel }, () => work());
}

/** The job data to enqueue: the payload, with the active span's traceparent when there is one. */
export function withTraceContext<P extends object>(payload: P): P {
  const t = live;
  if (!t) return payload;
  const carrier: Record<string, string> = {};
  t.api.propagation.inject(t.api.context.active(), carrier);
  return carrier[TRACE_FIELD] ? { ...payload, [TRACE_FIELD]: carrier[TRACE_FIELD] } : payload;
}

/** One run of a job, under the span that enqueued it (its data's traceparent), or a root of its own. */
export function jobSpan<T>(queue: string, name: string, data: unknown, jobId: string | undefined, work: () => Promise<T>): Promise<T> {
  const t = live;
  if (!t) return work();
  const traceparent = (data as Record<string, unknown> | null)?.[TRACE_FIELD];
  const parent = typeof traceparent === 'string' ? t.api.propagation.extract(t.api.ROOT_CONTEXT, { [TRACE_FIELD]: traceparent }) : t.api.ROOT_CONTEXT;
  return runInSpan(t, `job ${name}`, t.api.SpanKind.CONSUMER, parent, { 'messaging.destination.name': queue, 'messaging.message.id': jobId ?? '' }, () =>
    work(),
  );
}

/** An outgoing HTTP request (the merchant's callback POST); `describe` adds what the answer said. */
export function clientSpan<T>(
  name: string,
  attributes: () => Attributes,
  work: () => Promise<T>,
  describe: (result: T) => { attributes: Attributes; error: string | null },
): Promise<T> {
  const t = live;
  if (!t) return work();
  return runInSpan(t, name, t.api.SpanKind.CLIENT, t.api.context.active(), attributes(), async (span) => {
    const result = await work();
    const { attributes: more, error } = describe(result);
    span.setAttributes(more);
    if (error) span.setStatus({ code: t.api.SpanStatusCode.ERROR, message: error });
    return result;
  });
}

/** What every log line adds while tracing is on (pino's mixin): the active span's ids, when one is active. */
export function traceLogFields(): Record<string, string> {
  const span = live?.api.trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
