package jobwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// DefaultGrace is how long Stop waits for running handlers by default.
const DefaultGrace = 25 * time.Second

// defaultLeaseMs is the broker's documented default lease, used to pace
// renewals when WorkerOptions.LeaseMs is 0 and the lease the broker granted
// cannot be read from the claimed job.
const defaultLeaseMs = 30000

// The lease limits of the broker (1 s .. 12 h).
const (
	minLeaseMs = 1000
	maxLeaseMs = 43200000
)

// maxErrorText is the broker's limit on Fail.error (64 KiB).
const maxErrorText = 64 * 1024

// ErrLeaseLost is the cause (context.Cause) of a handler context cancelled
// because the broker refused a lease renewal: the job moved on (lease expired
// and the job was retried or became dead).
var ErrLeaseLost = errors.New("jobwire: lease lost")

// ErrWorkerAbandoned is the cause of a handler context cancelled because the
// stop grace ran out.
var ErrWorkerAbandoned = errors.New("jobwire: stop grace expired, handler abandoned")

// Job is a claimed job as a handler sees it.
type Job struct {
	ID    string
	Queue string
	Type  string
	// Payload is the producer's bytes, unchanged.
	Payload []byte
	// Attempt is 1 for the first run (the broker's attempts).
	Attempt     int
	MaxAttempts int
	// LeaseExpiresAtMs is the lease expiry (epoch ms, Redis clock) when the
	// job was delivered.
	LeaseExpiresAtMs int64
	// WorkerID is the id of the worker running the job.
	WorkerID string
	// Info is the job as the broker delivered it (every field of the proto).
	Info *JobInfo

	leaseToken string
}

// JSON decodes the payload as JSON into v.
func (j *Job) JSON(v any) error { return json.Unmarshal(j.Payload, v) }

// Handler runs one job. Its result is acked: []byte unchanged, nil as empty,
// anything else JSON-encoded. A returned error fails the job with the text
// "<ErrorType>: <message>"; wrap it with NonRetryable to make the job DEAD at
// once. A panic is recovered and fails the job ("panic: <value>").
//
// ctx is cancelled (with cause ErrLeaseLost) when the broker refuses a lease
// renewal, and (with cause ErrWorkerAbandoned) when Stop's grace runs out.
type Handler func(ctx context.Context, job *Job) (any, error)

// OutcomeKind names a final outcome of a job run.
type OutcomeKind string

// The final outcomes reported to WorkerOptions.OnOutcome. *Error: the broker
// refused the Ack / Fail. *Unknown: it was still answered UNAVAILABLE /
// DEADLINE_EXCEEDED when the lease ended, so it may or may not have been
// stored. ExpiredDropped: the delivery's lease had ended before its handler
// could start; no handler ran and nothing was sent (the broker delivers the
// job again).
const (
	OutcomeAckOK          OutcomeKind = "ack_ok"
	OutcomeAckError       OutcomeKind = "ack_error"
	OutcomeAckUnknown     OutcomeKind = "ack_unknown"
	OutcomeFailOK         OutcomeKind = "fail_ok"
	OutcomeFailError      OutcomeKind = "fail_error"
	OutcomeFailUnknown    OutcomeKind = "fail_unknown"
	OutcomeExpiredDropped OutcomeKind = "expired_dropped"
)

// Outcome is one final outcome of a job run, given to WorkerOptions.OnOutcome.
type Outcome struct {
	Kind OutcomeKind
	Job  *Job
	// Code is the gRPC code of the last answer to the Ack / Fail (ack_error,
	// fail_error, ack_unknown, fail_unknown); OK otherwise.
	Code codes.Code
	// Err is the *Error of that answer (ack_error, fail_error, ack_unknown,
	// fail_unknown).
	Err error
	// FailOutcome is "RETRY_SCHEDULED" or "DEAD" (fail_ok).
	FailOutcome string
	// NextAttemptAtMs is when the retry is due (fail_ok with RETRY_SCHEDULED).
	NextAttemptAtMs int64
	// HandlerErr is the error the job was failed with (fail_ok, fail_error).
	HandlerErr error
	// ErrorText is the text sent with Fail (fail_ok, fail_error, fail_unknown).
	ErrorText string
	// Result is the bytes sent with Ack (ack_ok, ack_error, ack_unknown).
	Result []byte
}

