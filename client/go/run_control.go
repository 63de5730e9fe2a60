package jobwire

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// Run control in a Worker (broker.proto: Cancel, StopRun, timeout_ms,
// ReportProgress): each run's handler context is cancelled with cause
// ErrJobCancelled when Cancel asks the run to stop (a StopRun on the Claim
// stream, or a renewal / progress report refused JOB_CANCEL_REQUESTED), and
// with cause ErrRunTimedOut at its deadline (receipt + Job.timeout_ms, or a
// refusal RUN_TIMED_OUT). A handler that returns an error after such a signal
// has its job failed with the text "cancelled" / "timeout".

// runKey names one run: a stop for an older run of the same job (another
// lease token) is not for this one.
type runKey struct{ jobID, leaseToken string }

// jobRun is one run the Worker started: its handler context and what ends
// it. Made on the stream reader (runner.start) and registered in the run
// table until its job is settled (jobRun.end).
type jobRun struct {
	r     *runner
	key   runKey
	lease *leaseState
	// ctx is the handler's context: cancelled by cancel (first cause
	// wins), at the run's deadline (cause ErrRunTimedOut), and when the stop
	// grace runs out (ErrWorkerAbandoned).
	ctx    context.Context
	cancel context.CancelCauseFunc
	// release stops the deadline's timer.
	release context.CancelFunc
}

// newRun makes the run of a job received at received and registers it, so
// that a StopRun read after this call finds it. With a timeout
// (Job.timeout_ms > 0) its context's deadline is received + the timeout: the
// local clock only, never compared with Redis's.
func (r *runner) newRun(cj *jobwirepb.ClaimedJob, received time.Time, lease *leaseState) *jobRun {
	base, cancel := context.WithCancelCause(r.hardCtx)
	run := &jobRun{
		r:       r,
		key:     runKey{cj.GetJob().GetId(), cj.GetLeaseToken()},
		lease:   lease,
		ctx:     base,
		cancel:  cancel,
		release: func() {},
	}
	if d := runTimeout(cj.GetJob()); d > 0 {
		run.ctx, run.release = context.WithDeadlineCause(base, received.Add(d), ErrRunTimedOut)
	}
	r.runs.add(run)
	return run
}

// runTimeout is the longest a run of job may take (Job.timeout_ms); 0: no
// limit.
func runTimeout(job *jobwirepb.Job) time.Duration {
	return time.Duration(max(job.GetTimeoutMs(), 0)) * time.Millisecond
}

// end unregisters the run and cancels its context (its job is settled).
func (run *jobRun) end() {
	run.r.runs.remove(run.key)
	run.release()
	run.cancel(nil)
}

// stoppedText is the Fail text of a run whose handler returned an error after
// it was told to stop: "cancelled" or "timeout" (the broker stores those
// whatever the text), else "" (the handler's own error text is sent).
func (run *jobRun) stoppedText() string {
	switch cause := context.Cause(run.ctx); {
	case errors.Is(cause, ErrJobCancelled):
		return "cancelled"
	case errors.Is(cause, ErrRunTimedOut):
		return "timeout"
	}
	return ""
}

// refused ends the run after the broker refused one of its calls (call:
// "ExtendLease", "ReportProgress") with FAILED_PRECONDITION or NOT_FOUND,
// and reports whether it did: JOB_CANCEL_REQUESTED cancels the handler
// context with cause ErrJobCancelled, RUN_TIMED_OUT with ErrRunTimedOut (the
// lease token still settles the job: a Fail ends the attempt at once), any
// other refusal means the lease is lost (ErrLeaseLost: the job moved on).
func (run *jobRun) refused(call string, job *Job, err error) bool {
	code := status.Code(err)
	if code != codes.FailedPrecondition && code != codes.NotFound {
		return false
	}
	log := run.r.w.log.With("job_id", job.ID, "queue", job.Queue, "attempt", job.Attempt,
		"call", call, "code", CodeName(code), "error", status.Convert(err).Message())
	switch {
	case errors.Is(err, ErrJobCancelled):
		log.Info("jobwire worker: run asked to stop (cancel requested), handler context cancelled")
		run.cancel(ErrJobCancelled)
	case errors.Is(err, ErrRunTimedOut):
		log.Warn("jobwire worker: run passed its deadline, handler context cancelled")
		run.cancel(ErrRunTimedOut)
	default:
		run.lease.lost.Store(true)
		log.Warn("jobwire worker: lease lost, the job moved on")
		run.cancel(ErrLeaseLost)
	}
	return true
}

