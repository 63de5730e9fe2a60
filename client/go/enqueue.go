package jobwire

// Enqueueing jobs: the EnqueueOptions, the payload rule (EncodePayload),
// Client.Enqueue and Client.EnqueueBatch (docs/clients.md, Producer).

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// EnqueueOption sets one option of an enqueued job. Unset options take the
// broker's defaults.
type EnqueueOption func(*jobwirepb.EnqueueRequest)

// WithPriority sets the priority, -1000..1000 (higher is claimed first).
func WithPriority(p int32) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.Priority = p }
}

// WithDelay makes the job due no earlier than now + d (millisecond
// precision). Exclusive with WithRunAt.
func WithDelay(d time.Duration) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.DelayMs = d.Milliseconds() }
}

// WithDelayMs is WithDelay in milliseconds.
func WithDelayMs(ms int64) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.DelayMs = ms }
}

// WithRunAt makes the job due no earlier than t. Exclusive with WithDelay.
func WithRunAt(t time.Time) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.RunAtMs = t.UnixMilli() }
}

// WithRunAtMs is WithRunAt in epoch milliseconds.
func WithRunAtMs(ms int64) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.RunAtMs = ms }
}

// WithMaxAttempts sets the runs allowed before the job becomes DEAD (1..1000).
func WithMaxAttempts(n int32) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.MaxAttempts = n }
}

// WithIdempotencyKey sets the idempotency key: a second enqueue with the same
// key in the same queue returns the first job's id with Duplicate = true.
func WithIdempotencyKey(key string) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.IdempotencyKey = key }
}

// WithConcurrencyKey groups the job under its queue's max_active_per_key
// and key_rate_limit limits (AdminService.CreateQueue / UpdateQueue), e.g. a
// customer id: at most that many jobs of one key run at once, and start at
// that rate. At most 128 bytes.
func WithConcurrencyKey(key string) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.ConcurrencyKey = key }
}

// WithDependsOn makes the job wait for jobs of its queue (docs/semantics.md,
// "Dependencies"): 0..20 distinct ids, all of which must COMPLETE before the
// job is due; a job of another queue (or partition) is named "<queue>/<id>"
// ("Parents in other queues": its result and error are keyed so). Until then it is PENDING with JobInfo.DependenciesLeft > 0;
// then its handler gets each parent's result in Job.DependencyResults. A
// parent that ends DEAD (or is deleted) makes the job DEAD with error
// "dependency failed: <id>", unless WithRunAfterFailedDependency. An id that
// names no job of the queue refuses the job NOT_FOUND / ErrDependencyNotFound
// (Metadata["job_id"]: that id; in a batch, that entry's BatchResult.Err) and
// nothing is stored. Given more than once, the ids are appended; the slice
// is copied.
func WithDependsOn(jobIDs ...string) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.DependsOn = append(r.DependsOn, jobIDs...) }
}

// WithDependsOnBatchIndex makes the job wait for jobs of the same
// EnqueueBatch call, named by their index in its []BatchJob (docs/semantics.md,
// "Dependencies", "A graph in one batch"): as WithDependsOn, but for parents
// whose ids are not known yet, so one batch can store a small graph
// (fan-out, fan-in, chains) whole, and no worker sees a child before its
// batch parents exist. Each index must name an earlier job of the batch,
// without repeats; with WithDependsOn, at most 20 parents in all. Once
// stored, JobInfo.DependsOn lists the ids the batch parents got (a parent
// that is a duplicate, WithIdempotencyKey, stands for the job it
// duplicates). Only for EnqueueBatch: the broker refuses it on Enqueue
// (INVALID_ARGUMENT / ErrInvalidField). A job whose batch parent was
// refused is refused too, in its BatchResult.Err: INVALID_ARGUMENT
// ("jobs[i].depends_on_batch_index[k]: names jobs[j], which was refused")
// when the parent was invalid, NOT_FOUND / ErrDependencyNotFound ("...
// which was not stored") when the parent was not stored. Given more than
// once, the indexes are appended.
func WithDependsOnBatchIndex(indexes ...int) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) {
		for _, i := range indexes {
			// Clamped, not wrapped: an index beyond int32 stays one the
			// broker refuses instead of becoming another job's.
			r.DependsOnBatchIndex = append(r.DependsOnBatchIndex, int32(min(max(i, math.MinInt32), math.MaxInt32)))
		}
	}
}