// WorkerOptions configures a Worker. Only Queues is required.
type WorkerOptions struct {
	// Queues to consume, earlier queues first.
	Queues []string
	// Concurrency is the number of handlers running at once (default 1).
	Concurrency int
	// LeaseMs is the lease per job (0: the broker default, 30 s). The lease is
	// renewed every LeaseMs/3 while a handler runs (with 0, every third of the
	// lease the broker granted at claim time).
	LeaseMs int64
	// WorkerID names the worker on claimed jobs (default go-<host>-<pid>).
	WorkerID string
	// Grace is how long Stop waits for running handlers and their Ack / Fail
	// (default 25 s).
	Grace time.Duration
	// OnOutcome, when set, receives every final outcome. It is called from
	// the job's goroutine; it should not block for long.
	OnOutcome func(Outcome)
	// Timeout is the deadline of each unary call (AckBatch, Fail,
	// ExtendLease); default 10 s. Acks are sent in AckBatch calls, each
	// carrying the acks of the jobs that finished while the previous one was
	// in flight.
	Timeout time.Duration
	// Logger receives the worker's log records (default slog.Default()).
	Logger *slog.Logger
	// ClientOptions configure the connection (WithDialOptions, WithToken,
	// ...). The fields below, when set, are applied after them.
	ClientOptions []Option

	// Token is the bearer token sent on every call (Claim, AckBatch, Fail,
	// ExtendLease); empty means $JOBWIRE_TOKEN (read by NewWorker), else
	// none. The token needs the claim permission on every queue of Queues.
	Token string
	// TLS turns TLS on (with the system roots unless TLSRootCA is set).
	// TLSRootCA, TLSClientCert and TLSClientKey turn it on by themselves.
	TLS bool
	// TLSRootCA is the CA certificate(s) to trust: PEM text (containing
	// "-----BEGIN") or the path of a PEM file.
	TLSRootCA string
	// TLSClientCert and TLSClientKey are a client certificate chain and its
	// key for mutual TLS, each PEM text or a path; both or neither.
	TLSClientCert string
	TLSClientKey  string
}

// Worker consumes queues over one Claim stream and runs the registered
// handlers. Build it with NewWorker, register handlers with Handle, then call
// Run (or RunUntilSignal) once.
type Worker struct {
	addr string
	opts WorkerOptions
	cfg  clientConfig
	log  *slog.Logger

	mu       sync.Mutex
	handlers map[string]Handler
	started  bool

	stopOnce sync.Once
	stopCh   chan struct{}
	doneCh   chan struct{}

	expiredDropped atomic.Int64
}

// WorkerStats are counters of a Worker.
type WorkerStats struct {
	// ExpiredDeliveriesDropped counts deliveries whose lease had ended
	// before their handler could start (dropped: no handler, no Ack / Fail).
	ExpiredDeliveriesDropped int64
}

// Stats returns the worker's counters. Safe to call at any time.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{ExpiredDeliveriesDropped: w.expiredDropped.Load()}
}

// NewWorker builds a worker for the broker at addr (empty: $JOBWIRE_ADDR, else
// localhost:50051). Nothing is connected before Run; a TLS file that cannot be
// read or parsed, or an unusable token, is an error here.
func NewWorker(addr string, opts WorkerOptions) (*Worker, error) {
	if len(opts.Queues) == 0 {
		return nil, errors.New("jobwire: WorkerOptions.Queues is empty")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.LeaseMs < 0 {
		return nil, fmt.Errorf("jobwire: WorkerOptions.LeaseMs %d is negative", opts.LeaseMs)
	}
	if opts.WorkerID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "unknown"
		}
		opts.WorkerID = fmt.Sprintf("go-%s-%d", host, os.Getpid())
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	cfg := clientConfig{timeout: opts.Timeout}
	for _, o := range opts.ClientOptions {
		o(&cfg)
	}
	if opts.Token != "" {
		WithToken(opts.Token)(&cfg)
	}
	if opts.TLS {
		WithTLS()(&cfg)
	}
	if opts.TLSRootCA != "" {
		WithTLSRootCA(opts.TLSRootCA)(&cfg)
	}
	if opts.TLSClientCert != "" || opts.TLSClientKey != "" {
		WithTLSClientCert(opts.TLSClientCert, opts.TLSClientKey)(&cfg)
	}
	if err := cfg.resolveSecurity(); err != nil {
		return nil, err
	}
	return &Worker{
		addr:     resolveAddr(addr),
		opts:     opts,
		cfg:      cfg,
		log:      logger.With("worker_id", opts.WorkerID),
		handlers: map[string]Handler{},
		stopCh:   make(chan struct{}),
		doneCh:   make(chan struct{}),
	}, nil
}

