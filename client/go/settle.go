package jobwire

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// Settling a job: its Ack (through the ack coalescer) or Fail, retried
// while its outcome is unknown (retryable: UNAVAILABLE, DEADLINE_EXCEEDED,
// or CANCELLED the client did not cause) until the lease ends by the
// worker's estimate (per job; see callWithRetry for a lease known lost), and
// reported as its final outcome. The lease is renewed meanwhile
// (startRenewal): a renewal moves the estimate, a refused one marks the
// lease lost; callWithRetry stops the renewal (stopRenewal, which waits for
// it to end) once the outcome is decided, before ack / fail report it.

// callWithRetry calls fn, retrying an answer that leaves the outcome unknown
// (retryable: UNAVAILABLE, DEADLINE_EXCEEDED, or CANCELLED the client did
// not cause) with backoff until the job's lease has ended by the local
// estimate, the last attempts just before and at its end (retryWait). At
// least one call is made. An attempt sent while the lease was already known
// lost (a renewal was refused and the handler told) is final: the broker
// refuses it, unless an earlier attempt of this job was stored, which it
// answers again. One answered so when the lease has been learnt lost since
// it was sent (maybe because that attempt completed the job, its answer
// lost) is sent once more, at once, whatever the lease estimate: that
// attempt is sent while lost, so its answer is final. unknown says the
// error returned is such an answer: the outcome is unknown (else the error
// is a refusal, or the client's own cancellation). The lease's renewal ends
// before it returns: the outcome is decided.
func (r *runner) callWithRetry(lease *leaseState, fn func(ctx context.Context) error) (unknown bool, err error) {
	defer lease.stopRenewal()
	bo := backoffState{base: 100 * time.Millisecond, max: 2 * time.Second}
	for {
		lostWhenSent := lease.lost.Load()
		ctx, cancel := context.WithTimeout(r.hardCtx, r.w.cfg.conn.timeout)
		err := fn(ctx)
		unknown := err != nil && r.retryable(ctx, err) // before cancel ends ctx
		cancel()
		if !unknown || lostWhenSent || r.hardCtx.Err() != nil {
			return unknown, err
		}
		if lease.lost.Load() {
			continue // learnt lost since it was sent: once more, at once
		}
		delay, ok := retryWait(max(bo.next(), 20*time.Millisecond), time.Until(lease.expiry()))
		if !ok {
			return true, err
		}
		// Learnt lost during the wait: the next attempt is the last.
		if !sleepCtx(r.hardCtx, delay) {
			return true, err
		}
	}
}

// ack acks the job through the coalescer (in one batch with the acks of
// other jobs finishing meanwhile: on the Work stream, else an AckBatch
// call), retried for this job alone.
func (r *runner) ack(job *Job, lease *leaseState, result []byte) {
	req := &jobwirepb.AckRequest{
		Queue: job.Queue, JobId: job.ID, LeaseToken: job.leaseToken, Result: result,
	}
	// The batch carrying the ack is sent under sendAcks' rules, not this
	// attempt's ctx.
	unknown, err := r.callWithRetry(lease, func(context.Context) error { return r.acks.ack(req) })
	if r.abandoned.Load() {
		return
	}
	if err != nil {
		kind, e := r.unsettled("Ack", job, lease, err, unknown, OutcomeAckUnknown, OutcomeAckError)
		r.outcome(Outcome{Kind: kind, Job: job, Code: status.Code(err), Err: e, Result: result})
		return
	}
	r.outcome(Outcome{Kind: OutcomeAckOK, Job: job, Result: result})
}

