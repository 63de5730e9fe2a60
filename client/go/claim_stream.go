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
// in order (docs/clients.md, Worker: Delivery). It is a Work stream, which
// also carries the worker's acks (workAcks); a broker that answers Work
// UNIMPLEMENTED (older than Work) is sent Claim streams from then on, and
// the acks go as AckBatch calls.

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
		if code == codes.Unimplemented && !r.claimOnly {
			// A broker older than Work: Claim streams from now on, at once.
			r.claimOnly = true
			r.w.log.Info("jobwire worker: the broker has no Work stream, using Claim streams and AckBatch calls")
			continue
		}
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

// claimOnce opens one stream, Work (Claim once the broker has answered Work
// UNIMPLEMENTED), with the claim max_in_flight = free, the job types with a
// handler (claimTypes) and the queues' weights (WithWeights, in the order of
// the queues; none: strict order), and reads it (readStream) until it ends.
// While a Work stream is open, the worker's acks go on it (r.work).
func (r *runner) claimOnce(ctx context.Context, free int) (delivered bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg := &r.w.cfg
	claim := &jobwirepb.ClaimRequest{
		Queues:      cfg.queues,
		MaxInFlight: int32(free),
		LeaseMs:     cfg.leaseMs(),
		WorkerId:    cfg.workerID,
		Types:       r.w.claimTypes(),
		Weights:     cfg.claimWeights,
	}
	if r.claimOnly {
		stream, err := r.stub.Claim(sctx, claim)
		if err != nil {
			return false, err
		}
		r.w.log.Debug("jobwire worker: Claim stream open", "max_in_flight", free)
		return r.readStream(func() (streamMessage, error) { return stream.Recv() })
	}
	stream, err := r.stub.Work(sctx)
	if err != nil {
		return false, err
	}
	// A failed write: the stream has ended, and Recv returns its status.
	if stream.Send(&jobwirepb.WorkRequest{Kind: &jobwirepb.WorkRequest_Claim{Claim: claim}}) == nil {
		r.work.open(stream)
		defer r.work.end()
	}
	r.w.log.Debug("jobwire worker: Work stream open", "max_in_flight", free)
	return r.readStream(func() (streamMessage, error) {
		msg, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		r.work.answered(msg.GetAckAnswers())
		return msg, nil
	})
}

// streamMessage is a message of a Claim stream (ClaimResponse) or of a Work
// stream (WorkResponse, whose ack answers claimOnce hands to r.work).
type streamMessage interface {
	GetJobs() []*jobwirepb.ClaimedJob
	GetStops() []*jobwirepb.StopRun
}

// readStream reads a Claim or Work stream with recv until it ends, and
// returns its error. Each message carries jobs (all those claimed since the
// previous message), which are started one by one in order, and / or stop
// requests for runs (StopRun), handled after its jobs; a message may have
// no jobs.
func (r *runner) readStream(recv func() (streamMessage, error)) (delivered bool, err error) {
	for {
		msg, err := recv()
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