// WithRunAfterFailedDependency makes a parent (WithDependsOn,
// WithDependsOnBatchIndex) that ends DEAD or is deleted count as done,
// without a result, instead of failing the job.
func WithRunAfterFailedDependency() EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.RunAfterFailedDependency = true }
}

// WithBackoffBase sets the retry backoff base (millisecond precision).
func WithBackoffBase(d time.Duration) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.BackoffBaseMs = d.Milliseconds() }
}

// WithBackoffMax sets the retry backoff cap (millisecond precision).
func WithBackoffMax(d time.Duration) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.BackoffMaxMs = d.Milliseconds() }
}

// WithCompletedRetention sets how long the job is kept once completed
// (millisecond precision; without it, the broker's --completed_retention_ms).
// 0 deletes the job on ack: GetJob then answers NOT_FOUND. At most the
// broker's --completed_retention_max_ms (7 days by default).
func WithCompletedRetention(d time.Duration) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) {
		ms := d.Milliseconds()
		r.CompletedRetentionMs = &ms
	}
}

// WithRunTimeout sets the longest a run of the job may take, rounded up to a
// whole ms, at most 7 days (without it, or with 0 or less: the broker's
// --default_job_timeout_ms, none out of the box). A run still going at its
// deadline is ended by the broker: its lease is not renewed past it, its Ack
// is refused (ErrRunTimedOut), and the attempt fails with error "timeout"
// (retried or DEAD as any failure). A Worker's handler context gets the
// deadline receipt + d, with cause ErrRunTimedOut.
func WithRunTimeout(d time.Duration) EnqueueOption {
	ms := max(d.Milliseconds(), 0)
	if d > 0 && d%time.Millisecond != 0 {
		ms++
	}
	return WithRunTimeoutMs(ms)
}

// WithRunTimeoutMs is WithRunTimeout in milliseconds, 0..604800000 (0: the
// broker default).
func WithRunTimeoutMs(ms int64) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) { r.TimeoutMs = ms }
}

// WithHeaders adds string headers to the job: metadata for the handler
// (trace context such as "traceparent", a tenant, ...) that the broker
// stores with the job unchanged and never interprets. The handler sees them
// in Job.Headers; GetJob, Wait and the Admin ListJobs show them in
// JobInfo.Headers. Given more than once, the maps are merged (a later value
// wins for the same key); the map is copied, so the caller may reuse it. The
// broker's limits: at most 64 headers, each key 1..128 bytes of
// [a-z0-9._-], each value at most 4096 bytes, keys and values at most 16384
// bytes together; beyond them the job is refused INVALID_ARGUMENT /
// ErrInvalidField naming the field "headers" ("jobs[<i>].headers" in the
// message of a BatchResult.Err) and nothing is stored.
func WithHeaders(headers map[string]string) EnqueueOption {
	return func(r *jobwirepb.EnqueueRequest) {
		if len(headers) == 0 {
			return
		}
		if r.Headers == nil {
			r.Headers = make(map[string]string, len(headers))
		}
		for k, v := range headers {
			r.Headers[k] = v
		}
	}
}

// EnqueueResult is the answer to one enqueued job.
type EnqueueResult struct {
	JobID string
	// Duplicate is true when the idempotency key matched an existing job:
	// JobID is that job's id and nothing new was stored.
	Duplicate bool
}

// EncodePayload applies the payload rule: []byte passes through unchanged,
// nil is empty, anything else is encoded with json.Marshal.
func EncodePayload(v any) ([]byte, error) {
	switch p := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return p, nil
	case json.RawMessage:
		return p, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("jobwire: encode payload as JSON: %w", err)
	}
	return b, nil
}

