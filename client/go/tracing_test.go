package jobwire_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	jobwire "github.com/jobwire/jobwire/client/go"
)

// tracing is one test's TracerProvider (never the global one) with an
// in-memory exporter that receives each span as it ends.
type tracing struct {
	tp  *sdktrace.TracerProvider
	exp *tracetest.InMemoryExporter
}

func newTracing(t *testing.T) *tracing {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &tracing{tp: tp, exp: exp}
}

// spans are the ended spans named name, of kind kind.
func (tr *tracing) spans(name string, kind trace.SpanKind) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range tr.exp.GetSpans() {
		if s.Name == name && s.SpanKind == kind {
			out = append(out, s)
		}
	}
	return out
}

// waitSpans waits until n spans named name, of kind kind, have ended, and
// returns them.
func (tr *tracing) waitSpans(t *testing.T, name string, kind trace.SpanKind, n int) []tracetest.SpanStub {
	t.Helper()
	var got []tracetest.SpanStub
	waitFor(t, 10*time.Second, name+" spans", func() bool {
		got = tr.spans(name, kind)
		return len(got) >= n
	})
	if len(got) != n {
		t.Fatalf("%d %s spans, want %d", len(got), name, n)
	}
	return got
}

// tracedWorker runs handler for type "t" on q behind the tracing middleware
// of tr's provider; it records the span context each run's ctx carries.
type tracedWorker struct {
	mu  sync.Mutex
	ctx map[string]trace.SpanContext // job id -> trace.SpanContextFromContext(ctx)
}

func startTracedWorker(t *testing.T, tr *tracing, q string, handler jobwire.Handler) *tracedWorker {
	t.Helper()
	tw := &tracedWorker{ctx: map[string]trace.SpanContext{}}
	startWorkerUse(t, brokerAddr, []string{q},
		[]jobwire.Middleware{jobwire.TracingMiddleware(jobwire.WithTracerProvider(tr.tp))},
		map[string]jobwire.Handler{"t": func(ctx context.Context, job *jobwire.Job) (any, error) {
			tw.mu.Lock()
			tw.ctx[job.ID] = trace.SpanContextFromContext(ctx)
			tw.mu.Unlock()
			if handler == nil {
				return nil, nil
			}
			return handler(ctx, job)
		}})
	return tw
}

func (tw *tracedWorker) spanContext(id string) trace.SpanContext {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.ctx[id]
}

// attrs is a span's attributes as a map.
func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// checkAttrs fails the test unless the span has each of want (other
// attributes are allowed) and none of absent.
func checkAttrs(t *testing.T, s tracetest.SpanStub, want []attribute.KeyValue, absent ...attribute.Key) {
	t.Helper()
	got := attrs(s)
	for _, kv := range want {
		if v, ok := got[kv.Key]; !ok || v != kv.Value {
			t.Errorf("span %s: attribute %s = %v (set: %v), want %v", s.Name, kv.Key, v.Emit(), ok, kv.Value.Emit())
		}
	}
	for _, k := range absent {
		if _, ok := got[k]; ok {
			t.Errorf("span %s: has attribute %s, want none", s.Name, k)
		}
	}
}

// processAttrs are the attributes of the process span of a job.
func processAttrs(q, id string, attempt int) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("messaging.system", "jobwire"),
		attribute.String("messaging.destination.name", q),
		attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.message.id", id),
		attribute.String("jobwire.job.type", "t"),
		attribute.Int("jobwire.job.attempt", attempt),
	}
}