// WorkerID is the worker's id (the default one when none was given).
func (w *Worker) WorkerID() string { return w.opts.WorkerID }

// Handle registers the handler for jobs of type jobType (replacing any
// earlier one). Register before Run.
func (w *Worker) Handle(jobType string, h Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers[jobType] = h
}

func (w *Worker) handler(jobType string) Handler {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.handlers[jobType]
}

// Stop stops the worker: the Claim stream is cancelled (no new jobs), running
// handlers get up to Grace to finish and have their Ack / Fail sent, then Run
// returns. Stop waits for that when Run is running (call `go w.Stop()` from a
// handler). It may be called more than once and before Run.
func (w *Worker) Stop() {
	w.stopOnce.Do(func() { close(w.stopCh) })
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if started {
		<-w.doneCh
	}
}

// RunUntilSignal runs the worker until SIGTERM or SIGINT (or Stop), then
// stops it gracefully.
func (w *Worker) RunUntilSignal() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return w.Run(ctx)
}

// Run consumes jobs until ctx is cancelled or Stop is called, then drains
// gracefully (see Stop) and returns nil. It returns an *Error at once when the
// broker refuses the Claim with INVALID_ARGUMENT (bad queue names, lease, ...),
// after draining. Run may be called only once.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("jobwire: Worker.Run called twice")
	}
	w.started = true
	w.mu.Unlock()
	defer close(w.doneCh)

	conn, err := newConn(w.addr, &w.cfg)
	if err != nil {
		return err
	}
	defer conn.Close()

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	go func() {
		select {
		case <-w.stopCh:
			cancelRun()
		case <-runCtx.Done():
		}
	}()

	// Handlers and Ack / Fail survive the end of runCtx; they end only when
	// the grace runs out.
	hardCtx, abandon := context.WithCancelCause(context.WithoutCancel(ctx))
	defer abandon(ErrWorkerAbandoned)

	r := &runner{
		w:       w,
		stub:    jobwirepb.NewBrokerClient(conn),
		hardCtx: hardCtx,
		free:    w.opts.Concurrency,
	}
	r.slotCond = sync.NewCond(&r.slotMu)
	r.acks = newAckCoalescer(r.sendAcks)

	w.log.Info("jobwire worker starting", "addr", w.addr, "queues", w.opts.Queues,
		"concurrency", w.opts.Concurrency, "lease_ms", w.opts.LeaseMs,
		"tls", w.cfg.sec.tlsOn(), "token", w.cfg.hasToken)
	fatal := r.claimLoop(runCtx)

	drained := make(chan struct{})
	go func() {
		r.jobs.Wait()
		close(drained)
	}()
	timer := time.NewTimer(w.opts.Grace)
	defer timer.Stop()
	select {
	case <-drained:
	case <-timer.C:
		r.abandoned.Store(true)
		w.log.Warn("jobwire worker: stop grace expired, abandoning running handlers",
			"grace", w.opts.Grace.String())
		abandon(ErrWorkerAbandoned)
	}
	w.log.Info("jobwire worker stopped")
	return fatal
}

// runner is the state of one Run.
type runner struct {
	w         *Worker
	stub      jobwirepb.BrokerClient
	hardCtx   context.Context
	jobs      sync.WaitGroup
	abandoned atomic.Bool
	acks      *ackCoalescer // every Ack goes through it (AckBatch calls)

	slotMu   sync.Mutex
	slotCond *sync.Cond
	free     int // handler slots not taken
}

