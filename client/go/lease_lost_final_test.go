package jobwire_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// The final Ack / Fail of a job whose lease is known lost (docs/clients.md,
// Worker), against the real broker and Redis: once a renewal was refused (the
// handler's ctx ended with ErrLeaseLost), the Ack / Fail is sent once;
// answered UNAVAILABLE it is not sent again (the broker would refuse it) and
// the outcome is ack_unknown / fail_unknown with that error. The rule is per
// job: an ack that failed in the same AckBatch call, or a Fail, of a job whose
// lease holds is still retried. The UNAVAILABLE answers come from a client
// interceptor; every other call reaches the broker. The broker looks older
// than Work to the ack test's worker (olderBroker), so that its acks go as
// AckBatch calls, which the interceptor sees. A job whose lease is lost
// was deleted (Admin DeleteJob), so a second attempt would be answered
// NOT_FOUND (ack_error / fail_error), not unknown.

// scripted is a unary client interceptor for the calls of one method
// ("AckBatch" or "Fail"): send(req) says whether a call reaches the broker
// (it may block first); when not, the call is answered UNAVAILABLE unsent.
func scripted(method string, send func(req any) bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, m string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if strings.HasSuffix(m, "/"+method) && !send(req) {
			return status.Error(codes.Unavailable, "stand-in: broker unreachable")
		}
		return invoker(ctx, m, req, reply, cc, opts...)
	}
}

// callLog records the job ids of each scripted call.
type callLog struct {
	mu    sync.Mutex
	calls [][]string
}

// add records one call and returns its index.
func (l *callLog) add(ids []string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, ids)
	return len(l.calls) - 1
}

