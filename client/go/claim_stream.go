package jobwire

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// The Worker's Claim stream: kept open (reopened with backoff after any end
// or error), asking for the free handler slots, each delivered job started
// in order (docs/clients.md, Worker: Delivery).

// reconnectBackoff is the Claim stream's reopen backoff: 100 ms doubling to
// 5 s, full jitter; claimLoop resets it once a stream delivers.
func reconnectBackoff() backoffState {
	return backoffState{base: 100 * time.Millisecond, max: 5 * time.Second}
}

// claimLoop keeps one Claim stream open until ctx ends. It returns nil, or
// the *Error of an INVALID_ARGUMENT refusal.
func (r *runner) claimLoop(ctx context.Context) error {
	bo := reconnectBackoff()
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

// claimOnce opens one Claim stream with max_in_flight = free, the job types
// with a handler (claimTypes) and the queues' weights (WithWeights, in the
// order of the queues; none: strict order), and starts every job it
// delivers. Each stream message carries jobs (all those claimed since the
// previous message), which are started one by one in order, and / or stop
// requests for runs (StopRun), handled after its jobs; a message may have no
// jobs. It returns when the stream ends.
func (r *runner) claimOnce(ctx context.Context, free int) (delivered bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := &r.w.cfg
	stream, err := r.stub.Claim(sctx, &jobwirepb.ClaimRequest{
		Queues:      cfg.queues,
		MaxInFlight: int32(free),
		LeaseMs:     cfg.leaseMs(),
		WorkerId:    cfg.workerID,
		Types:       r.w.claimTypes(),
		Weights:     cfg.claimWeights,
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
		// After the jobs: a stop may name a run delivered in the same
		// message.
		for _, s := range msg.GetStops() {
			r.stop(s)
		}
	}
}

// start takes a slot for a job just read off the Claim stream, registers its
// lease and its run (deadline, stop requests; from now) and runs it in its
// own goroutine.
func (r *runner) start(cj *jobwirepb.ClaimedJob) {
	received := time.Now()
	lease := r.newLease(cj, received)
	run := r.newRun(cj, received, lease)
	if r.takeSlot() {
		r.w.log.Warn("jobwire worker: job delivered beyond the concurrency (a lease was lost while its handler runs), starting it anyway",
			"job_id", cj.GetJob().GetId(), "queue", cj.GetJob().GetQueue(), "concurrency", r.w.cfg.concurrency)
	}
	r.jobs.Add(1)
	go r.process(cj, run)
}
