package jobwire

// Client.Wait: follows one job over WaitJob calls until it is COMPLETED or
// DEAD, calling again after UNAVAILABLE, or CANCELLED the client did not
// cause, with the Claim stream's reconnect backoff and the time that remains
// (docs/clients.md, Producer).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// waitDeadlineMargin is how long past the wait's timeout the call's own gRPC
// deadline lies: the broker ends the call at the timeout (WAIT_TIMEOUT, with
// the job's latest state); the deadline only ends a call the broker no
// longer answers.
const waitDeadlineMargin = time.Second

// ErrJobDead matches, with errors.Is, the error Wait returns when the job
// ended DEAD: a *JobDeadError. It is never returned itself.
var ErrJobDead = errors.New("jobwire: job is dead")

// JobDeadError is the error of Wait when the job ended DEAD (failed
// non-retryable, out of attempts, or cancelled). errors.Is(err, ErrJobDead)
// holds for it; errors.As(err, &dead) gives the job.
type JobDeadError struct {
	// Job is the job as the broker sent it last; Job.GetError() is its last
	// error text.
	Job *JobInfo
}

// Error implements error: "jobwire: job <id> in queue <queue> is dead: <error>".
func (e *JobDeadError) Error() string {
	return fmt.Sprintf("jobwire: job %s in queue %s is dead: %s",
		e.Job.GetId(), e.Job.GetQueue(), e.Job.GetError())
}

// Is reports whether target is ErrJobDead.
func (e *JobDeadError) Is(target error) bool { return target == ErrJobDead }

// WaitTimeoutError is the error of Wait when its timeout passed before the
// job finished. errors.Is(err, ErrWaitTimeout) holds for it; errors.As finds
// it and, through Unwrap, its *Error.
type WaitTimeoutError struct {
	// LastJob is the job as last seen (its latest state); nil when no
	// message came.
	LastJob *JobInfo
	// Err is the *Error of code DEADLINE_EXCEEDED: with Reason
	// "WAIT_TIMEOUT" and the broker's message when the broker ended the
	// wait, Reason "" when the client did (the call's own deadline, or the
	// time ran out while it waited to call again after UNAVAILABLE or a
	// CANCELLED it did not cause).
	Err *Error
}

// Error implements error: that of Err.
func (e *WaitTimeoutError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *WaitTimeoutError) Unwrap() error { return e.Err }

// Is reports whether target is ErrWaitTimeout (also for a timeout the
// client made, whose Err has no Reason).
func (e *WaitTimeoutError) Is(target error) bool { return target == ErrWaitTimeout }

// WaitOption configures one Wait.
type WaitOption func(*waitConfig)

type waitConfig struct {
	timeout  time.Duration
	onUpdate func(*JobInfo)
}

// WithWaitTimeout limits the whole wait to d (millisecond precision, at most
// the broker's 24 h); past it Wait returns a *WaitTimeoutError. 0 or less
// (the default) means no limit of its own: the wait lasts until the job
// finishes or ctx ends.
func WithWaitTimeout(d time.Duration) WaitOption {
	return func(c *waitConfig) { c.timeout = d }
}

// WithWaitUpdates calls f, on Wait's goroutine, with the job as it is when
// the wait starts, then at each change of its state, attempts or progress
// (Job.ReportProgress), the final one included. Intermediate changes may be merged; the final one never is.
// f must not keep Wait waiting long: the stream is not read meanwhile.
func WithWaitUpdates(f func(*JobInfo)) WaitOption {
	return func(c *waitConfig) { c.onUpdate = f }
}

// Wait blocks until the job finishes (one WaitJob stream; no polling) and
// returns it COMPLETED (GetResult(): the worker's result; empty for a job
// deleted on ack). A job already finished answers at once. The client's
// WithTimeout does not apply: the wait lasts until the job finishes, its
// WithWaitTimeout passes, or ctx ends.
//
// Errors: a *JobDeadError (ErrJobDead) when the job ends DEAD; a
// *WaitTimeoutError (ErrWaitTimeout) when WithWaitTimeout passes first; an
// *Error of code CANCELLED or DEADLINE_EXCEEDED when ctx ends (its
// cancellation or deadline; the call is cancelled); else the broker's
// *Error: NOT_FOUND / ErrJobNotFound (no such job, or deleted meanwhile),
// INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED /
// ErrTooManyWaits. UNAVAILABLE (broker restarting or draining, Redis down),
// or CANCELLED the client did not cause (gRPC ends a call that reached a
// broker as it stopped with CANCELLED), is not returned: Wait calls again
// after the Claim stream's reconnect backoff (100 ms doubling to 5 s, full
// jitter) with the time that remains, so without a timeout it waits out an
// outage for as long as ctx allows.
func (c *Client) Wait(ctx context.Context, queue, jobID string, opts ...WaitOption) (*JobInfo, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var cfg waitConfig
	for _, o := range opts {
		o(&cfg)
	}
	w := &waiter{stub: c.stub, queue: queue, jobID: jobID, cfg: cfg, bo: reconnectBackoff()}
	if cfg.timeout > 0 {
		w.deadline = time.Now().Add(cfg.timeout)
	}
	for {
		job, err := w.follow(ctx)
		if err == nil {
			return job, nil
		}
		// The caller's own cancellation comes first: retryDelay takes any
		// CANCELLED for one the broker's stop caused (brokerWentAway).
		if ctx.Err() != nil && !errors.Is(err, ErrJobDead) {
			return nil, toError(ctx.Err())
		}
		delay, err := w.retryDelay(err)
		if err != nil {
			return nil, err
		}
		if !sleepCtx(ctx, delay) {
			return nil, toError(ctx.Err())
		}
	}
}