// stop handles a StopRun read off the Claim stream: the run it names, if it
// still runs here, has its handler context cancelled with cause
// ErrJobCancelled (the only reason so far; a reason this client does not
// know is taken as the same request to stop).
func (r *runner) stop(s *jobwirepb.StopRun) {
	run := r.runs.find(runKey{s.GetJobId(), s.GetLeaseToken()})
	if run == nil {
		r.w.log.Debug("jobwire worker: stop for a run not running here, ignored",
			"job_id", s.GetJobId(), "queue", s.GetQueue(), "reason", s.GetReason().String())
		return
	}
	r.w.log.Info("jobwire worker: run asked to stop, handler context cancelled",
		"job_id", s.GetJobId(), "queue", s.GetQueue(), "reason", s.GetReason().String())
	run.cancel(ErrJobCancelled)
}

// runTable is the runs a Worker has started and not yet settled, by job id
// and lease token. The zero value is empty and ready. Safe for concurrent
// use.
type runTable struct {
	mu   sync.Mutex
	runs map[runKey]*jobRun // guarded by mu
}

func (t *runTable) add(run *jobRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.runs == nil {
		t.runs = map[runKey]*jobRun{}
	}
	t.runs[run.key] = run
}

func (t *runTable) remove(k runKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.runs, k)
}

// find is the run of k, or nil.
func (t *runTable) find(k runKey) *jobRun {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runs[k]
}

// ReportProgress records the progress of this run (Client.ReportProgress
// with the run's lease token), for GetJob, Wait updates and an
// EventProgress. It does not renew the lease (the Worker does). ctx bounds
// the call; without a deadline it gets the worker's WithTimeout.
//
// A refusal that ends the run also cancels the handler's context, as a
// refused lease renewal does, and is returned: ErrJobCancelled (Cancel asked
// the run to stop; return an error to have the job DEAD "cancelled"),
// ErrRunTimedOut (the run passed its deadline), or ErrLeaseStale /
// ErrJobState / ErrJobNotFound (the lease is lost, cause ErrLeaseLost). An
// out-of-range Progress is INVALID_ARGUMENT / ErrInvalidField ("percent",
// "data") and changes nothing. All are *Error (errors.As). A report not
// sent because ctx ended (CANCELLED / DEADLINE_EXCEEDED) after the handler's
// context ended with ErrJobCancelled / ErrRunTimedOut matches that cause
// too, so that one test covers both:
//
//	err := job.ReportProgress(ctx, jobwire.Progress{Percent: jobwire.Percent(50)})
//	if errors.Is(err, jobwire.ErrJobCancelled) || errors.Is(err, jobwire.ErrRunTimedOut) {
//		return nil, err
//	}
func (j *Job) ReportProgress(ctx context.Context, p Progress) error {
	if j.run == nil {
		return errors.New("jobwire: Job.ReportProgress: the job was not delivered by a Worker")
	}
	ctx, cancel := withDeadline(ctx, j.run.r.w.cfg.conn.timeout)
	defer cancel()
	err := reportProgress(ctx, j.run.r.stub, j.Queue, j.ID, j.leaseToken, p)
	if err == nil || j.run.refused("ReportProgress", j, err) {
		return err
	}
	// Not sent because ctx ended, most likely the handler's own context,
	// ended by a stop or the deadline: say so, so that errors.Is finds it.
	if cause := context.Cause(j.run.ctx); ctx.Err() != nil && (cause == ErrJobCancelled || cause == ErrRunTimedOut) {
		return fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}