// waitFree blocks until at least one slot is free (or ctx ends) and returns
// the number of free slots (0 when ctx ended).
func (r *runner) waitFree(ctx context.Context) int {
	stop := context.AfterFunc(ctx, func() {
		r.slotMu.Lock()
		r.slotCond.Broadcast()
		r.slotMu.Unlock()
	})
	defer stop()
	r.slotMu.Lock()
	defer r.slotMu.Unlock()
	for r.free <= 0 && ctx.Err() == nil {
		r.slotCond.Wait()
	}
	if ctx.Err() != nil {
		return 0
	}
	return r.free
}

// takeSlot takes one handler slot for a job just delivered, on the stream
// reader (so a reopened Claim never asks for more than the free slots). The
// job is started even when no slot is free (only possible when a lease was
// lost while its handler still runs, freeing the broker's slot): the worker
// never holds a job it does not start.
func (r *runner) takeSlot() (over bool) {
	r.slotMu.Lock()
	defer r.slotMu.Unlock()
	r.free--
	return r.free < 0
}

func (r *runner) releaseSlot() {
	r.slotMu.Lock()
	r.free++
	r.slotCond.Broadcast()
	r.slotMu.Unlock()
}

// backoff is exponential backoff with full jitter.
type backoffState struct {
	base, max time.Duration
	n         int
}

func (b *backoffState) next() time.Duration {
	d := b.base << min(b.n, 20)
	if d > b.max || d <= 0 {
		d = b.max
	}
	b.n++
	return time.Duration(rand.Int64N(int64(d) + 1))
}

func (b *backoffState) reset() { b.n = 0 }

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// claimLoop keeps one Claim stream open until ctx ends. It returns nil, or
// the *Error of an INVALID_ARGUMENT refusal.
func (r *runner) claimLoop(ctx context.Context) error {
	bo := backoffState{base: 100 * time.Millisecond, max: 5 * time.Second}
	for {
		free := r.waitFree(ctx)
		if free == 0 {
			return nil
		}
		delivered, err := r.claimOnce(ctx, free)
		if ctx.Err() != nil {
			return nil
		}
		if delivered {
			bo.reset()
		}
		code := status.Code(err)
		if code == codes.InvalidArgument {
			e := toError(err)
			r.w.log.Error("jobwire worker: Claim refused", "error", e)
			return e
		}
		delay := bo.next()
		if err == nil || errors.Is(err, io.EOF) {
			r.w.log.Info("jobwire worker: Claim stream ended, reopening", "in", delay.String())
		} else {
			r.w.log.Warn("jobwire worker: Claim stream failed, reopening",
				"code", CodeName(code), "error", status.Convert(err).Message(), "in", delay.String())
		}
		if !sleepCtx(ctx, delay) {
			return nil
		}
	}
}

// claimOnce opens one Claim stream with max_in_flight = free and starts every
// job it delivers. Each stream message carries one or more jobs (all those
// claimed since the previous message), which are started one by one in
// order. It returns when the stream ends.
func (r *runner) claimOnce(ctx context.Context, free int) (delivered bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o := &r.w.opts
	stream, err := r.stub.Claim(sctx, &jobwirepb.ClaimRequest{
		Queues:      o.Queues,
		MaxInFlight: int32(free),
		LeaseMs:     o.LeaseMs,
		WorkerId:    o.WorkerID,
	})
	if err != nil {
		return false, err
	}
	r.w.log.Debug("jobwire worker: Claim stream open", "max_in_flight", free)
	for {
		msg, err := stream.Recv()
		if err != nil {
			return delivered, err
		}
		for _, cj := range msg.GetJobs() {
			delivered = true
			r.start(cj)
		}
	}
}

