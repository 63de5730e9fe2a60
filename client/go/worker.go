package jobwire

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// ErrLeaseLost is the cause (context.Cause) of a handler context cancelled
// because the broker refused a lease renewal or a Job.ReportProgress
// (FAILED_PRECONDITION or NOT_FOUND; JOB_CANCEL_REQUESTED and RUN_TIMED_OUT
// have causes of their own, ErrJobCancelled and ErrRunTimedOut): the job
// moved on (its lease expired and it was retried or became dead, or it was
// deleted). The handler is told at once; it may ignore it. The Worker still
// sends the job's Ack / Fail, whose refusal goes to the outcome hook
// (WithOutcomeHook).
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
	// LeaseMs is the lease the broker granted for this run, in ms
	// (ClaimedJob.lease_ms: WithLease, or the broker default).
	// The Worker renews it every third of this until the job is settled
	// (while the handler runs and while its Ack / Fail is retried). 0 from a
	// broker older than that field.
	LeaseMs int64
	// WorkerID is the id of the worker running the job.
	WorkerID string
	// Headers are the job's headers as the producer gave them (WithHeaders);
	// nil or empty when it gave none. The same map as Info.Headers.
	Headers map[string]string
	// ConcurrencyKey is the key the producer gave (WithConcurrencyKey); ""
	// when none.
	ConcurrencyKey string
	// DependsOn are the parents the job waited for (WithDependsOn); nil when
	// none. The same slice as Info.DependsOn.
	DependsOn []string
	// DependencyResults are the parents' results by parent id, bytes
	// unchanged (a parent that completed without a result, or failed under
	// WithRunAfterFailedDependency, is absent); nil or empty when none. The
	// same map as Info.DependencyResults.
	DependencyResults map[string][]byte
	// RunAfterFailedDependency is the producer's WithRunAfterFailedDependency:
	// a parent absent from DependencyResults may have failed.
	RunAfterFailedDependency bool
	// Info is the job as the broker delivered it (every field of the proto;
	// Info.TimeoutMs is the run timeout, whose deadline the handler's
	// context carries).
	Info *JobInfo

	leaseToken string
	run        *jobRun // nil for a Job not made by a Worker
}

// JSON decodes the payload as JSON into v.
func (j *Job) JSON(v any) error { return json.Unmarshal(j.Payload, v) }

// Handler runs one job. Its result is acked: []byte unchanged, nil as empty,
// anything else JSON-encoded. A returned error fails the job with the text
// "<ErrorType>: <message>" (cut to 64 KiB at a character boundary); wrap it
// with NonRetryable to make the job DEAD at once, or with RetryAfter to have it
// retried after a given delay instead of the backoff (with KeepAttempt: a run
// turned away, which uses no attempt). A panic is recovered and
// fails the job ("panic: <value>").
//
// ctx is cancelled (context.Cause says why) with cause:
//   - ErrJobCancelled when Cancel asks the run to stop (pushed on the Claim
//     stream, or a lease renewal or Job.ReportProgress refused
//     JOB_CANCEL_REQUESTED);
//   - ErrRunTimedOut at the run's deadline, ctx.Deadline(): receipt of the
//     job plus its timeout (WithRunTimeout; none without one), or when the
//     broker refuses a renewal or report RUN_TIMED_OUT;
//   - ErrLeaseLost when the broker refuses a lease renewal otherwise (the job
//     moved on);
//   - ErrWorkerAbandoned when Stop's grace runs out.
//
// A handler that returns an error after ErrJobCancelled / ErrRunTimedOut has
// its job failed with the text "cancelled" / "timeout" (the broker makes a
// cancelled job DEAD and fails a timed-out attempt, retried or DEAD as usual).
// One that returns a result is acked as usual: the broker completes a
// cancel-requested run, but refuses the Ack of a run past its deadline
// (reported to the outcome hook as ack_error, ErrRunTimedOut).
type Handler func(ctx context.Context, job *Job) (any, error)

