/**
 * The producer side of trace propagation (tracing.ts): a Client with
 * `tracing: true` runs each enqueue / enqueueBatch call in a PRODUCER span
 * `publish <queue>` and injects it into the jobs' headers.
 */
import type * as otel from '@opentelemetry/api';
import { loadOtelApi, loadW3CPropagator, recordError, SYSTEM, TRACEPARENT, tracerOf, type OtelApi } from './otel_api';
import type { TracerProviderLike } from './tracing';

/** Adds the span's trace context to a request's headers (a copy, never the caller's object). */
export type Inject = (headers: Record<string, string> | undefined) => Record<string, string>;

/**
 * The producer side of a Client with `tracing: true`: one PRODUCER span per
 * enqueue / enqueueBatch call, a child of the caller's active context,
 * injected into each job's headers.
 */
export class PublishTracer {
  private readonly api: OtelApi;
  private readonly tracer: otel.Tracer;
  private readonly propagator: otel.TextMapPropagator<Record<string, string>>;

  /** Throws an Error when @opentelemetry/api cannot be loaded. */
  constructor(provider?: TracerProviderLike) {
    this.api = loadOtelApi();
    this.tracer = tracerOf(this.api, provider);
    this.propagator = loadW3CPropagator();
  }

  /**
   * Runs `call` inside a span `publish <queue>`: `call` gets `inject`, which
   * adds the span's traceparent (and tracestate) to a job's headers (the
   * headers of the request, never the caller's object) unless they already
   * hold a traceparent, and `span`. The span ends when `call` settles; a
   * rejection is recorded on it (status ERROR) and passed on.
   */
  async publish<T>(queue: string, attributes: otel.Attributes,
    call: (inject: Inject, span: otel.Span) => Promise<T>): Promise<T> {
    const { api } = this;
    const parent = api.context.active();
    const span = this.tracer.startSpan(`publish ${queue}`, {
      kind: api.SpanKind.PRODUCER,
      attributes: {
        'messaging.system': SYSTEM,
        'messaging.destination.name': queue,
        'messaging.operation.type': 'send',
        ...attributes,
      },
    }, parent);
    const ctx = api.trace.setSpan(parent, span);
    const inject = (headers: Record<string, string> | undefined): Record<string, string> => {
      const h = headers ?? {};
      if (!Object.prototype.hasOwnProperty.call(h, TRACEPARENT)) this.propagator.inject(ctx, h, api.defaultTextMapSetter);
      return h;
    };
    try {
      return await api.context.with(ctx, () => call(inject, span));
    } catch (e) {
      recordError(api, span, e);
      throw e;
    } finally {
      span.end();
    }
  }
}