// start takes a slot for a job just read off the Claim stream, registers its
// lease (from now) and runs it in its own goroutine.
func (r *runner) start(cj *jobwirepb.ClaimedJob) {
	lease := r.newLease(cj)
	if r.takeSlot() {
		r.w.log.Warn("jobwire worker: job delivered beyond the concurrency (a lease was lost while its handler runs), starting it anyway",
			"job_id", cj.GetJob().GetId(), "queue", cj.GetJob().GetQueue(), "concurrency", r.w.opts.Concurrency)
	}
	r.jobs.Add(1)
	go r.process(cj, lease)
}

// leaseState is the lease of one job being processed.
type leaseState struct {
	// length is the lease granted per claim / renewal: WorkerOptions.LeaseMs,
	// else the broker's default read from the claimed job.
	length time.Duration
	lost   atomic.Bool

	mu sync.Mutex
	// deadline is the local (monotonic) estimate of the lease end: receipt
	// time or the send time of the last successful renewal, plus length. It
	// bounds the Ack / Fail retries without comparing the Redis clock with
	// the local one.
	deadline time.Time
}

func (l *leaseState) expiry() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

func (l *leaseState) renewed(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := sent.Add(l.length); d.After(l.deadline) {
		l.deadline = d
	}
}

// newLease is the lease of a job received now: its length is LeaseMs, else
// the lease the broker granted (lease_expires_at_ms minus now when within the
// broker's 1 s .. 12 h, else the documented 30 s).
func (r *runner) newLease(cj *jobwirepb.ClaimedJob) *leaseState {
	now := time.Now()
	ms := r.w.opts.LeaseMs
	if ms == 0 {
		exp := cj.GetLeaseExpiresAtMs()
		if exp == 0 {
			exp = cj.GetJob().GetLeaseExpiresAtMs()
		}
		ms = exp - now.UnixMilli()
		if ms < minLeaseMs || ms > maxLeaseMs {
			ms = defaultLeaseMs
		}
	}
	l := &leaseState{length: time.Duration(ms) * time.Millisecond}
	l.deadline = now.Add(l.length)
	return l
}

func (r *runner) process(cj *jobwirepb.ClaimedJob, lease *leaseState) {
	defer r.jobs.Done()
	info := cj.GetJob()
	job := &Job{
		ID:               info.GetId(),
		Queue:            info.GetQueue(),
		Type:             info.GetType(),
		Payload:          info.GetPayload(),
		Attempt:          int(info.GetAttempts()),
		MaxAttempts:      int(info.GetMaxAttempts()),
		LeaseExpiresAtMs: cj.GetLeaseExpiresAtMs(),
		WorkerID:         r.w.opts.WorkerID,
		Info:             info,
		leaseToken:       cj.GetLeaseToken(),
	}
	if job.LeaseExpiresAtMs == 0 {
		job.LeaseExpiresAtMs = info.GetLeaseExpiresAtMs()
	}

	if ago, ended := leaseEndedAgo(time.Now(), job.LeaseExpiresAtMs, lease.expiry()); ended {
		r.releaseSlot()
		r.dropExpired(job, ago)
		return
	}

	jctx, jcancel := context.WithCancelCause(r.hardCtx)
	defer jcancel(nil)

	h := r.w.handler(job.Type)
	var (
		result []byte
		herr   error
	)
	if h == nil {
		r.releaseSlot()
		herr = &noHandlerError{msg: `no handler for job type "` + job.Type + `" in worker ` + r.w.opts.WorkerID}
		r.w.log.Warn("jobwire worker: no handler for job type, failing it for a retry",
			"job_id", job.ID, "queue", job.Queue, "type", job.Type, "attempt", job.Attempt)
	} else {
		// The slot was taken by the stream reader (takeSlot).
		// Renew the lease while the handler runs.
		renewCtx, stopRenew := context.WithCancel(jctx)
		renewDone := make(chan struct{})
		go func() {
			defer close(renewDone)
			r.renew(renewCtx, job, lease, jcancel)
		}()
		result, herr = runHandler(jctx, h, job)
		r.releaseSlot()
		stopRenew()
		<-renewDone
	}

	if r.abandoned.Load() {
		return
	}
	if herr == nil {
		r.ack(job, lease, result)
	} else {
		r.fail(job, lease, herr)
	}
}