// Worker consumes queues over one Claim stream and runs the registered
// handlers. Build it with NewWorker, register handlers with Handle (and
// middlewares with Use), then call Run (or RunUntilSignal) once.
type Worker struct {
	addr string
	cfg  workerConfig
	log  *slog.Logger

	mu          sync.Mutex
	handlers    map[string]Handler
	middlewares []Middleware       // Use; fixed once started
	chained     map[string]Handler // handlers wrapped in middlewares, built once started
	started     bool

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
// localhost:50051) that consumes queues (1..32 names, earlier queues served
// first, unless WithWeights splits the handler slots between them). Nothing is connected before Run. A value outside an option's limits
// (WithConcurrency, WithWeights, WithLease, ...), a TLS file that cannot be read or
// parsed, or an unusable token is an error here, naming the option.
func NewWorker(addr string, queues []string, opts ...WorkerOption) (*Worker, error) {
	cfg := defaultWorkerConfig(slices.Clone(queues))
	for _, o := range opts {
		o.applyWorker(&cfg)
	}
	if err := cfg.resolve(); err != nil {
		return nil, err
	}
	return &Worker{
		addr:     resolveAddr(addr),
		cfg:      cfg,
		log:      cfg.logger.With("worker_id", cfg.workerID),
		handlers: map[string]Handler{},
		chained:  map[string]Handler{},
		stopCh:   make(chan struct{}),
		doneCh:   make(chan struct{}),
	}, nil
}

// WorkerID is the worker's id (the default one when none was given).
func (w *Worker) WorkerID() string { return w.cfg.workerID }

// Handle registers the handler for jobs of type jobType (replacing any
// earlier one). Register before Run. The Claim names the job types with a
// handler (ClaimRequest.types, at most 64), so the broker delivers only
// those: a job of another type waits pending, using no attempt, for a worker
// that handles it.
func (w *Worker) Handle(jobType string, h Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers[jobType] = h
	delete(w.chained, jobType)
}

// handler is the handler of jobType wrapped in the middlewares (nil when
// the type has none), wrapped once per type after Run fixed the middlewares.
func (w *Worker) handler(jobType string) Handler {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h, ok := w.chained[jobType]; ok {
		return h
	}
	h := w.handlers[jobType]
	if h == nil {
		return nil
	}
	h = chain(h, w.middlewares)
	if w.started {
		w.chained[jobType] = h
	}
	return h
}

// Stop stops the worker: the Claim stream is cancelled (no new jobs), running
// handlers get up to the grace (WithGrace) to finish and have their Ack / Fail
// sent, then Run returns. Stop waits for that when Run is running (call `go w.Stop()` from a
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
// after draining. It returns an error at once, having started nothing (Run
// may then be called again), when no handler is registered or more than 64
// job types have one (the limit of ClaimRequest.types). Run may be called
// only once.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("jobwire: Worker.Run called twice")
	}
	if err := w.handlersErr(); err != nil {
		w.mu.Unlock()
		return err
	}
	w.started = true
	w.mu.Unlock()
	defer close(w.doneCh)

	conn, err := newConn(w.addr, &w.cfg.conn)
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
		stub:    jobwirepb.NewBrokerServiceClient(conn),
		hardCtx: hardCtx,
		free:    w.cfg.concurrency,
	}
	r.slotCond = sync.NewCond(&r.slotMu)
	r.acks = newAckCoalescer(r.sendAcks)

	w.log.Info("jobwire worker starting", "addr", w.addr, "queues", w.cfg.queues,
		"concurrency", w.cfg.concurrency, "weights", w.cfg.claimWeights, "lease_ms", w.cfg.leaseMs(),
		"tls", w.cfg.conn.sec.tlsOn(), "token", w.cfg.conn.hasToken)
	fatal := r.claimLoop(runCtx)

	drained := make(chan struct{})
	go func() {
		r.jobs.Wait()
		close(drained)
	}()
	timer := time.NewTimer(w.cfg.grace)
	defer timer.Stop()
	select {
	case <-drained:
	case <-timer.C:
		select {
		case <-drained: // done as the grace ran out (a grace of 0, nothing running)
		default:
			r.abandoned.Store(true)
			w.log.Warn("jobwire worker: stop grace expired, abandoning running handlers",
				"grace", w.cfg.grace.String())
			abandon(ErrWorkerAbandoned)
		}
	}
	w.log.Info("jobwire worker stopped")
	return fatal
}

