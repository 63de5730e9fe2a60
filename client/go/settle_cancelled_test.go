package jobwire_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// An Ack / Fail answered CANCELLED the client did not cause (docs/clients.md,
// Worker), against the real broker and Redis: gRPC core ends a call that
// reaches a broker as it stops with CANCELLED, unseen by any handler
// (grpc/grpc#41785), so the Worker takes it as UNAVAILABLE: it sends the Ack /
// Fail again, and the outcome is that of the attempt that got through
// (ack_ok / fail_ok), not ack_error / fail_error. The zombified call is
// played by a client interceptor that answers the first call CANCELLED
// without sending it; every other call reaches the broker. The ack test's
// worker sees a broker older than Work (olderBroker), so that its acks go as
// AckBatch calls, which the interceptor sees. A CANCELLED the worker caused
// itself (its runs abandoned at the end of the stop grace) is not sent again.

// zombified is a unary client interceptor for the calls of one method
// ("AckBatch" or "Fail"): it records the job ids of each call in log and
// answers the first CANCELLED, unsent; the others reach the broker.
func zombified(method string, log *callLog) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, m string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if !strings.HasSuffix(m, "/"+method) {
			return invoker(ctx, m, req, reply, cc, opts...)
		}
		var ids []string
		switch r := req.(type) {
		case *jobwirepb.AckBatchRequest:
			for _, a := range r.GetAcks() {
				ids = append(ids, a.GetJobId())
			}
		case *jobwirepb.FailRequest:
			ids = append(ids, r.GetJobId())
		}
		if log.add(ids) == 0 {
			return status.Error(codes.Canceled, "stand-in: call zombified by a stopping broker")
		}
		return invoker(ctx, m, req, reply, cc, opts...)
	}
}

// runCount counts a handler's runs by attempt.
type runCount struct {
	mu   sync.Mutex
	runs []int
}

func (r *runCount) add(attempt int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, attempt)
}

func (r *runCount) get() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs)
}

func TestAckCancelledItDidNotCauseIsSentAgain(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	var log callLog
	var runs runCount
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"j": func(ctx context.Context, job *jobwire.Job) (any, error) {
			runs.add(job.Attempt)
			return "done", nil
		},
	}, (&olderBroker{}).option(), jobwire.WithDialOptions(grpc.WithChainUnaryInterceptor(zombified("AckBatch", &log))))
	id := mustEnqueue(t, c, q, "j", nil, jobwire.WithMaxAttempts(3))
	waitFor(t, 10*time.Second, "the outcome", func() bool { return len(rw.out.forJob(id)) >= 1 })
	time.Sleep(300 * time.Millisecond) // nothing more comes

	if calls := log.get(); len(calls) != 2 || !slices.Equal(calls[0], []string{id}) || !slices.Equal(calls[1], []string{id}) {
		t.Errorf("AckBatch calls %v, want two, each with the job (sent again after CANCELLED)", calls)
	}
	if got, want := kinds(rw, id), []string{"ack_ok 1"}; !slices.Equal(got, want) {
		t.Errorf("outcomes %v (%v), want %v", got, rw.out.forJob(id), want)
	}
	if got := runs.get(); !slices.Equal(got, []int{1}) {
		t.Errorf("handler ran for attempts %v, want [1]", got)
	}
	j := waitState(t, c, q, id, jobwire.StateCompleted, 5*time.Second)
	if j.GetAttempts() != 1 || string(j.GetResult()) != `"done"` {
		t.Errorf("job: %d attempts, result %q; want 1, \"done\"", j.GetAttempts(), j.GetResult())
	}
}

func TestFailCancelledItDidNotCauseIsSentAgain(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	var log callLog
	var runs runCount
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"j": func(ctx context.Context, job *jobwire.Job) (any, error) {
			runs.add(job.Attempt)
			return nil, jobwire.NonRetryable(errors.New("boom")) // DEAD at once
		},
	}, jobwire.WithDialOptions(grpc.WithChainUnaryInterceptor(zombified("Fail", &log))))
	id := mustEnqueue(t, c, q, "j", nil, jobwire.WithMaxAttempts(3))
	waitFor(t, 10*time.Second, "the outcome", func() bool { return len(rw.out.forJob(id)) >= 1 })
	time.Sleep(300 * time.Millisecond) // nothing more comes

	if calls := log.get(); len(calls) != 2 || !slices.Equal(calls[0], []string{id}) || !slices.Equal(calls[1], []string{id}) {
		t.Errorf("Fail calls %v, want two, each with the job (sent again after CANCELLED)", calls)
	}
	outs := rw.out.forJob(id)
	if got, want := kinds(rw, id), []string{"fail_ok 1"}; !slices.Equal(got, want) {
		t.Errorf("outcomes %v (%v), want %v", got, outs, want)
	} else if o := outs[0]; o.FailOutcome != "DEAD" || o.ErrorText != "error: boom" {
		t.Errorf("outcome %s %q text %q, want fail_ok DEAD \"error: boom\"", o.Kind, o.FailOutcome, o.ErrorText)
	}
	if got := runs.get(); !slices.Equal(got, []int{1}) {
		t.Errorf("handler ran for attempts %v, want [1]", got)
	}
	j := waitState(t, c, q, id, jobwire.StateDead, 5*time.Second)
	if j.GetAttempts() != 1 || j.GetError() != "error: boom" {
		t.Errorf("job: %d attempts, error %q; want 1, \"error: boom\"", j.GetAttempts(), j.GetError())
	}
}

