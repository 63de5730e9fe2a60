/**
 * OpenTelemetry trace propagation through job headers (W3C `traceparent` /
 * `tracestate`, @opentelemetry/core's W3CTraceContextPropagator): the Worker middleware that runs each
 * handler in a consumer span (tracingMiddleware), and the option type of the
 * producer side (a Client with `tracing: true`: publish_tracer.ts). Both
 * load @opentelemetry/api and core (otel_api.ts) when made, never before. This
 * file's public types name nothing of the API's.
 *
 * Span names and attributes follow the OpenTelemetry messaging semantic
 * conventions: `publish <queue>` (PRODUCER, one per enqueue / enqueueBatch
 * call) and `process <queue>` (CONSUMER, one per handler run), with
 * messaging.system = "jobwire", messaging.destination.name = the queue,
 * messaging.operation.type = "send" / "process".
 */
import type { Job } from './job';
import type { Middleware } from './middleware';
import { loadOtelApi, loadW3CPropagator, recordError, SYSTEM, tracerOf } from './otel_api';

/**
 * What a `tracerProvider` option takes: an OpenTelemetry TracerProvider
 * (`@opentelemetry/api`'s, e.g. an SDK's BasicTracerProvider), typed
 * structurally so that the package's types do not need the API installed.
 */
export interface TracerProviderLike {
  getTracer(name: string, version?: string): unknown;
}

/** Options of tracingMiddleware. */
export interface TracingOptions {
  /** Where the spans go. Default: the global TracerProvider (`trace.getTracerProvider()`). */
  tracerProvider?: TracerProviderLike;
}

/**
 * A Worker middleware (worker.use) that runs each handler inside a CONSUMER
 * span `process <queue>`, the child of the remote span context in the job's
 * headers (`traceparent` / `tracestate`; none or malformed: a root span),
 * active while the handler runs (`trace.getActiveSpan()`; needs a context
 * manager registered, as the SDKs' NodeTracerProvider.register() does).
 * Attributes: messaging.system = "jobwire", messaging.destination.name (the
 * queue), messaging.operation.type = "process", messaging.message.id (the
 * job id), jobwire.job.type, jobwire.job.attempt. A handler that throws:
 * the exception is recorded and the status set to ERROR, and the error
 * passed on. The span ends when the handler settles.
 *
 * Throws an Error when @opentelemetry/api cannot be loaded.
 */
export function tracingMiddleware(options: TracingOptions = {}): Middleware {
  const api = loadOtelApi();
  const tracer = tracerOf(api, options.tracerProvider);
  const propagator = loadW3CPropagator();
  return async (job: Job, next: () => Promise<unknown>): Promise<unknown> => {
    // The job's remote parent, else none: never the span active where the
    // Worker runs.
    const parent = propagator.extract(api.trace.deleteSpan(api.context.active()), job.headers, api.defaultTextMapGetter);
    const span = tracer.startSpan(`process ${job.queue}`, {
      kind: api.SpanKind.CONSUMER,
      attributes: {
        'messaging.system': SYSTEM,
        'messaging.destination.name': job.queue,
        'messaging.operation.type': 'process',
        'messaging.message.id': job.id,
        'jobwire.job.type': job.type,
        'jobwire.job.attempt': job.attempt,
      },
    }, parent);
    try {
      return await api.context.with(api.trace.setSpan(parent, span), next);
    } catch (e) {
      recordError(api, span, e);
      throw e;
    } finally {
      span.end();
    }
  };
}