// runner is the state of one Run.
type runner struct {
	w         *Worker
	stub      jobwirepb.BrokerServiceClient
	hardCtx   context.Context
	jobs      sync.WaitGroup
	abandoned atomic.Bool
	acks      *ackCoalescer // every Ack goes through it (sendAcks: on the Work stream, else AckBatch calls)
	work      workAcks      // the open Work stream's acks
	runs      runTable      // the runs started and not yet settled
	// claimOnly: the broker answered Work UNIMPLEMENTED, Claim streams from
	// then on. Used by claimLoop alone.
	claimOnly bool

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

// newJob is the Job a handler gets for the delivery cj.
func (r *runner) newJob(cj *jobwirepb.ClaimedJob, run *jobRun) *Job {
	info := cj.GetJob()
	job := &Job{
		ID:                       info.GetId(),
		Queue:                    info.GetQueue(),
		Type:                     info.GetType(),
		Payload:                  info.GetPayload(),
		Attempt:                  int(info.GetAttempts()),
		MaxAttempts:              int(info.GetMaxAttempts()),
		LeaseExpiresAtMs:         cj.GetLeaseExpiresAtMs(),
		LeaseMs:                  cj.GetLeaseMs(),
		WorkerID:                 r.w.cfg.workerID,
		Headers:                  info.GetHeaders(),
		ConcurrencyKey:           info.GetConcurrencyKey(),
		DependsOn:                info.GetDependsOn(),
		DependencyResults:        info.GetDependencyResults(),
		RunAfterFailedDependency: info.GetRunAfterFailedDependency(),
		Info:                     info,
		leaseToken:               cj.GetLeaseToken(),
		run:                      run,
	}
	if job.LeaseExpiresAtMs == 0 {
		job.LeaseExpiresAtMs = info.GetLeaseExpiresAtMs()
	}
	return job
}

func (r *runner) process(cj *jobwirepb.ClaimedJob, run *jobRun) {
	defer r.jobs.Done()
	defer run.end()
	lease := run.lease
	job := r.newJob(cj, run)

	if ago, ended := leaseEndedAgo(time.Now(), job.LeaseExpiresAtMs, lease.expiry()); ended {
		r.releaseSlot()
		r.dropExpired(job, ago)
		return
	}
	// Renew the lease from here until the job's final outcome is decided
	// (callWithRetry stops the renewal); the deferred call covers a job
	// abandoned at the end of the stop grace.
	r.startRenewal(job, run)
	defer lease.stopRenewal()

	h := r.w.handler(job.Type)
	var (
		result []byte
		herr   error
		// stopped is the Fail text of a handler told to stop ("cancelled",
		// "timeout") before it returned; "" when it was not.
		stopped string
	)
	if h == nil {
		// Only a broker older than ClaimRequest.types delivers a type the
		// Claim did not name: failed for a retry, so that a worker that
		// handles it takes the job.
		r.releaseSlot()
		herr = &noHandlerError{msg: `no handler for job type "` + job.Type + `" in worker ` + r.w.cfg.workerID}
		r.w.log.Warn("jobwire worker: no handler for job type, failing it for a retry",
			"job_id", job.ID, "queue", job.Queue, "type", job.Type, "attempt", job.Attempt)
	} else {
		// The slot was taken by the stream reader (takeSlot).
		result, herr = runHandler(run.ctx, h, job)
		stopped = run.stoppedText()
		r.releaseSlot()
	}

	if r.abandoned.Load() {
		return
	}
	switch {
	case herr == nil:
		// Also after a signal: the broker completes a cancel-requested run,
		// and refuses the Ack of one past its deadline (RUN_TIMED_OUT).
		r.ack(job, lease, result)
	case stopped != "":
		r.fail(job, lease, herr, stopped)
	default:
		r.fail(job, lease, herr, errorText(herr))
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