// dropExpired drops a delivery whose lease has ended: no handler, no Ack /
// Fail (the broker's reaper delivers the job again).
func (r *runner) dropExpired(job *Job, ago time.Duration) {
	r.w.expiredDropped.Add(1)
	r.w.log.Warn("jobwire worker: delivery dropped, its lease ended before its handler could start",
		"job_id", job.ID, "queue", job.Queue, "attempt", job.Attempt,
		"lease_ended_ago", ago.Round(time.Millisecond).String())
	r.outcome(Outcome{Kind: OutcomeExpiredDropped, Job: job})
}

// runHandler runs h, recovering a panic, and encodes its result.
func runHandler(ctx context.Context, h Handler, job *Job) (result []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			result = nil
			err = &panicError{value: p}
		}
	}()
	v, err := h(ctx, job)
	if err != nil {
		return nil, err
	}
	return EncodePayload(v)
}

// renew extends the lease every lease length / 3 until ctx ends or the lease
// is lost.
func (r *runner) renew(ctx context.Context, job *Job, lease *leaseState, cancelJob context.CancelCauseFunc) {
	interval := lease.length / 3
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		timeout := min(r.w.opts.Timeout, interval)
		cctx, cancel := context.WithTimeout(ctx, timeout)
		sent := time.Now()
		_, err := r.stub.ExtendLease(cctx, &jobwirepb.ExtendLeaseRequest{
			Queue:      job.Queue,
			JobId:      job.ID,
			LeaseToken: job.leaseToken,
			LeaseMs:    r.w.opts.LeaseMs,
		})
		cancel()
		if err == nil {
			lease.renewed(sent)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		switch status.Code(err) {
		case codes.FailedPrecondition, codes.NotFound:
			lease.lost.Store(true)
			r.w.log.Warn("jobwire worker: lease lost, the job moved on",
				"job_id", job.ID, "queue", job.Queue, "attempt", job.Attempt,
				"code", CodeName(status.Code(err)), "error", status.Convert(err).Message())
			cancelJob(ErrLeaseLost)
			return
		default:
			r.w.log.Warn("jobwire worker: lease renewal failed, will retry",
				"job_id", job.ID, "code", CodeName(status.Code(err)), "error", status.Convert(err).Message())
		}
	}
}

// callWithRetry calls fn, retrying UNAVAILABLE / DEADLINE_EXCEEDED with
// backoff until the job's lease has ended by the local estimate, the last
// attempts just before and at its end (retryWait). At least one call is
// made. An UNAVAILABLE / DEADLINE_EXCEEDED error returned means the outcome
// is unknown.
func (r *runner) callWithRetry(lease *leaseState, fn func(ctx context.Context) error) error {
	bo := backoffState{base: 100 * time.Millisecond, max: 2 * time.Second}
	for {
		ctx, cancel := context.WithTimeout(r.hardCtx, r.w.opts.Timeout)
		err := fn(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return err
		}
		if lease.lost.Load() || r.hardCtx.Err() != nil {
			return err
		}
		delay, ok := retryWait(max(bo.next(), 20*time.Millisecond), time.Until(lease.expiry()))
		if !ok {
			return err
		}
		if !sleepCtx(r.hardCtx, delay) {
			return err
		}
	}
}

// ack acks the job through the coalescer (in an AckBatch call with the acks
// of other jobs finishing meanwhile), retried for this job alone.
func (r *runner) ack(job *Job, lease *leaseState, result []byte) {
	req := &jobwirepb.AckRequest{
		Queue: job.Queue, JobId: job.ID, LeaseToken: job.leaseToken, Result: result,
	}
	// The AckBatch call carrying the ack has a deadline of its own
	// (sendAcks), not this attempt's ctx.
	err := r.callWithRetry(lease, func(context.Context) error { return r.acks.ack(req) })
	if r.abandoned.Load() {
		return
	}
	if err != nil {
		kind, e := r.unsettled("Ack", job, err, OutcomeAckUnknown, OutcomeAckError)
		r.outcome(Outcome{Kind: kind, Job: job, Code: status.Code(err), Err: e, Result: result})
		return
	}
	r.outcome(Outcome{Kind: OutcomeAckOK, Job: job, Result: result})
}

