package jobwire

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// The lease of a job being processed: its length (the lease the broker
// granted), the worker's own estimate of its end, and its renewal from
// delivery until the job is settled: while the handler runs and while its Ack
// / Fail is retried (docs/clients.md, Worker: Leases).

// defaultLeaseMs is the broker's documented default lease, used to pace
// renewals when the broker sends no ClaimedJob.lease_ms (older than that
// field) and WithLease is 0 (leaseLength).
const defaultLeaseMs = 30000

// The lease limits of the broker (1 s .. 12 h).
const (
	minLeaseMs = 1000
	maxLeaseMs = 43200000
)

// leaseState is the lease of one job being processed.
type leaseState struct {
	// length is the lease granted per claim / renewal: ClaimedJob.lease_ms
	// (see leaseLength for brokers that do not send it).
	length time.Duration
	lost   atomic.Bool

	// runDeadline is the run's deadline, receipt time + Job.timeout_ms
	// (zero: none); the broker never extends the lease past it.
	runDeadline time.Time

	mu sync.Mutex
	// deadline is the local (monotonic) estimate of the lease end: receipt
	// time or the send time of the last successful renewal, plus length, and
	// never past runDeadline. It bounds the Ack / Fail retries without
	// comparing the Redis clock with the local one.
	deadline time.Time

	// stopRenewal ends the renewal (startRenewal sets it) and waits for it
	// to end; calling it again does nothing more. callWithRetry calls it
	// once the outcome is decided; process once more for a job abandoned at
	// the end of the stop grace.
	stopRenewal func()
}

func (l *leaseState) expiry() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

func (l *leaseState) renewed(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.capped(sent.Add(l.length)); d.After(l.deadline) {
		l.deadline = d
	}
}

// atRunDeadline reports whether the lease already lasts until the run's
// deadline: no renewal can extend it.
func (l *leaseState) atRunDeadline() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.runDeadline.IsZero() && !l.deadline.Before(l.runDeadline)
}

// capped is t, or the run's deadline when that comes first.
func (l *leaseState) capped(t time.Time) time.Time {
	if !l.runDeadline.IsZero() && l.runDeadline.Before(t) {
		return l.runDeadline
	}
	return t
}

// newLease is the lease of a job received at received: its length is the
// lease the broker granted (ClaimedJob.lease_ms, capped at the run's
// deadline); from a broker older than that field, the one the Claim asked
// for, else the broker default (leaseLength).
func (r *runner) newLease(cj *jobwirepb.ClaimedJob, received time.Time) *leaseState {
	l := &leaseState{length: leaseLength(cj.GetLeaseMs(), r.w.cfg.leaseMs())}
	if d := runTimeout(cj.GetJob()); d > 0 {
		l.runDeadline = received.Add(d)
	}
	l.deadline = l.capped(received.Add(l.length))
	return l
}

// startRenewal renews the lease of job (renew) until run.lease.stopRenewal
// is called, the run's context ends (the run was told to stop, passed its
// deadline, or was abandoned at the end of the stop grace) or the renewal
// ends by itself. stopRenewal cancels a call in flight and waits for the
// renewal to end, so that nothing of it outlives the job.
func (r *runner) startRenewal(job *Job, run *jobRun) {
	ctx, cancel := context.WithCancel(run.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.renew(ctx, job, run)
	}()
	run.lease.stopRenewal = func() {
		cancel()
		<-done
	}
}

// renew extends the lease every lease length / 3 until ctx ends, a refusal
// ends the run (run.refused: the lease is lost, or the run was asked to stop
// or passed its deadline), or the lease lasts until the run's deadline (the
// broker would not extend it further, and the handler's context ends
// there); after a failed call (not a refusal) it tries again sooner, after
// half of that, at most 1 s (docs/clients.md, Leases). It goes on after the
// handler returned, while the Ack / Fail is retried: a renewal then still
// moves the lease estimate that bounds those retries, and a refusal marks the
// lease lost (callWithRetry; cancelling the handler's context then tells no
// one).
func (r *runner) renew(ctx context.Context, job *Job, run *jobRun) {
	lease := run.lease
	interval := lease.length / 3
	retry := min(interval/2, time.Second)
	// The lease asked for: the one granted (the Claim's, or the broker
	// default), unless the broker is too old to say it.
	leaseMs := job.LeaseMs
	if leaseMs == 0 {
		leaseMs = r.w.cfg.leaseMs()
	}
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		if lease.atRunDeadline() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		timeout := min(r.w.cfg.conn.timeout, interval)
		cctx, cancel := context.WithTimeout(ctx, timeout)
		sent := time.Now()
		_, err := r.stub.ExtendLease(cctx, &jobwirepb.ExtendLeaseRequest{
			Queue:      job.Queue,
			JobId:      job.ID,
			LeaseToken: job.leaseToken,
			LeaseMs:    leaseMs,
		})
		cancel()
		if err == nil {
			lease.renewed(sent)
			timer.Reset(interval)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if run.refused("ExtendLease", job, toError(err)) {
			return
		}
		r.w.log.Warn("jobwire worker: lease renewal failed, will retry",
			"job_id", job.ID, "code", CodeName(status.Code(err)), "error", status.Convert(err).Message())
		timer.Reset(retry)
	}
}
