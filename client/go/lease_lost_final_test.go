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
	"google.golang.org/protobuf/proto"

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

// The lease learnt lost while the Ack / Fail is in flight (docs/clients.md,
// Worker): the first attempt is stored by the broker (the job completed, or
// failed), its answer lost (the interceptor holds it, then answers
// UNAVAILABLE), and meanwhile the worker learns that the lease is lost: its
// own renewal, which goes on while the Ack / Fail is retried (every third of
// the 1 s lease), is refused, since the job is no longer active under that
// token. The attempt was sent while the lease held, so it is sent once more,
// at once (even past the worker's lease estimate), and the broker answers
// that repeat with the first outcome: ack_ok / fail_ok, not unknown.

// heldAnswer is a unary client interceptor for the calls of one method
// ("AckBatch" or "Fail"): each reaches the broker, and answer(req, reply,
// err) returns what the worker is told instead of the broker's err (it may
// block first).
func heldAnswer(method string, answer func(req, reply any, err error) error) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, m string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, m, req, reply, cc, opts...)
		if strings.HasSuffix(m, "/"+method) {
			return answer(req, reply, err)
		}
		return err
	}
}

// learnLeaseLost waits for the first call's answer (err, held by the
// interceptor), then for the worker to learn the lease lost from a renewal
// refused by the broker (the job moved on under that token): ctx, the
// handler's context (its handler has returned), ends with cause
// ErrLeaseLost. It then waits until the worker's estimate of the lease end
// has passed (no renewal sent after the first call was stored succeeded, so
// that estimate is at most lease after it), so that the attempt sent again is
// beyond it.
func learnLeaseLost(t *testing.T, stored <-chan error, ctx context.Context, lease time.Duration) {
	t.Helper()
	var storedAt time.Time
	select {
	case err := <-stored:
		storedAt = time.Now()
		if err != nil {
			t.Fatalf("first call: broker answered %v, want it stored", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no first call")
	}
	select {
	case <-ctx.Done():
	case <-time.After(3 * lease):
		t.Fatal("the worker did not learn the lease lost: no renewal refused while the first answer is held")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, jobwire.ErrLeaseLost) {
		t.Fatalf("handler context cause %v, want ErrLeaseLost (a renewal refused)", cause)
	}
	time.Sleep(time.Until(storedAt.Add(lease + 200*time.Millisecond)))
}

// answerLost is the interceptor's stand-in for an answer lost: it waits for
// learnt (closed once the worker knows the lease lost), then says
// UNAVAILABLE.
func answerLost(learnt <-chan struct{}) error {
	select {
	case <-learnt:
	case <-time.After(20 * time.Second):
	}
	return status.Error(codes.Unavailable, "stand-in: answer lost")
}

func TestAckStoredButUnansweredIsSentOnceMoreWhenTheLeaseIsLearntLost(t *testing.T) {
	c := newClient(t, brokerAddr)
	q := queueName(t)
	const lease = time.Second
	// AckBatch calls: the first is held until the worker has learnt the
	// lease lost, then answered UNAVAILABLE; the others are answered as the
	// broker answers them.
	var log callLog
	stored := make(chan error, 1)
	learnt := make(chan struct{})
	interceptor := heldAnswer("AckBatch", func(req, reply any, err error) error {
		var ids []string
		for _, a := range req.(*jobwirepb.AckBatchRequest).GetAcks() {
			ids = append(ids, a.GetJobId())
		}
		if log.add(ids) != 0 {
			return err
		}
		if err == nil {
			if r := reply.(*jobwirepb.AckBatchResponse).GetResults(); len(r) != 1 || r[0].GetCode() != 0 {
				err = status.Errorf(codes.Internal, "first ack not stored: %v", r)
			}
		}
		stored <- err
		return answerLost(learnt)
	})
	handlerCtx := make(chan context.Context, 1)
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"j": func(ctx context.Context, job *jobwire.Job) (any, error) {
			handlerCtx <- ctx
			return "done", nil
		},
	}, jobwire.WithLease(lease), (&olderBroker{}).option(),
		jobwire.WithDialOptions(grpc.WithChainUnaryInterceptor(interceptor)))
	id := mustEnqueue(t, c, q, "j", nil, jobwire.WithMaxAttempts(3))
	var ctx context.Context
	select {
	case ctx = <-handlerCtx:
	case <-time.After(10 * time.Second):
		t.Fatal("job never started")
	}
	learnLeaseLost(t, stored, ctx, lease)
	waitState(t, c, q, id, jobwire.StateCompleted, time.Second) // stored by the first call
	close(learnt)
	waitFor(t, 10*time.Second, "the outcome", func() bool { return len(rw.out.forJob(id)) == 1 })

	if calls := log.get(); len(calls) != 2 || !slices.Equal(calls[0], []string{id}) || !slices.Equal(calls[1], []string{id}) {
		t.Errorf("AckBatch calls %v, want two, each with the job", calls)
	}
	if o := rw.out.forJob(id)[0]; o.Kind != jobwire.OutcomeAckOK {
		t.Errorf("outcome %s %v %v, want ack_ok (the repeat answered OK)", o.Kind, o.Code, o.Err)
	}
	if j := waitState(t, c, q, id, jobwire.StateCompleted, time.Second); j.GetAttempts() != 1 || string(j.GetResult()) != `"done"` {
		t.Errorf("job: %d attempts, result %q; want 1, \"done\"", j.GetAttempts(), j.GetResult())
	}
}

