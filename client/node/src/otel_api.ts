/**
 * The OpenTelemetry API (@opentelemetry/api) and the W3C Trace Context
 * propagator of @opentelemetry/core (`traceparent` / `tracestate` in a job's
 * headers; used directly, never through the global propagator, so it works
 * without global set-up): optional peer dependencies, loaded only when
 * tracing is turned on (a Client with `tracing: true`, or
 * tracingMiddleware()). Nothing here is loaded otherwise, and the package's
 * public types never name theirs (so its types check without them).
 */
import type * as otel from '@opentelemetry/api';
import type { TracerProviderLike } from './tracing';

/** The API module's type. */
export type OtelApi = typeof otel;

let loaded: OtelApi | undefined;

/**
 * The @opentelemetry/api module. Throws an Error naming the package to
 * install when it cannot be loaded.
 */
export function loadOtelApi(): OtelApi {
  if (loaded) return loaded;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    loaded = require('@opentelemetry/api') as OtelApi;
  } catch (e) {
    throw new Error('jobwire: tracing needs the package @opentelemetry/api (npm install @opentelemetry/api): ' +
      String((e as Error)?.message ?? e));
  }
  return loaded;
}

/** The header a producer's trace context travels in. */
export const TRACEPARENT = 'traceparent';

let propagator: otel.TextMapPropagator<Record<string, string>> | undefined;

/**
 * @opentelemetry/core's W3CTraceContextPropagator. Throws an Error naming
 * the package to install when it cannot be loaded.
 */
export function loadW3CPropagator(): otel.TextMapPropagator<Record<string, string>> {
  if (propagator) return propagator;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const core = require('@opentelemetry/core') as { W3CTraceContextPropagator: new () => otel.TextMapPropagator };
    propagator = new core.W3CTraceContextPropagator();
  } catch (e) {
    throw new Error('jobwire: tracing needs the package @opentelemetry/core (npm install @opentelemetry/core): ' +
      String((e as Error)?.message ?? e));
  }
  return propagator;
}

/** This package's name and version, the instrumentation scope of its tracers. */
export const SCOPE_NAME = '@jobwire/client';
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const SCOPE_VERSION: string = (require('../package.json') as { version: string }).version;

/** The tracer of `provider`, else of the global provider. */
export function tracerOf(api: OtelApi, provider: TracerProviderLike | undefined): otel.Tracer {
  const p = (provider as otel.TracerProvider | undefined) ?? api.trace.getTracerProvider();
  return p.getTracer(SCOPE_NAME, SCOPE_VERSION);
}

/** messaging.system of every span. */
export const SYSTEM = 'jobwire';

/** Records `e` on `span` and sets its status to ERROR. */
export function recordError(api: OtelApi, span: otel.Span, e: unknown): void {
  const err = e instanceof Error ? e : new Error(String(e));
  span.recordException(err);
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: err.message });
}