// waiter is the state of one Wait. Not safe for concurrent use.
type waiter struct {
	stub         jobwirepb.BrokerServiceClient
	queue, jobID string
	cfg          waitConfig
	deadline     time.Time // zero: no timeout
	last         *JobInfo  // the job as last seen
	resumed      bool      // the next message is the first of a later call
	bo           backoffState
}

// follow makes one WaitJob call. It returns the COMPLETED job, or the error
// that ended the call or the wait: a *JobDeadError, a *WaitTimeoutError (no
// time left to call), INTERNAL for a call that ended OK before the job
// finished, else the call's error as gRPC gave it (see retryDelay).
func (w *waiter) follow(ctx context.Context) (*JobInfo, error) {
	req := &jobwirepb.WaitJobRequest{Queue: w.queue, JobId: w.jobID}
	var cctx context.Context
	var cancel context.CancelFunc
	if w.deadline.IsZero() {
		cctx, cancel = context.WithCancel(ctx)
	} else {
		left := time.Until(w.deadline)
		if left <= 0 {
			return nil, w.timeoutError(newError(codes.DeadlineExceeded, "",
				fmt.Sprintf("job %s in queue %s did not finish within %s", w.jobID, w.queue, w.cfg.timeout)))
		}
		req.TimeoutMs = max(1, (left + time.Millisecond - 1).Milliseconds())
		cctx, cancel = context.WithTimeout(ctx, left+waitDeadlineMargin)
	}
	defer cancel()
	w.resumed = w.last != nil
	stream, err := w.stub.WaitJob(cctx, req)
	if err != nil {
		return nil, err
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, newError(codes.Internal, "",
				fmt.Sprintf("WaitJob ended before job %s in queue %s finished", w.jobID, w.queue))
		}
		if err != nil {
			return nil, err
		}
		if msg.GetJob() == nil {
			return nil, newError(codes.Internal, "", "WaitJob sent a message without a job")
		}
		job := msg.GetJob()
		if w.repeats(job) {
			continue
		}
		if w.cfg.onUpdate != nil {
			w.cfg.onUpdate(job)
		}
		switch job.GetState() {
		case StateCompleted:
			return job, nil
		case StateDead:
			return nil, &JobDeadError{Job: job}
		}
	}
}

// repeats records job as the last seen and reports whether it only repeats,
// as the first message of a later call, the state, attempts and progress
// seen before.
func (w *waiter) repeats(job *JobInfo) bool {
	last := w.last
	repeat := w.resumed && last != nil && job.GetState() == last.GetState() &&
		job.GetAttempts() == last.GetAttempts() && sameProgress(job, last)
	w.resumed = false
	w.bo.reset()
	w.last = job
	return repeat
}

// retryDelay decides what follows an error of follow while ctx has not
// ended (the client cancels no WaitJob call of its own otherwise): the wait
// before calling again after UNAVAILABLE or CANCELLED (brokerWentAway; at
// most until the deadline), or the error to return: a *WaitTimeoutError for
// DEADLINE_EXCEEDED with a timeout or the reason WAIT_TIMEOUT, else the
// error as an *Error (or as it is, for the errors follow made itself).
func (w *waiter) retryDelay(err error) (time.Duration, error) {
	var dead *JobDeadError
	var late *WaitTimeoutError
	if errors.As(err, &dead) || errors.As(err, &late) {
		return 0, err
	}
	e := toError(err).(*Error) // an *Error for every non-nil error
	switch {
	case e.Code == codes.DeadlineExceeded && (!w.deadline.IsZero() || e.Reason == "WAIT_TIMEOUT"):
		return 0, w.timeoutError(e)
	case !brokerWentAway(e):
		return 0, e
	}
	delay := w.bo.next()
	if !w.deadline.IsZero() {
		delay = min(delay, max(0, time.Until(w.deadline)))
	}
	return delay, nil
}

func (w *waiter) timeoutError(e *Error) *WaitTimeoutError {
	return &WaitTimeoutError{LastJob: w.last, Err: e}
}

// sameProgress reports whether a and b hold the same progress (percent,
// present or not, and data).
func sameProgress(a, b *JobInfo) bool {
	return (a.ProgressPercent == nil) == (b.ProgressPercent == nil) &&
		a.GetProgressPercent() == b.GetProgressPercent() && bytes.Equal(a.GetProgressData(), b.GetProgressData())
}