func TestFailStoredButUnansweredIsSentOnceMoreWhenTheLeaseIsLearntLost(t *testing.T) {
	c := newClient(t, brokerAddr)
	q := queueName(t)
	const lease = time.Second
	// Fail calls: the first is held until the worker has learnt the lease
	// lost, then answered UNAVAILABLE (first: the broker's answer to it);
	// the others are answered as the broker answers them.
	var log callLog
	var first *jobwirepb.FailResponse
	stored := make(chan error, 1)
	learnt := make(chan struct{})
	interceptor := heldAnswer("Fail", func(req, reply any, err error) error {
		if log.add([]string{req.(*jobwirepb.FailRequest).GetJobId()}) != 0 {
			return err
		}
		first = proto.Clone(reply.(*jobwirepb.FailResponse)).(*jobwirepb.FailResponse)
		stored <- err
		return answerLost(learnt)
	})
	handlerCtx := make(chan context.Context, 1)
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"j": func(ctx context.Context, job *jobwire.Job) (any, error) {
			handlerCtx <- ctx
			// Retried in an hour: not delivered again during the test.
			return nil, jobwire.RetryAfter(errors.New("boom"), time.Hour)
		},
	}, jobwire.WithLease(lease), jobwire.WithDialOptions(grpc.WithChainUnaryInterceptor(interceptor)))
	id := mustEnqueue(t, c, q, "j", nil, jobwire.WithMaxAttempts(3))
	var ctx context.Context
	select {
	case ctx = <-handlerCtx:
	case <-time.After(10 * time.Second):
		t.Fatal("job never started")
	}
	learnLeaseLost(t, stored, ctx, lease)
	if first.GetOutcome() != jobwirepb.FailResponse_OUTCOME_RETRY_SCHEDULED || first.GetNextAttemptAtMs() == 0 {
		t.Fatalf("first Fail answered %v, want a retry scheduled", first)
	}
	waitState(t, c, q, id, jobwire.StatePending, time.Second) // stored by the first call
	close(learnt)
	waitFor(t, 10*time.Second, "the outcome", func() bool { return len(rw.out.forJob(id)) == 1 })

	if calls := log.get(); len(calls) != 2 || !slices.Equal(calls[0], []string{id}) || !slices.Equal(calls[1], []string{id}) {
		t.Errorf("Fail calls %v, want two, each with the job", calls)
	}
	if o := rw.out.forJob(id)[0]; o.Kind != jobwire.OutcomeFailOK || o.FailOutcome != "RETRY_SCHEDULED" ||
		o.NextAttemptAtMs != first.GetNextAttemptAtMs() {
		t.Errorf("outcome %s %q next attempt %d (%v %v), want fail_ok RETRY_SCHEDULED %d (the first outcome, repeated)",
			o.Kind, o.FailOutcome, o.NextAttemptAtMs, o.Code, o.Err, first.GetNextAttemptAtMs())
	}
	if j := waitState(t, c, q, id, jobwire.StatePending, time.Second); j.GetAttempts() != 1 || j.GetAvailableAtMs() != first.GetNextAttemptAtMs() {
		t.Errorf("job: %d attempts, available at %d; want 1, %d", j.GetAttempts(), j.GetAvailableAtMs(), first.GetNextAttemptAtMs())
	}
}

// The lease is renewed while the Ack is retried (docs/clients.md, Worker:
// "from delivery until the job is settled"): the AckBatch calls are answered
// UNAVAILABLE, unsent, for 2.5 leases (a broker unreachable for acks only),
// then reach the broker. The renewals keep the lease (and the worker's
// estimate of its end, which bounds the retries), so the Ack is retried until
// it gets through: ack_ok, the handler ran once, and the job is completed on
// its first attempt. Had renewal stopped when the handler returned, the lease
// would have ended after one lease: ack_unknown, the job delivered again.
func TestLeaseIsRenewedWhileAnAckIsRetried(t *testing.T) {
	c := newClient(t, brokerAddr)
	q := queueName(t)
	const lease = time.Second
	const outage = lease * 5 / 2
	var mu sync.Mutex
	var firstAck, lastAck time.Time
	calls := 0
	interceptor := scripted("AckBatch", func(any) bool {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if calls++; calls == 1 {
			firstAck = now
		}
		lastAck = now
		return now.Sub(firstAck) >= outage
	})
	var runsMu sync.Mutex
	var runs []int
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"j": func(ctx context.Context, job *jobwire.Job) (any, error) {
			runsMu.Lock()
			runs = append(runs, job.Attempt)
			runsMu.Unlock()
			return "done", nil
		},
	}, jobwire.WithLease(lease), (&olderBroker{}).option(),
		jobwire.WithDialOptions(grpc.WithChainUnaryInterceptor(interceptor)))
	id := mustEnqueue(t, c, q, "j", nil, jobwire.WithMaxAttempts(3))
	waitFor(t, 15*time.Second, "the outcome", func() bool { return len(rw.out.forJob(id)) >= 1 })
	j := waitState(t, c, q, id, jobwire.StateCompleted, 5*time.Second)
	time.Sleep(300 * time.Millisecond) // nothing more comes

	if got, want := kinds(rw, id), []string{"ack_ok 1"}; !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
	runsMu.Lock()
	if !slices.Equal(runs, []int{1}) {
		t.Errorf("handler ran for attempts %v, want [1] (no delivery again)", runs)
	}
	runsMu.Unlock()
	if j.GetAttempts() != 1 || string(j.GetResult()) != `"done"` {
		t.Errorf("job: %d attempts, result %q; want 1, \"done\"", j.GetAttempts(), j.GetResult())
	}
	mu.Lock()
	defer mu.Unlock()
	if span := lastAck.Sub(firstAck); calls < 2 || span < outage {
		t.Errorf("%d AckBatch calls over %s, want the Ack retried for at least %s", calls, span, outage)
	}
}