// The producer span of a traced Enqueue is a child of the caller's span and
// the parent of the handler's span, which is the current span of the
// handler's ctx; the caller's headers are left as they were.
func TestTracingProducerParentOfHandler(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	c := newClient(t, brokerAddr, jobwire.WithTracing(), jobwire.WithTracerProvider(tr.tp))
	q := queueName(t)
	var headers sync.Map // job id -> job.Headers
	tw := startTracedWorker(t, tr, q, func(ctx context.Context, job *jobwire.Job) (any, error) {
		headers.Store(job.ID, maps.Clone(job.Headers))
		return nil, nil
	})

	// The test span continues a remote trace with a tracestate, which the
	// publish span inherits and the headers carry.
	state, err := trace.ParseTraceState("vendor=1")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled, TraceState: state, Remote: true,
	})
	ctx, testSpan := tr.tp.Tracer("test").Start(
		trace.ContextWithRemoteSpanContext(context.Background(), remote), "test")
	mine := map[string]string{"tenant": "acme"}
	res, err := c.Enqueue(ctx, q, "t", map[string]int{"n": 1}, jobwire.WithHeaders(mine))
	testSpan.End()
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	id := res.JobID
	if !maps.Equal(mine, map[string]string{"tenant": "acme"}) {
		t.Errorf("the caller's headers became %v", mine)
	}
	waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)

	pub := tr.waitSpans(t, "publish "+q, trace.SpanKindProducer, 1)[0]
	proc := tr.waitSpans(t, "process "+q, trace.SpanKindConsumer, 1)[0]
	test := testSpan.SpanContext()
	if pub.Parent.SpanID() != test.SpanID() || pub.SpanContext.TraceID() != test.TraceID() {
		t.Errorf("publish span: parent %v, want the test span %v", pub.Parent, test)
	}
	if proc.SpanContext.TraceID() != pub.SpanContext.TraceID() {
		t.Errorf("process span trace id %s, want the publish span's %s",
			proc.SpanContext.TraceID(), pub.SpanContext.TraceID())
	}
	if proc.Parent.SpanID() != pub.SpanContext.SpanID() || !proc.Parent.IsRemote() {
		t.Errorf("process span parent %v, want the publish span %s (remote)", proc.Parent, pub.SpanContext.SpanID())
	}
	if got := tw.spanContext(id); !got.Equal(proc.SpanContext) {
		t.Errorf("the handler's ctx holds span %v, want the process span %v", got, proc.SpanContext)
	}
	checkAttrs(t, pub, []attribute.KeyValue{
		attribute.String("messaging.system", "jobwire"),
		attribute.String("messaging.destination.name", q),
		attribute.String("messaging.operation.type", "send"),
		attribute.String("messaging.message.id", id),
	}, "messaging.batch.message_count")
	checkAttrs(t, proc, processAttrs(q, id, 1))
	if pub.Status.Code != otelcodes.Unset || proc.Status.Code != otelcodes.Unset {
		t.Errorf("statuses %v / %v, want unset", pub.Status, proc.Status)
	}

	h, _ := headers.Load(id)
	got := h.(map[string]string)
	if got["tenant"] != "acme" || got["tracestate"] != "vendor=1" || len(got) != 3 {
		t.Errorf("job headers %v, want tenant, traceparent and tracestate vendor=1", got)
	}
	if ts := proc.SpanContext.TraceState().String(); ts != "vendor=1" {
		t.Errorf("process span tracestate %q, want vendor=1", ts)
	}
	wantTP := "00-" + pub.SpanContext.TraceID().String() + "-" + pub.SpanContext.SpanID().String() + "-01"
	if got["traceparent"] != wantTP {
		t.Errorf("traceparent %q, want %q", got["traceparent"], wantTP)
	}
}