func buildRequest(queue, jobType string, payload any, opts []EnqueueOption) (*jobwirepb.EnqueueRequest, error) {
	data, err := EncodePayload(payload)
	if err != nil {
		return nil, err
	}
	req := &jobwirepb.EnqueueRequest{Queue: queue, Type: jobType, Payload: data}
	for _, o := range opts {
		o(req)
	}
	return req, nil
}

// Enqueue stores one job in queue. payload: []byte passes through unchanged,
// anything else is JSON-encoded. A broker refusal is an *Error (for example
// INVALID_ARGUMENT naming the field); a payload that cannot be JSON-encoded is
// a plain error and nothing is sent. With WithTracing, the call runs in a
// "publish <queue>" span whose trace context goes into the job's headers.
func (c *Client) Enqueue(ctx context.Context, queue, jobType string, payload any, opts ...EnqueueOption) (res EnqueueResult, err error) {
	if c.tracer != nil {
		var span trace.Span
		ctx, span = startPublish(ctx, c.tracer, queue)
		defer func() {
			if err == nil {
				span.SetAttributes(attrMessageID.String(res.JobID))
			}
			endSpan(span, err)
		}()
	}
	req, err := buildRequest(queue, jobType, payload, opts)
	if err != nil {
		return EnqueueResult{}, err
	}
	if c.tracer != nil {
		injectTrace(ctx, req)
	}
	ctx, cancel := withDeadline(ctx, c.timeout)
	defer cancel()
	resp, err := c.stub.Enqueue(ctx, req)
	if err != nil {
		return EnqueueResult{}, toError(err)
	}
	return EnqueueResult{JobID: resp.GetJobId(), Duplicate: resp.GetDuplicate()}, nil
}

// BatchJob is one job of an EnqueueBatch call.
type BatchJob struct {
	Type    string
	Payload any
	Options []EnqueueOption
}

// BatchResult is the outcome of one job of a batch: either JobID / Duplicate,
// or Err (an *Error with the broker's per-job code, message and Reason, e.g.
// errors.Is(r.Err, ErrInvalidField)).
type BatchResult struct {
	JobID     string
	Duplicate bool
	Err       error
}

// EnqueueBatch stores up to 1000 jobs in queue, each atomically on its own.
// It returns one result per job, in order; per-job errors are in
// BatchResult.Err, not returned. The returned error is a call-level error
// (empty or oversized batch, broker unreachable, or a payload that cannot be
// JSON-encoded, in which case nothing is sent). With WithTracing, the call
// runs in one "publish <queue>" span whose trace context goes into every
// job's headers; per-job errors do not mark it failed.
func (c *Client) EnqueueBatch(ctx context.Context, queue string, jobs []BatchJob) (_ []BatchResult, err error) {
	if c.tracer != nil {
		var span trace.Span
		ctx, span = startPublish(ctx, c.tracer, queue)
		span.SetAttributes(attrBatchMessageCount.Int(len(jobs)))
		defer func() { endSpan(span, err) }()
	}
	req := &jobwirepb.EnqueueBatchRequest{Jobs: make([]*jobwirepb.EnqueueRequest, 0, len(jobs))}
	for i, j := range jobs {
		r, err := buildRequest(queue, j.Type, j.Payload, j.Options)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		if c.tracer != nil {
			injectTrace(ctx, r)
		}
		req.Jobs = append(req.Jobs, r)
	}
	ctx, cancel := withDeadline(ctx, c.timeout)
	defer cancel()
	resp, err := c.stub.EnqueueBatch(ctx, req)
	if err != nil {
		return nil, toError(err)
	}
	out := make([]BatchResult, len(resp.GetResults()))
	for i, r := range resp.GetResults() {
		if code := codes.Code(r.GetCode()); code != codes.OK {
			out[i].Err = newError(code, r.GetReason(), r.GetMessage())
			continue
		}
		out[i].JobID = r.GetJobId()
		out[i].Duplicate = r.GetDuplicate()
	}
	return out, nil
}