// sendAcks makes one AckBatch call for the coalescer, with the unary
// deadline (Timeout); it is cancelled when the stop grace runs out.
func (r *runner) sendAcks(acks []*jobwirepb.AckRequest) ([]error, error) {
	ctx, cancel := context.WithTimeout(r.hardCtx, r.w.opts.Timeout)
	defer cancel()
	return ackBatch(ctx, r.stub, &jobwirepb.AckBatchRequest{Acks: acks})
}

func (r *runner) fail(job *Job, lease *leaseState, herr error) {
	text := errorText(herr)
	nonRetryable := IsNonRetryable(herr)
	var resp *jobwirepb.FailResponse
	err := r.callWithRetry(lease, func(ctx context.Context) error {
		var err error
		resp, err = r.stub.Fail(ctx, &jobwirepb.FailRequest{
			Queue: job.Queue, JobId: job.ID, LeaseToken: job.leaseToken,
			Error: text, NonRetryable: nonRetryable,
		})
		return err
	})
	if r.abandoned.Load() {
		return
	}
	if err != nil {
		kind, e := r.unsettled("Fail", job, err, OutcomeFailUnknown, OutcomeFailError)
		r.outcome(Outcome{Kind: kind, Job: job, Code: status.Code(err), Err: e,
			HandlerErr: herr, ErrorText: text})
		return
	}
	r.outcome(Outcome{Kind: OutcomeFailOK, Job: job, FailOutcome: resp.GetOutcome().String(),
		NextAttemptAtMs: resp.GetNextAttemptAtMs(), HandlerErr: herr, ErrorText: text})
}

// unsettled logs why the Ack or Fail (call) of job did not succeed and
// returns its outcome kind: unknown when it was still answered UNAVAILABLE /
// DEADLINE_EXCEEDED as the lease ended (it may or may not be stored), else
// refused.
func (r *runner) unsettled(call string, job *Job, err error, unknown, refused OutcomeKind) (OutcomeKind, error) {
	e := toError(err)
	if retryable(err) {
		r.w.log.Warn("jobwire worker: "+call+" unanswered when the lease ended, it may or may not be stored",
			"job_id", job.ID, "queue", job.Queue, "attempt", job.Attempt, "error", e)
		return unknown, e
	}
	r.w.log.Warn("jobwire worker: "+call+" refused", "job_id", job.ID, "queue", job.Queue,
		"attempt", job.Attempt, "error", e)
	return refused, e
}

// retryable: the Ack / Fail may be sent again (UNAVAILABLE, DEADLINE_EXCEEDED).
func retryable(err error) bool {
	code := status.Code(err)
	return code == codes.Unavailable || code == codes.DeadlineExceeded
}

func (r *runner) outcome(o Outcome) {
	if f := r.w.opts.OnOutcome; f != nil {
		f(o)
	}
}

// noHandlerError is the error of a job whose type has no handler; its text is
// sent as is.
type noHandlerError struct{ msg string }

func (e *noHandlerError) Error() string { return e.msg }

// panicError is a recovered handler panic.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("%v", e.value) }

// errorText is the Fail text of a handler error: "<ErrorType>: <message>",
// where ErrorType is the Go type of the error ("error" for the anonymous
// errors of errors.New and fmt.Errorf), cut to the broker's 64 KiB limit.
func errorText(err error) string {
	var text string
	var nh *noHandlerError
	var pe *panicError
	switch {
	case errors.As(err, &nh):
		text = nh.msg
	case errors.As(err, &pe):
		text = "panic: " + pe.Error()
	default:
		inner := err
		if nr, ok := err.(*nonRetryableError); ok {
			inner = nr.err
		}
		text = errorTypeName(inner) + ": " + err.Error()
	}
	return truncateUTF8(text, maxErrorText)
}

func errorTypeName(err error) string {
	t := strings.TrimPrefix(fmt.Sprintf("%T", err), "*")
	switch t {
	case "errors.errorString", "fmt.wrapError", "fmt.wrapErrors", "errors.joinError":
		return "error"
	}
	return t
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
