// Package jobwire is the Go client of the jobwire job-queue broker: a
// producer Client (Enqueue, EnqueueBatch, GetJob, Wait, Subscribe, Cancel,
// ReportProgress, AckBatch) and a Worker that consumes queues over one Claim
// stream. It follows docs/clients.md.
//
// Every failed RPC returns an *Error carrying the gRPC code, the broker's
// message and the broker's stable reason (Error.Reason, with Metadata, Field
// and RetryDelay); test the reason with errors.Is and the sentinels, e.g.
// errors.Is(err, jobwire.ErrLeaseStale). See Error.
package jobwire

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// DefaultAddr is the broker address used when none is given and JOBWIRE_ADDR
// is not set.
const DefaultAddr = "localhost:50051"

// maxRecvMsgSize is the largest message the client accepts: 64 MiB, the
// largest --max_payload_bytes of the broker (gRPC's default is 4 MiB).
const maxRecvMsgSize = 64 << 20

// DefaultTimeout is the deadline of every unary RPC whose context has none.
const DefaultTimeout = 10 * time.Second

// JobState is the state of a job (PENDING, ACTIVE, COMPLETED, DEAD).
type JobState = jobwirepb.JobState

// The job states.
const (
	StatePending   = jobwirepb.JobState_JOB_STATE_PENDING
	StateActive    = jobwirepb.JobState_JOB_STATE_ACTIVE
	StateCompleted = jobwirepb.JobState_JOB_STATE_COMPLETED
	StateDead      = jobwirepb.JobState_JOB_STATE_DEAD
)

// JobInfo is a job as GetJob returns it (every field of the proto's Job).
// Headers holds the job's WithHeaders (nil when none). Run control shows in
// TimeoutMs (the job's run timeout, 0: none),
// RunDeadlineMs (the current run's deadline, Redis clock, while ACTIVE),
// CancelRequestedAtMs (when Cancel asked the current run to stop; 0: it did
// not), ProgressPercent (nil when no report had one) and ProgressData.
type JobInfo = jobwirepb.Job

// Option configures a Client. Every Option is also a WorkerOption, configuring
// the connection of a Worker the same way.
type Option func(*clientConfig)

type clientConfig struct {
	timeout  time.Duration
	dialOpts []grpc.DialOption
	sec      securityConfig
	// secOpts are the dial options made from sec by resolveSecurity;
	// hasToken tells whether they send a token.
	secOpts  []grpc.DialOption
	hasToken bool
	// tracing (WithTracing) and tracerProvider (WithTracerProvider; nil:
	// the global one): see tracing.go.
	tracing        bool
	tracerProvider trace.TracerProvider
}

// resolveSecurity loads the TLS material and reads $JOBWIRE_TOKEN once, at
// construction, so that a bad setting is an error of Dial / NewWorker.
func (c *clientConfig) resolveSecurity() error {
	opts, hasToken, err := c.sec.dialOptions()
	if err != nil {
		return err
	}
	c.secOpts, c.hasToken = opts, hasToken
	return nil
}

// WithTimeout sets the deadline given to each unary RPC whose context has no
// deadline of its own (default 10 s; 0 or less means the default). For a
// Worker it is the deadline of each AckBatch, Fail and ExtendLease call
// (ExtendLease: at most a third of the lease); an ack batch on its Work
// stream waits for its answer while the stream lasts.
func WithTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.timeout = d }
}

// WithDialOptions appends gRPC dial options. They come after the options of
// WithTLS / WithTLSRootCA / WithTLSClientCert / WithToken, so transport
// credentials given here replace the TLS (or the default plaintext) transport,
// and grpc.WithDefaultServiceConfig given here replaces the default load
// balancing (round_robin), e.g.
// grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"pick_first": {}}]}`).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *clientConfig) { c.dialOpts = append(c.dialOpts, opts...) }
}

// Client is a producer: it enqueues, reads and cancels jobs over one gRPC
// channel (and acks claimed jobs in batches with AckBatch). It is safe for
// concurrent use.
type Client struct {
	conn    *grpc.ClientConn
	stub    jobwirepb.BrokerServiceClient
	timeout time.Duration
	addr    string
	tracer  trace.Tracer // nil: tracing off (WithTracing)
}