// sendAcks sends one batch for the coalescer: on the open Work stream,
// waiting for its answer at most the unary deadline (WithTimeout; the
// stream is cancelled when the worker stops), or, when none is open or it ended before answering, as an AckBatch call
// with the unary deadline (WithTimeout), cancelled when the stop grace runs
// out.
func (r *runner) sendAcks(acks []*jobwirepb.AckRequest) ([]error, error) {
	if ans := r.work.send(acks, r.w.cfg.conn.timeout); ans != nil {
		return ans.errs, ans.err
	}
	ctx, cancel := context.WithTimeout(r.hardCtx, r.w.cfg.conn.timeout)
	defer cancel()
	return ackBatch(ctx, r.stub, &jobwirepb.AckBatchRequest{Acks: acks})
}

// fail fails the job with text (errorText(herr), or "cancelled" /
// "timeout" for a handler told to stop).
func (r *runner) fail(job *Job, lease *leaseState, herr error, text string) {
	nonRetryable := IsNonRetryable(herr)
	retryAfter := retryAfterMs(herr)
	keep := keepAttempt(herr)
	var resp *jobwirepb.FailResponse
	unknown, err := r.callWithRetry(lease, func(ctx context.Context) error {
		var err error
		resp, err = r.stub.Fail(ctx, &jobwirepb.FailRequest{
			Queue: job.Queue, JobId: job.ID, LeaseToken: job.leaseToken,
			Error: text, NonRetryable: nonRetryable, RetryAfterMs: retryAfter,
			KeepAttempt: keep,
		})
		return err
	})
	if r.abandoned.Load() {
		return
	}
	if err != nil {
		kind, e := r.unsettled("Fail", job, lease, err, unknown, OutcomeFailUnknown, OutcomeFailError)
		r.outcome(Outcome{Kind: kind, Job: job, Code: status.Code(err), Err: e,
			HandlerErr: herr, ErrorText: text})
		return
	}
	r.outcome(Outcome{Kind: OutcomeFailOK, Job: job, FailOutcome: strings.TrimPrefix(resp.GetOutcome().String(), "OUTCOME_"),
		NextAttemptAtMs: resp.GetNextAttemptAtMs(), HandlerErr: herr, ErrorText: text})
}

// unsettled logs why the Ack or Fail (call) of job did not succeed and
// returns its outcome kind: unknown when isUnknown (callWithRetry: its last
// attempt, at the lease end or sent after the lease was lost, was still
// answered retryable, so it may or may not be stored), else refused.
func (r *runner) unsettled(call string, job *Job, lease *leaseState, err error, isUnknown bool, unknown, refused OutcomeKind) (OutcomeKind, error) {
	e := toError(err)
	if isUnknown {
		when := "when the lease ended"
		if lease.lost.Load() {
			when = "when sent after the lease was lost (not sent again)"
		}
		r.w.log.Warn("jobwire worker: "+call+" unanswered "+when+", it may or may not be stored",
			"job_id", job.ID, "queue", job.Queue, "attempt", job.Attempt, "error", e)
		return unknown, e
	}
	r.w.log.Warn("jobwire worker: "+call+" refused", "job_id", job.ID, "queue", job.Queue,
		"attempt", job.Attempt, "error", e)
	return refused, e
}

// retryable reports whether err (not nil), the answer to one attempt of an
// Ack / Fail sent under ctx, leaves its outcome unknown, so that it may be
// sent again: UNAVAILABLE, DEADLINE_EXCEEDED, or CANCELLED the client did
// not cause (brokerWentAway: gRPC core ends a call that reached a broker as
// it stopped with CANCELLED, unseen by any handler, grpc/grpc#41785). A
// CANCELLED is the client's own when ctx (the attempt's) or the worker's
// hardCtx (abandoning its runs at the end of the stop grace; the AckBatch
// call carrying an ack has a context of its own under it) had ended: that
// one is final, as before.
func (r *runner) retryable(ctx context.Context, err error) bool {
	e, _ := toError(err).(*Error)
	if e == nil {
		return false
	}
	if e.Code == codes.DeadlineExceeded {
		return true
	}
	clientCancelled := e.Code == codes.Canceled && (ctx.Err() != nil || r.hardCtx.Err() != nil)
	return brokerWentAway(e) && !clientCancelled
}