// A traced EnqueueBatch makes one span, the parent of every job's span.
func TestTracingBatch(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	c := newClient(t, brokerAddr, jobwire.WithTracing(), jobwire.WithTracerProvider(tr.tp))
	q := queueName(t)
	startTracedWorker(t, tr, q, nil)

	jobs := make([]jobwire.BatchJob, 3)
	for i := range jobs {
		jobs[i] = jobwire.BatchJob{Type: "t", Payload: map[string]int{"n": i}}
	}
	results, err := c.EnqueueBatch(context.Background(), q, jobs)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	for _, r := range results {
		if r.Err != nil {
			t.Fatalf("EnqueueBatch: job refused: %v", r.Err)
		}
		waitState(t, c, q, r.JobID, jobwire.StateCompleted, 10*time.Second)
	}

	pub := tr.waitSpans(t, "publish "+q, trace.SpanKindProducer, 1)[0]
	if pub.Parent.IsValid() {
		t.Errorf("batch span has parent %v, want a root span (no span in ctx)", pub.Parent)
	}
	checkAttrs(t, pub, []attribute.KeyValue{
		attribute.String("messaging.system", "jobwire"),
		attribute.String("messaging.destination.name", q),
		attribute.String("messaging.operation.type", "send"),
		attribute.Int("messaging.batch.message_count", 3),
	}, "messaging.message.id")
	procs := tr.waitSpans(t, "process "+q, trace.SpanKindConsumer, len(jobs))
	seen := map[string]bool{}
	for _, p := range procs {
		id := attrs(p)["messaging.message.id"].AsString()
		seen[id] = true
		if p.Parent.SpanID() != pub.SpanContext.SpanID() || p.SpanContext.TraceID() != pub.SpanContext.TraceID() {
			t.Errorf("job %s: process span parent %v, want the batch span %v", id, p.Parent, pub.SpanContext)
		}
	}
	for _, r := range results {
		if !seen[r.JobID] {
			t.Errorf("no process span for job %s", r.JobID)
		}
	}
}

// A job from a client without tracing has no trace headers and its handler
// span is a new root.
func TestTracingNoTraceparentIsRoot(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	c := newClient(t, brokerAddr) // tracing off
	q := queueName(t)
	var gotHeaders sync.Map
	startTracedWorker(t, tr, q, func(ctx context.Context, job *jobwire.Job) (any, error) {
		gotHeaders.Store(job.ID, len(job.Headers))
		return nil, nil
	})

	ctx, testSpan := tr.tp.Tracer("test").Start(context.Background(), "test")
	res, err := c.Enqueue(ctx, q, "t", nil)
	testSpan.End()
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	waitState(t, c, q, res.JobID, jobwire.StateCompleted, 10*time.Second)
	if n, _ := gotHeaders.Load(res.JobID); n != 0 {
		t.Errorf("job has %v headers, want none (tracing off)", n)
	}
	proc := tr.waitSpans(t, "process "+q, trace.SpanKindConsumer, 1)[0]
	if proc.Parent.IsValid() {
		t.Errorf("process span parent %v, want a root span", proc.Parent)
	}
	if proc.SpanContext.TraceID() == testSpan.SpanContext().TraceID() {
		t.Errorf("process span joined the caller's trace without a traceparent")
	}
	if n := len(tr.spans("publish "+q, trace.SpanKindProducer)); n != 0 {
		t.Errorf("%d publish spans with tracing off, want 0", n)
	}
	checkAttrs(t, proc, processAttrs(q, res.JobID, 1))
}

// A traceparent the caller put in the headers is kept: the handler's span is
// its child, not the publish span's.
func TestTracingKeepsCallerTraceparent(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	c := newClient(t, brokerAddr, jobwire.WithTracing(), jobwire.WithTracerProvider(tr.tp))
	q := queueName(t)
	startTracedWorker(t, tr, q, nil)

	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
	)
	mine := map[string]string{"traceparent": "00-" + traceID + "-" + spanID + "-01"}
	orig := maps.Clone(mine)
	ctx, testSpan := tr.tp.Tracer("test").Start(context.Background(), "test")
	res, err := c.Enqueue(ctx, q, "t", nil, jobwire.WithHeaders(mine))
	testSpan.End()
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if !maps.Equal(mine, orig) {
		t.Errorf("the caller's headers became %v", mine)
	}
	info := waitState(t, c, q, res.JobID, jobwire.StateCompleted, 10*time.Second)
	if !maps.Equal(info.GetHeaders(), orig) {
		t.Errorf("stored headers %v, want the caller's %v", info.GetHeaders(), orig)
	}
	tr.waitSpans(t, "publish "+q, trace.SpanKindProducer, 1) // still recorded
	proc := tr.waitSpans(t, "process "+q, trace.SpanKindConsumer, 1)[0]
	if proc.SpanContext.TraceID().String() != traceID || proc.Parent.SpanID().String() != spanID {
		t.Errorf("process span trace %s parent %s, want the caller's %s / %s",
			proc.SpanContext.TraceID(), proc.Parent.SpanID(), traceID, spanID)
	}
}