// Dial builds a Client for the broker at addr ("host:port"; empty means
// $JOBWIRE_ADDR, else localhost:50051). The channel connects lazily: an
// unreachable broker shows up as an UNAVAILABLE or DEADLINE_EXCEEDED *Error on
// the first call, not here. A TLS file that cannot be read or parsed, or an
// unusable token, is an error here.
func Dial(addr string, opts ...Option) (*Client, error) {
	cfg := clientConfig{timeout: DefaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.timeout <= 0 {
		cfg.timeout = DefaultTimeout
	}
	if err := cfg.resolveSecurity(); err != nil {
		return nil, err
	}
	addr = resolveAddr(addr)
	conn, err := newConn(addr, &cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{conn: conn, stub: jobwirepb.NewBrokerServiceClient(conn), timeout: cfg.timeout, addr: addr}
	if cfg.tracing {
		c.tracer = cfg.tracer()
	}
	return c, nil
}

// Addr is the broker address the client talks to.
func (c *Client) Addr() string { return c.addr }

// Close closes the channel.
func (c *Client) Close() error { return c.conn.Close() }

// Stub gives the generated gRPC client on the same channel, for calls this
// package does not wrap.
func (c *Client) Stub() jobwirepb.BrokerServiceClient { return c.stub }

// withDeadline gives ctx the client's default deadline when it has none.
func withDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// BatchAck is one ack of an AckBatch call: the job, the lease token it was
// claimed with, and its result (the payload rule: []byte unchanged, nil as
// empty, anything else JSON-encoded).
type BatchAck struct {
	Queue      string
	JobID      string
	LeaseToken string
	Result     any
}

// AckResult is the outcome of one ack of a batch: Err is nil when the job is
// COMPLETED with the result (or was already, by an Ack with the same token),
// else an *Error with the broker's per-ack code, message and Reason
// (INVALID_ARGUMENT / INVALID_FIELD naming "acks[<i>].<field>", NOT_FOUND /
// JOB_NOT_FOUND, or FAILED_PRECONDITION / LEASE_STALE when the token is not
// the job's current lease).
type AckResult struct {
	Err error
}

// AckBatch acks up to 1000 claimed jobs, of one or several queues, in one
// call; each ack is settled on its own, as Ack would (the batch is not
// atomic). It returns one result per ack, in order; per-ack errors are in
// AckResult.Err, not returned. The returned error is a call-level *Error
// (INVALID_ARGUMENT for an empty or oversized batch, PERMISSION_DENIED,
// UNAUTHENTICATED, UNAVAILABLE, in which case some acks may be stored: repeat
// them all with the same tokens), or a plain error when a result cannot be
// JSON-encoded (nothing is sent). Workers send their acks this way by
// themselves; this is for callers that claim through Stub.
func (c *Client) AckBatch(ctx context.Context, acks []BatchAck) ([]AckResult, error) {
	req := &jobwirepb.AckBatchRequest{Acks: make([]*jobwirepb.AckRequest, 0, len(acks))}
	for i, a := range acks {
		result, err := EncodePayload(a.Result)
		if err != nil {
			return nil, fmt.Errorf("ack %d: %w", i, err)
		}
		req.Acks = append(req.Acks, &jobwirepb.AckRequest{
			Queue: a.Queue, JobId: a.JobID, LeaseToken: a.LeaseToken, Result: result,
		})
	}
	ctx, cancel := withDeadline(ctx, c.timeout)
	defer cancel()
	errs, err := ackBatch(ctx, c.stub, req)
	if err != nil {
		return nil, err
	}
	out := make([]AckResult, len(errs))
	for i, e := range errs {
		out[i].Err = e
	}
	return out, nil
}

// ackBatch makes one AckBatch call. It returns one error per ack, in order
// (nil: acked; else an *Error), or the call's *Error.
func ackBatch(ctx context.Context, stub jobwirepb.BrokerServiceClient, req *jobwirepb.AckBatchRequest) ([]error, error) {
	resp, err := stub.AckBatch(ctx, req)
	if err != nil {
		return nil, toError(err)
	}
	return ackResults("AckBatch", resp.GetResults(), len(req.GetAcks()))
}

// ackResults turns the results of n acks (AckBatchResponse.results,
// WorkAcksAnswer.results) into one error per ack, in order (nil for an ack
// stored); an INTERNAL error, naming call, when there are not n of them.
func ackResults(call string, results []*jobwirepb.AckResult, n int) ([]error, error) {
	if len(results) != n {
		return nil, newError(codes.Internal, "",
			fmt.Sprintf("%s answered %d results for %d acks", call, len(results), n))
	}
	errs := make([]error, len(results))
	for i, r := range results {
		if code := codes.Code(r.GetCode()); code != codes.OK {
			errs[i] = newError(code, r.GetReason(), r.GetMessage())
		}
	}
	return errs, nil
}

// GetJob reads one job in whatever state it is.
func (c *Client) GetJob(ctx context.Context, queue, jobID string) (*JobInfo, error) {
	return c.readJob(ctx, &jobwirepb.GetJobRequest{Queue: queue, JobId: jobID})
}

// GetJobByIdempotencyKey returns the job enqueued with the idempotency key
// key (WithIdempotencyKey), while the key's dedup window lasts; an error with
// code NotFound when there is none.
func (c *Client) GetJobByIdempotencyKey(ctx context.Context, queue, key string) (*JobInfo, error) {
	return c.readJob(ctx, &jobwirepb.GetJobRequest{Queue: queue, IdempotencyKey: key})
}

func (c *Client) readJob(ctx context.Context, req *jobwirepb.GetJobRequest) (*JobInfo, error) {
	ctx, cancel := withDeadline(ctx, c.timeout)
	defer cancel()
	resp, err := c.stub.GetJob(ctx, req)
	if err != nil {
		return nil, toError(err)
	}
	return resp.GetJob(), nil
}

// Cancel cancels a job. A PENDING job becomes DEAD with error "cancelled" at
// once: cancelRequested is false. An ACTIVE job is marked cancel-requested
// (JobInfo.CancelRequestedAtMs) and cancelRequested is true: the Worker
// running it is told at once (its handler context is cancelled with cause
// ErrJobCancelled), and the job becomes DEAD "cancelled" when the run fails
// or its lease runs out (an Ack that comes first still completes it).
// Cancelling a cancel-requested job again answers true and changes nothing.
// A COMPLETED or DEAD job is refused with FAILED_PRECONDITION (ErrJobState),
// an unknown one with NOT_FOUND (ErrJobNotFound).
func (c *Client) Cancel(ctx context.Context, queue, jobID string) (cancelRequested bool, err error) {
	ctx, cancel := withDeadline(ctx, c.timeout)
	defer cancel()
	resp, err := c.stub.Cancel(ctx, &jobwirepb.CancelRequest{Queue: queue, JobId: jobID})
	if err != nil {
		return false, toError(err)
	}
	return resp.GetCancelRequested(), nil
}

// Progress is one progress report of a run: it replaces the job's progress
// as a whole (JobInfo.ProgressPercent, JobInfo.ProgressData). At least one of
// its fields is required.
type Progress struct {
	// Percent is 0..100 (Percent(n) makes one); nil: none.
	Percent *int32
	// Data is an opaque value of at most 4096 bytes; empty: none.
	Data []byte
}

// Percent is a Progress.Percent of n.
func Percent(n int32) *int32 { return &n }

// ReportProgress records the progress of an active job's run, identified by
// its lease token (a Worker's handler calls Job.ReportProgress instead). It
// does not renew the lease. The job's GetJob, Wait updates and an
// EventProgress show it.
//
// Errors (*Error): INVALID_ARGUMENT / ErrInvalidField with Field "percent"
// (not 0..100) or "data" (more than 4096 bytes), or neither given;
// NOT_FOUND; FAILED_PRECONDITION with ErrLeaseStale / ErrJobState (the run
// is over), ErrJobCancelled (Cancel asked the run to stop) or ErrRunTimedOut
// (the run passed its deadline). Nothing is stored on any error.
func (c *Client) ReportProgress(ctx context.Context, queue, jobID, leaseToken string, p Progress) error {
	ctx, cancel := withDeadline(ctx, c.timeout)
	defer cancel()
	return reportProgress(ctx, c.stub, queue, jobID, leaseToken, p)
}

// reportProgress makes one ReportProgress call; the error is an *Error.
func reportProgress(ctx context.Context, stub jobwirepb.BrokerServiceClient, queue, jobID, leaseToken string, p Progress) error {
	_, err := stub.ReportProgress(ctx, &jobwirepb.ReportProgressRequest{
		Queue: queue, JobId: jobID, LeaseToken: leaseToken, Percent: p.Percent, Data: p.Data,
	})
	return toError(err)
}