func (l *callLog) get() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func TestAckUnavailableAfterTheLeaseWasLostIsNotSentAgain(t *testing.T) {
	c := newClient(t, brokerAddr)
	admin := adminClient(t)
	q := queueName(t)
	// AckBatch calls: the first waits for plug (the acks finishing meanwhile
	// are queued together for the next call), the second is answered
	// UNAVAILABLE, the others reach the broker.
	var log callLog
	plug := make(chan struct{})
	interceptor := scripted("AckBatch", func(req any) bool {
		var ids []string
		for _, a := range req.(*jobwirepb.AckBatchRequest).GetAcks() {
			ids = append(ids, a.GetJobId())
		}
		switch log.add(ids) {
		case 0:
			<-plug
		case 1:
			return false
		}
		return true
	})
	started := make(chan string, 3)
	returned := make(chan string, 3)
	goPlug, goKept := make(chan struct{}), make(chan struct{})
	handle := func(ctx context.Context, job *jobwire.Job) (any, error) {
		started <- job.Type
		switch job.Type {
		case "plug":
			<-goPlug
		case "kept":
			<-goKept
		case "lost":
			<-ctx.Done() // ErrLeaseLost; the handler still returns a result
		}
		returned <- job.Type
		return job.Type, nil
	}
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{"plug": handle, "lost": handle, "kept": handle},
		jobwire.WithConcurrency(3), jobwire.WithLease(3*time.Second), (&olderBroker{}).option(),
		jobwire.WithDialOptions(grpc.WithChainUnaryInterceptor(interceptor)))
	ids := map[string]string{}
	for _, typ := range []string{"plug", "lost", "kept"} {
		ids[typ] = mustEnqueue(t, c, q, typ, nil, jobwire.WithMaxAttempts(3))
	}
	waitN := func(ch chan string, n int, what string) {
		t.Helper()
		for i := 0; i < n; i++ {
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitN(started, 3, "the three handlers to start")
	close(goPlug)
	waitN(returned, 1, "the plug handler to return")
	waitFor(t, 10*time.Second, "the first AckBatch call", func() bool { return len(log.get()) == 1 })
	if _, err := admin.DeleteJob(context.Background(), &jobwirepb.DeleteJobRequest{Queue: q, JobId: ids["lost"]}); err != nil {
		t.Fatalf("DeleteJob: %v", err) // the next renewal: NOT_FOUND
	}
	close(goKept)
	waitN(returned, 2, "the other two handlers to return")
	time.Sleep(300 * time.Millisecond) // their acks are queued behind the first call
	close(plug)
	waitFor(t, 15*time.Second, "the outcomes", func() bool {
		return len(rw.out.forJob(ids["lost"])) == 1 && len(rw.out.forJob(ids["kept"])) == 1
	})

	calls := log.get()
	if len(calls) < 2 || !slices.Equal(calls[0], []string{ids["plug"]}) {
		t.Fatalf("AckBatch calls %v, want the plug job's first", calls)
	}
	second := slices.Clone(calls[1])
	slices.Sort(second)
	want := []string{ids["lost"], ids["kept"]}
	slices.Sort(want)
	if !slices.Equal(second, want) {
		t.Errorf("second AckBatch call carried %v, want both %v", calls[1], want)
	}
	if rest := calls[2:]; len(rest) != 1 || !slices.Equal(rest[0], []string{ids["kept"]}) {
		t.Errorf("AckBatch calls after the failed one %v, want one with only the job whose lease holds (%s)", rest, ids["kept"])
	}
	if o := rw.out.forJob(ids["lost"])[0]; o.Kind != jobwire.OutcomeAckUnknown || o.Code != codes.Unavailable {
		t.Errorf("lost lease: outcome %s %v, want ack_unknown UNAVAILABLE", o.Kind, o.Code)
	}
	if o := rw.out.forJob(ids["kept"])[0]; o.Kind != jobwire.OutcomeAckOK {
		t.Errorf("lease held: outcome %s %v, want ack_ok", o.Kind, o.Code)
	}
	if j := waitState(t, c, q, ids["kept"], jobwire.StateCompleted, 10*time.Second); j.GetAttempts() != 1 {
		t.Errorf("kept: %d attempts, want 1", j.GetAttempts())
	}
}

func TestFailUnavailableAfterTheLeaseWasLostIsNotSentAgain(t *testing.T) {
	c := newClient(t, brokerAddr)
	admin := adminClient(t)
	q := queueName(t)
	// Fail calls: each job's first is answered UNAVAILABLE.
	var log callLog
	interceptor := scripted("Fail", func(req any) bool {
		id := req.(*jobwirepb.FailRequest).GetJobId()
		first := !slices.ContainsFunc(log.get(), func(ids []string) bool { return ids[0] == id })
		log.add([]string{id})
		return !first
	})
	started := make(chan struct{}, 1)
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"lost": func(ctx context.Context, job *jobwire.Job) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, context.Cause(ctx) // ErrLeaseLost
		},
		"kept": func(ctx context.Context, job *jobwire.Job) (any, error) {
			return nil, jobwire.NonRetryable(errors.New("kept")) // no second attempt
		},
	}, jobwire.WithConcurrency(2), jobwire.WithLease(1500*time.Millisecond),
		jobwire.WithDialOptions(grpc.WithChainUnaryInterceptor(interceptor)))
	ids := map[string]string{}
	for _, typ := range []string{"lost", "kept"} {
		ids[typ] = mustEnqueue(t, c, q, typ, nil, jobwire.WithMaxAttempts(3))
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("job never started")
	}
	if _, err := admin.DeleteJob(context.Background(), &jobwirepb.DeleteJobRequest{Queue: q, JobId: ids["lost"]}); err != nil {
		t.Fatalf("DeleteJob: %v", err) // the next renewal: NOT_FOUND
	}
	waitFor(t, 15*time.Second, "the outcomes", func() bool {
		return len(rw.out.forJob(ids["lost"])) == 1 && len(rw.out.forJob(ids["kept"])) == 1
	})

	count := func(id string) int {
		n := 0
		for _, ids := range log.get() {
			if ids[0] == id {
				n++
			}
		}
		return n
	}
	if n := count(ids["lost"]); n != 1 {
		t.Errorf("lost lease: Fail sent %d times, want once", n)
	}
	if n := count(ids["kept"]); n != 2 {
		t.Errorf("lease held: Fail sent %d times, want twice (retried after UNAVAILABLE)", n)
	}
	if o := rw.out.forJob(ids["lost"])[0]; o.Kind != jobwire.OutcomeFailUnknown || o.Code != codes.Unavailable {
		t.Errorf("lost lease: outcome %s %v, want fail_unknown UNAVAILABLE", o.Kind, o.Code)
	}
	if o := rw.out.forJob(ids["kept"])[0]; o.Kind != jobwire.OutcomeFailOK || o.FailOutcome != "DEAD" {
		t.Errorf("lease held: outcome %s %q, want fail_ok DEAD", o.Kind, o.FailOutcome)
	}
}