// A failing handler's span has status Error with the error recorded; a failed
// Enqueue's span too.
func TestTracingErrors(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	c := newClient(t, brokerAddr, jobwire.WithTracing(), jobwire.WithTracerProvider(tr.tp))
	q := queueName(t)
	startTracedWorker(t, tr, q, func(ctx context.Context, job *jobwire.Job) (any, error) {
		return nil, errors.New("boom")
	})

	id := mustEnqueue(t, c, q, "t", nil, jobwire.WithMaxAttempts(1))
	waitState(t, c, q, id, jobwire.StateDead, 10*time.Second)
	proc := tr.waitSpans(t, "process "+q, trace.SpanKindConsumer, 1)[0]
	checkError(t, proc, "boom")
	checkAttrs(t, proc, processAttrs(q, id, 1))

	// An invalid priority: the broker refuses INVALID_ARGUMENT.
	_, err := c.Enqueue(context.Background(), q, "t", nil, jobwire.WithPriority(5000))
	if err == nil {
		t.Fatal("Enqueue with priority 5000 succeeded")
	}
	pubs := tr.spans("publish "+q, trace.SpanKindProducer)
	if len(pubs) != 2 {
		t.Fatalf("%d publish spans, want 2", len(pubs))
	}
	checkError(t, pubs[1], err.Error())
	checkAttrs(t, pubs[1], nil, "messaging.message.id")
}

// checkError fails the test unless the span has status Error with message
// msg and an exception event of that message.
func checkError(t *testing.T, s tracetest.SpanStub, msg string) {
	t.Helper()
	if s.Status.Code != otelcodes.Error || s.Status.Description != msg {
		t.Errorf("span %s: status %v, want Error %q", s.Name, s.Status, msg)
	}
	for _, ev := range s.Events {
		if ev.Name != "exception" {
			continue
		}
		for _, kv := range ev.Attributes {
			if kv.Key == "exception.message" && kv.Value.AsString() == msg {
				return
			}
		}
	}
	t.Errorf("span %s: no exception event with message %q: %v", s.Name, msg, s.Events)
}

// Without a traceparent the process span is a root even when the ctx given
// to the middleware (from Worker.Run's) already carries a span; the span
// ends when the next layer panics, with the panic recorded.
func TestTracingMiddlewareIgnoresSpanInCtx(t *testing.T) {
	t.Parallel()
	tr := newTracing(t)
	ctx, outer := tr.tp.Tracer("test").Start(context.Background(), "run")
	defer outer.End()
	mw := jobwire.TracingMiddleware(jobwire.WithTracerProvider(tr.tp))
	job := &jobwire.Job{ID: "j1", Queue: "q1", Type: "t", Attempt: 2}
	var inner trace.SpanContext
	_, err := mw(func(ctx context.Context, job *jobwire.Job) (any, error) {
		inner = trace.SpanContextFromContext(ctx)
		return nil, nil
	})(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	proc := tr.waitSpans(t, "process q1", trace.SpanKindConsumer, 1)[0]
	if proc.Parent.IsValid() || proc.SpanContext.TraceID() == outer.SpanContext().TraceID() {
		t.Errorf("process span parent %v in trace %s, want a new root", proc.Parent, proc.SpanContext.TraceID())
	}
	if !inner.Equal(proc.SpanContext) {
		t.Errorf("the handler's ctx holds span %v, want the process span %v", inner, proc.SpanContext)
	}
	checkAttrs(t, proc, processAttrs("q1", "j1", 2))

	job.Queue = "q2"
	func() {
		defer func() {
			if p := recover(); p != "kaput" {
				t.Errorf("recovered %v, want the handler's panic", p)
			}
		}()
		_, _ = mw(func(ctx context.Context, job *jobwire.Job) (any, error) { panic("kaput") })(ctx, job)
	}()
	checkError(t, tr.waitSpans(t, "process q2", trace.SpanKindConsumer, 1)[0], "kaput")
}