// A Fail still answered CANCELLED (not the worker's own) when the lease ends
// is fail_unknown, as one still answered UNAVAILABLE: every Fail is answered
// CANCELLED, unsent, and every renewal UNAVAILABLE (a broker stopping), so
// the lease ends by the worker's estimate one lease after receipt.
func TestFailCancelledUntilTheLeaseEndsIsUnknown(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	const lease = time.Second
	var fails atomic.Int32
	interceptor := func(ctx context.Context, m string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		switch {
		case strings.HasSuffix(m, "/Fail"):
			fails.Add(1)
			return status.Error(codes.Canceled, "stand-in: call zombified by a stopping broker")
		case strings.HasSuffix(m, "/ExtendLease"):
			return status.Error(codes.Unavailable, "stand-in: broker unreachable")
		}
		return invoker(ctx, m, req, reply, cc, opts...)
	}
	received := make(chan time.Time, 1)
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"j": func(ctx context.Context, job *jobwire.Job) (any, error) {
			if job.Attempt == 1 {
				received <- time.Now()
			}
			return nil, errors.New("boom")
		},
	}, jobwire.WithLease(lease), jobwire.WithDialOptions(grpc.WithChainUnaryInterceptor(interceptor)))
	id := mustEnqueue(t, c, q, "j", nil, jobwire.WithMaxAttempts(3))
	var start time.Time
	select {
	case start = <-received:
	case <-time.After(10 * time.Second):
		t.Fatal("job never started")
	}
	waitFor(t, 10*time.Second, "the outcome", func() bool { return len(rw.out.forJob(id)) >= 1 })
	reportedAt := rw.out.first()

	o := rw.out.forJob(id)[0]
	if o.Kind != jobwire.OutcomeFailUnknown || o.Code != codes.Canceled || o.Job.Attempt != 1 {
		t.Errorf("outcome %s %v attempt %d, want fail_unknown CANCELLED on attempt 1", o.Kind, o.Code, o.Job.Attempt)
	}
	if n := fails.Load(); n < 3 {
		t.Errorf("Fail sent %d times, want it sent again until the lease ended", n)
	}
	// Given up only once the lease had ended (the estimate: receipt + lease).
	if at := reportedAt.Sub(start); at < lease-100*time.Millisecond {
		t.Errorf("gave up %s after receipt, before the %s lease ended", at, lease)
	}
}

// The worker's own CANCELLED: its stop grace runs out while a Fail is in
// flight (the interceptor holds it, unsent, until its context ends), so the
// worker abandons the run and cancels the call. That Fail is not sent again
// and no outcome is reported; the job stays ACTIVE (the broker's reaper
// takes it at the lease end).
func TestFailCancelledByTheWorkerIsNotSentAgain(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	var log callLog
	held := make(chan struct{}, 1)
	interceptor := func(ctx context.Context, m string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if !strings.HasSuffix(m, "/Fail") {
			return invoker(ctx, m, req, reply, cc, opts...)
		}
		log.add([]string{req.(*jobwirepb.FailRequest).GetJobId()})
		held <- struct{}{}
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	out := &outcomes{}
	w, err := jobwire.NewWorker(brokerAddr, []string{q}, jobwire.WithLogger(testLogger()),
		jobwire.WithGrace(500*time.Millisecond), jobwire.WithOutcomeHook(out.add),
		jobwire.WithDialOptions(grpc.WithChainUnaryInterceptor(interceptor)))
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("j", func(ctx context.Context, job *jobwire.Job) (any, error) {
		return nil, errors.New("boom")
	})
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(context.Background()) }()
	id := mustEnqueue(t, c, q, "j", nil, jobwire.WithMaxAttempts(3))
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		w.Stop()
		t.Fatal("no Fail call")
	}
	w.Stop()
	select {
	case err := <-runErr:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the stop grace")
	}
	time.Sleep(500 * time.Millisecond) // a Fail sent again would come now

	if calls := log.get(); len(calls) != 1 {
		t.Errorf("Fail calls %v, want one (the worker's own CANCELLED is final)", calls)
	}
	if o := out.forJob(id); len(o) != 0 {
		t.Errorf("outcomes %+v, want none (the run was abandoned)", o)
	}
	j, err := c.GetJob(context.Background(), q, id)
	if err != nil || j.GetState() != jobwire.StateActive || j.GetAttempts() != 1 {
		t.Errorf("job: %v %v, want ACTIVE on attempt 1 (no Fail reached the broker)", j, err)
	}
}
