package jobwire

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// OpenTelemetry trace propagation through job headers: the Client's publish
// spans (WithTracing) and the Worker's process spans (TracingMiddleware),
// linked by the W3C "traceparent" / "tracestate" headers.

// tracerName is the instrumentation scope of the spans of this package.
const tracerName = "github.com/jobwire/jobwire/client/go"

// The attribute keys of the spans (OpenTelemetry messaging semantic
// conventions, and jobwire's own).
const (
	attrMessagingSystem    = attribute.Key("messaging.system")
	attrDestinationName    = attribute.Key("messaging.destination.name")
	attrOperationType      = attribute.Key("messaging.operation.type")
	attrMessageID          = attribute.Key("messaging.message.id")
	attrBatchMessageCount  = attribute.Key("messaging.batch.message_count")
	attrJobType            = attribute.Key("jobwire.job.type")
	attrJobAttempt         = attribute.Key("jobwire.job.attempt")
	messagingSystemJobwire = "jobwire"
	traceparentHeader      = "traceparent"
	tracestateHeader       = "tracestate"
)

// w3c is the W3C Trace Context propagator, used directly (not the global
// one) so that propagation works without any global set-up.
var w3c = propagation.TraceContext{}

// WithTracing turns on trace propagation for a Client: each Enqueue and each
// EnqueueBatch call runs in a span of kind PRODUCER named "publish <queue>",
// child of the span in the call's ctx, and writes that span's W3C trace
// context into the headers of each job it sends: "traceparent", and
// "tracestate" when not empty. A job whose headers (WithHeaders) already hold
// a "traceparent" keeps the caller's headers. The span carries
// messaging.system "jobwire", messaging.destination.name (the queue),
// messaging.operation.type "send", and messaging.message.id (Enqueue, once
// stored) or messaging.batch.message_count (EnqueueBatch); it ends when the
// call returns, with status Error and the error recorded when the call fails.
// The tracer comes from WithTracerProvider, else the global provider
// (otel.GetTracerProvider). Off by default. A Worker ignores it (see
// TracingMiddleware).
func WithTracing() Option {
	return func(c *clientConfig) { c.tracing = true }
}

// WithTracerProvider sets the OpenTelemetry TracerProvider of WithTracing
// (it does not turn tracing on) and of TracingMiddleware; nil (the default)
// is the global provider, otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *clientConfig) { c.tracerProvider = tp }
}

// tracer is the tracer of the configuration's provider.
func (c *clientConfig) tracer() trace.Tracer {
	tp := c.tracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// startPublish starts the PRODUCER span of an Enqueue / EnqueueBatch call.
func startPublish(ctx context.Context, tracer trace.Tracer, queue string) (context.Context, trace.Span) {
	if ctx == nil {
		ctx = context.Background()
	}
	return tracer.Start(ctx, "publish "+queue,
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attrMessagingSystem.String(messagingSystemJobwire),
			attrDestinationName.String(queue),
			attrOperationType.String("send"),
		))
}

// injectTrace writes the trace context of ctx into the request's headers,
// unless they already hold a traceparent. req.Headers is the request's own
// map (WithHeaders copies), never the caller's.
func injectTrace(ctx context.Context, req *jobwirepb.EnqueueRequest) {
	if _, ok := req.Headers[traceparentHeader]; ok {
		return
	}
	carrier := propagation.MapCarrier{}
	w3c.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return // no valid span context
	}
	if req.Headers == nil {
		req.Headers = make(map[string]string, len(carrier))
	}
	for _, k := range []string{traceparentHeader, tracestateHeader} {
		if v := carrier[k]; v != "" {
			req.Headers[k] = v
		}
	}
}

// endSpan ends span, recording err (when not nil) with status Error.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, err.Error())
	}
	span.End()
}

// TracingMiddleware returns a Middleware (Worker.Use) that runs each job in
// a span of kind CONSUMER named "process <queue>". Its parent is the remote
// span of the W3C trace context in the job's headers ("traceparent",
// "tracestate"; a Client with WithTracing writes them); a job without a
// valid traceparent gets a new root span (never a child of the span, if any,
// in the context given to Worker.Run). The span is in the ctx passed to the
// next layer (trace.SpanFromContext(ctx) in the handler) and carries
// messaging.system "jobwire", messaging.destination.name (the queue),
// messaging.operation.type "process", messaging.message.id (the job id),
// jobwire.job.type and jobwire.job.attempt. It ends when the next layer
// returns; an error (or a panic, which goes on) is recorded and sets status
// Error.
//
// Of opts, only WithTracerProvider applies (default: the global provider);
// other Options have no effect here.
func TracingMiddleware(opts ...Option) Middleware {
	var cfg clientConfig
	for _, o := range opts {
		o(&cfg)
	}
	tracer := cfg.tracer()
	return func(next Handler) Handler {
		return func(ctx context.Context, job *Job) (_ any, err error) {
			ctx, span := startProcess(ctx, tracer, job)
			defer func() {
				if p := recover(); p != nil {
					endSpan(span, &panicError{value: p})
					panic(p)
				}
				endSpan(span, err)
			}()
			return next(ctx, job)
		}
	}
}

// startProcess starts the CONSUMER span of a job, parented by the trace
// context of its headers.
func startProcess(ctx context.Context, tracer trace.Tracer, job *Job) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attrMessagingSystem.String(messagingSystemJobwire),
			attrDestinationName.String(job.Queue),
			attrOperationType.String("process"),
			attrMessageID.String(job.ID),
			attrJobType.String(job.Type),
			attrJobAttempt.Int(job.Attempt),
		),
	}
	remote := trace.SpanContextFromContext(
		w3c.Extract(context.Background(), propagation.MapCarrier(job.Headers)))
	if remote.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	return tracer.Start(ctx, "process "+job.Queue, opts...)
}
