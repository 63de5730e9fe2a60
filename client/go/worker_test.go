package jobwire_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
)

func TestWorkerAcksWithResult(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	var seen atomic.Pointer[jobwire.Job]
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"echo": func(ctx context.Context, job *jobwire.Job) (any, error) {
			seen.Store(job)
			return append([]byte("done:"), job.Payload...), nil
		},
		"nothing": func(ctx context.Context, job *jobwire.Job) (any, error) { return nil, nil },
	}, jobwire.WithWorkerID("go-test-ack"))
	id := mustEnqueue(t, c, q, "echo", []byte("abc"), jobwire.WithMaxAttempts(4))
	j := waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)
	if string(j.GetResult()) != "done:abc" || j.GetAttempts() != 1 || j.GetWorkerId() != "go-test-ack" {
		t.Errorf("completed job result %q attempts %d worker %q", j.GetResult(), j.GetAttempts(), j.GetWorkerId())
	}
	job := seen.Load()
	if job == nil || job.ID != id || job.Queue != q || job.Type != "echo" || job.Attempt != 1 ||
		job.MaxAttempts != 4 || job.LeaseExpiresAtMs <= time.Now().Add(-time.Minute).UnixMilli() ||
		job.LeaseMs != 30000 { // the broker default
		t.Errorf("handler saw %+v", job)
	}
	waitFor(t, 5*time.Second, "ack_ok outcome", func() bool { return len(rw.out.forJob(id)) == 1 })
	if o := rw.out.forJob(id)[0]; o.Kind != jobwire.OutcomeAckOK || o.Job.Attempt != 1 {
		t.Errorf("outcome %+v", o)
	}

	id = mustEnqueue(t, c, q, "nothing", nil)
	j = waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)
	if len(j.GetResult()) != 0 {
		t.Errorf("nil result stored as %q", j.GetResult())
	}
}

type order struct {
	ID    int      `json:"id"`
	Items []string `json:"items"`
}

type receipt struct {
	ID    int    `json:"id"`
	Count int    `json:"count"`
	By    string `json:"by"`
}

func TestJSONRoundTripThroughWorker(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"order": func(ctx context.Context, job *jobwire.Job) (any, error) {
			var o order
			if err := job.JSON(&o); err != nil {
				return nil, jobwire.NonRetryable(err)
			}
			return receipt{ID: o.ID, Count: len(o.Items), By: "go"}, nil
		},
	})
	id := mustEnqueue(t, c, q, "order", order{ID: 17, Items: []string{"a", "b", "c"}})
	j := waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)
	var r receipt
	if err := json.Unmarshal(j.GetResult(), &r); err != nil {
		t.Fatalf("result %q: %v", j.GetResult(), err)
	}
	if r != (receipt{ID: 17, Count: 3, By: "go"}) {
		t.Errorf("receipt %+v", r)
	}
}

func TestHandlerErrorRetriedThenNonRetryable(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	var mu sync.Mutex
	attempts := map[string][]int{}
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"flaky": func(ctx context.Context, job *jobwire.Job) (any, error) {
			mu.Lock()
			attempts[job.ID] = append(attempts[job.ID], job.Attempt)
			mu.Unlock()
			if job.Attempt == 1 {
				return nil, errors.New("planned first-attempt failure")
			}
			return "ok", nil
		},
		"fatal": func(ctx context.Context, job *jobwire.Job) (any, error) {
			return nil, jobwire.NonRetryable(fmt.Errorf("bad input %d", 7))
		},
		"panics": func(ctx context.Context, job *jobwire.Job) (any, error) {
			panic("kaboom")
		},
	}, jobwire.WithConcurrency(2))
	id := mustEnqueue(t, c, q, "flaky", nil, jobwire.WithMaxAttempts(3),
		jobwire.WithBackoffBase(100*time.Millisecond), jobwire.WithBackoffMax(200*time.Millisecond))
	j := waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)
	if j.GetAttempts() != 2 || string(j.GetResult()) != `"ok"` {
		t.Errorf("flaky job attempts %d result %q", j.GetAttempts(), j.GetResult())
	}
	mu.Lock()
	if got := fmt.Sprint(attempts[id]); got != "[1 2]" {
		t.Errorf("handler attempts %s, want [1 2]", got)
	}
	mu.Unlock()
	waitFor(t, 5*time.Second, "two outcomes", func() bool { return len(rw.out.forJob(id)) == 2 })
	outs := rw.out.forJob(id)
	if outs[0].Kind != jobwire.OutcomeFailOK || outs[0].FailOutcome != "RETRY_SCHEDULED" || outs[0].Job.Attempt != 1 ||
		outs[0].ErrorText != "error: planned first-attempt failure" {
		t.Errorf("first outcome %+v", outs[0])
	}
	if outs[1].Kind != jobwire.OutcomeAckOK || outs[1].Job.Attempt != 2 {
		t.Errorf("second outcome %+v", outs[1])
	}

	id = mustEnqueue(t, c, q, "fatal", nil, jobwire.WithMaxAttempts(5))
	j = waitState(t, c, q, id, jobwire.StateDead, 10*time.Second)
	if j.GetAttempts() != 1 || j.GetError() != "error: bad input 7" {
		t.Errorf("non-retryable job attempts %d error %q", j.GetAttempts(), j.GetError())
	}
	waitFor(t, 5*time.Second, "fail outcome", func() bool { return len(rw.out.forJob(id)) == 1 })
	if o := rw.out.forJob(id)[0]; o.Kind != jobwire.OutcomeFailOK || o.FailOutcome != "DEAD" {
		t.Errorf("non-retryable outcome %+v", o)
	}

	id = mustEnqueue(t, c, q, "panics", nil, jobwire.WithMaxAttempts(1))
	j = waitState(t, c, q, id, jobwire.StateDead, 10*time.Second)
	if j.GetError() != "panic: kaboom" {
		t.Errorf("panicking job error %q", j.GetError())
	}
}

// The Claim names the worker's job types (ClaimRequest.types): a job of
// another type, ahead of the worker's own in the queue, is never delivered:
// it stays pending with no attempt used, and the worker's own job runs.
func TestJobOfTypeWithoutHandlerIsNeverDelivered(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	other := mustEnqueue(t, c, q, "mystery", nil)
	own := mustEnqueue(t, c, q, "known", nil)
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"known": func(ctx context.Context, job *jobwire.Job) (any, error) { return "ran", nil },
	}, jobwire.WithWorkerID("go-test-unknown"))
	j := waitState(t, c, q, own, jobwire.StateCompleted, 10*time.Second)
	if j.GetAttempts() != 1 || string(j.GetResult()) != `"ran"` {
		t.Errorf("own job: attempts %d result %q", j.GetAttempts(), j.GetResult())
	}
	waitFor(t, 5*time.Second, "ack_ok outcome", func() bool { return len(rw.out.forJob(own)) == 1 })
	j, err := c.GetJob(context.Background(), q, other)
	if err != nil || j.GetState() != jobwire.StatePending || j.GetAttempts() != 0 || j.GetError() != "" {
		t.Errorf("job of a type without handler: %v %v; want PENDING, 0 attempts, no error", j, err)
	}
	if o := rw.out.forJob(other); len(o) != 0 {
		t.Errorf("outcomes of the job of a type without handler: %v", o)
	}
}

// Run refuses at once a worker without handler (an empty ClaimRequest.types
// would claim every type) or with more job types than a Claim may name (64);
// 64 are taken.
func TestRunRefusesNoHandlerAndMoreThan64Types(t *testing.T) {
	t.Parallel()
	q := queueName(t)
	w, err := jobwire.NewWorker(brokerAddr, []string{q}, jobwire.WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	nop := func(ctx context.Context, job *jobwire.Job) (any, error) { return job.Type, nil }
	err = w.Run(context.Background())
	if want := "jobwire: Worker.Run: no handler registered"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Run without handler: %v, want %q...", err, want)
	}
	for i := range 65 {
		w.Handle(fmt.Sprintf("t%02d", i), nop)
	}
	err = w.Run(context.Background())
	if want := "jobwire: Worker.Run: 65 job types have handlers; a Worker takes at most 64"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Run with 65 types: %v, want %q...", err, want)
	}
	w.Stop() // never started: returns at once

	handlers := map[string]jobwire.Handler{}
	for i := range 64 {
		handlers[fmt.Sprintf("t%02d", i)] = nop
	}
	c := newClient(t, brokerAddr)
	id := mustEnqueue(t, c, q, "t63", nil)
	startWorker(t, brokerAddr, []string{q}, handlers)
	if j := waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second); string(j.GetResult()) != `"t63"` {
		t.Errorf("job of type t63: result %q", j.GetResult())
	}
}

func TestConcurrencyRunsNHandlersAtOnce(t *testing.T) {
	t.Parallel()
	const n = 4
	c := newClient(t, brokerAddr)
	q := queueName(t)
	var running, peak atomic.Int32
	allIn := make(chan struct{})
	var once sync.Once
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"work": func(ctx context.Context, job *jobwire.Job) (any, error) {
			cur := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if cur <= p || peak.CompareAndSwap(p, cur) {
					break
				}
			}
			if cur == n {
				once.Do(func() { close(allIn) })
			}
			select {
			case <-allIn:
			case <-time.After(5 * time.Second):
			}
			time.Sleep(50 * time.Millisecond)
			return nil, nil
		},
	}, jobwire.WithConcurrency(n))
	var ids []string
	for i := 0; i < 2*n; i++ {
		ids = append(ids, mustEnqueue(t, c, q, "work", i))
	}
	for _, id := range ids {
		waitState(t, c, q, id, jobwire.StateCompleted, 15*time.Second)
	}
	select {
	case <-allIn:
	default:
		t.Errorf("never saw %d handlers at once (peak %d)", n, peak.Load())
	}
	if p := peak.Load(); p != n {
		t.Errorf("peak concurrency %d, want %d", p, n)
	}
}

func TestLeaseRenewedWhileHandlerRuns(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	var runs atomic.Int32
	var leaseMs atomic.Int64
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"slow": func(ctx context.Context, job *jobwire.Job) (any, error) {
			runs.Add(1)
			leaseMs.Store(job.LeaseMs)
			select {
			case <-time.After(2500 * time.Millisecond):
				return "slept", nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		},
	}, jobwire.WithLease(time.Second))
	id := mustEnqueue(t, c, q, "slow", nil, jobwire.WithMaxAttempts(3))
	j := waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)
	if j.GetAttempts() != 1 || runs.Load() != 1 || string(j.GetResult()) != `"slept"` {
		t.Errorf("attempts %d, handler runs %d, result %q", j.GetAttempts(), runs.Load(), j.GetResult())
	}
	if l := leaseMs.Load(); l != 1000 {
		t.Errorf("job.LeaseMs %d, want the worker's 1000", l)
	}
}

func TestWorkerSurvivesBrokerRestart(t *testing.T) {
	t.Parallel()
	// A broker of its own (same Redis), killed and restarted on its port.
	b, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0, brokerFlags...)
	if err != nil {
		t.Fatal(err)
	}
	port := b.Port
	t.Cleanup(func() { b.Stop(5 * time.Second) })

	producer := newClient(t, brokerAddr) // the suite's broker, same Redis
	q := queueName(t)
	slowStarted := make(chan struct{}, 1)
	var slowReturned atomic.Int64 // unix ms
	rw := startWorker(t, b.Addr(), []string{q}, map[string]jobwire.Handler{
		"quick": func(ctx context.Context, job *jobwire.Job) (any, error) { return "q", nil },
		"slow": func(ctx context.Context, job *jobwire.Job) (any, error) {
			slowStarted <- struct{}{}
			time.Sleep(800 * time.Millisecond)
			slowReturned.Store(time.Now().UnixMilli())
			return "s", nil
		},
	}, jobwire.WithConcurrency(2), jobwire.WithLease(6*time.Second))
	before := mustEnqueue(t, producer, q, "quick", nil)
	waitState(t, producer, q, before, jobwire.StateCompleted, 10*time.Second)

	slow := mustEnqueue(t, producer, q, "slow", nil)
	select {
	case <-slowStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("slow job never started")
	}
	b.Kill()
	// Jobs enqueued while the worker's broker is down.
	var during []string
	for i := 0; i < 3; i++ {
		during = append(during, mustEnqueue(t, producer, q, "quick", i))
	}
	// The slow handler returns while the broker is down: its Ack gets
	// UNAVAILABLE and is retried until the broker is back.
	time.Sleep(1500 * time.Millisecond)
	restartAt := time.Now().UnixMilli()
	b, err = testbroker.StartBroker(tmpDir, redisProc.Port, port, brokerFlags...)
	if err != nil {
		t.Fatalf("restart broker on port %d: %v", port, err)
	}
	for _, id := range during {
		j := waitState(t, producer, q, id, jobwire.StateCompleted, 15*time.Second)
		if j.GetAttempts() != 1 {
			t.Errorf("job %s enqueued during the outage: attempts %d", id, j.GetAttempts())
		}
	}
	after := mustEnqueue(t, producer, q, "quick", nil)
	waitState(t, producer, q, after, jobwire.StateCompleted, 10*time.Second)
	// The job running across the restart was acked through the new broker
	// process, on its first attempt.
	j := waitState(t, producer, q, slow, jobwire.StateCompleted, 15*time.Second)
	if j.GetAttempts() != 1 || string(j.GetResult()) != `"s"` {
		t.Errorf("slow job attempts %d result %q", j.GetAttempts(), j.GetResult())
	}
	if r := slowReturned.Load(); r == 0 || r >= restartAt {
		t.Errorf("slow handler returned at %d, broker restarted at %d: the Ack retry was not exercised", r, restartAt)
	}
	waitFor(t, 5*time.Second, "slow job outcome", func() bool { return len(rw.out.forJob(slow)) == 1 })
	if o := rw.out.forJob(slow)[0]; o.Kind != jobwire.OutcomeAckOK {
		t.Errorf("slow job outcome %+v", o)
	}
}

func TestLeaseLostCancelsHandlerAndFailIsRefused(t *testing.T) {
	t.Parallel()
	// The worker's broker is down longer than the lease: the suite's broker
	// (same Redis) reaps the lease; after the restart the renewal is refused.
	b, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0, brokerFlags...)
	if err != nil {
		t.Fatal(err)
	}
	port := b.Port
	t.Cleanup(func() { b.Stop(5 * time.Second) })
	c := newClient(t, brokerAddr)
	q := queueName(t)
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	rw := startWorker(t, b.Addr(), []string{q}, map[string]jobwire.Handler{
		"long": func(ctx context.Context, job *jobwire.Job) (any, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				cause <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			case <-time.After(15 * time.Second):
				cause <- nil
				return "too late", nil
			}
		},
	}, jobwire.WithLease(time.Second))
	id := mustEnqueue(t, c, q, "long", nil, jobwire.WithMaxAttempts(1))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("job never started")
	}
	b.Kill()
	j := waitState(t, c, q, id, jobwire.StateDead, 10*time.Second)
	if j.GetError() != "lease expired" {
		t.Errorf("reaped job error %q", j.GetError())
	}
	if b, err = testbroker.StartBroker(tmpDir, redisProc.Port, port, brokerFlags...); err != nil {
		t.Fatalf("restart broker: %v", err)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, jobwire.ErrLeaseLost) {
			t.Errorf("handler context cause %v, want ErrLeaseLost", err)
		}
	case <-time.After(12 * time.Second):
		t.Fatal("handler context not cancelled after the lease was lost")
	}
	waitFor(t, 10*time.Second, "fail_error outcome", func() bool { return len(rw.out.forJob(id)) == 1 })
	if o := rw.out.forJob(id)[0]; o.Kind != jobwire.OutcomeFailError || o.Code != codes.FailedPrecondition {
		t.Errorf("outcome %+v, want fail_error FAILED_PRECONDITION", o)
	}
	// The refused Fail changed nothing.
	j, err = c.GetJob(context.Background(), q, id)
	if err != nil || j.GetState() != jobwire.StateDead || j.GetError() != "lease expired" {
		t.Errorf("job after the refused Fail: %v %v", j, err)
	}
}

func TestStopLetsRunningHandlerFinish(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	started := make(chan string, 4)
	w, err := jobwire.NewWorker(brokerAddr, []string{q},
		jobwire.WithConcurrency(2), jobwire.WithGrace(10*time.Second), jobwire.WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	var acked atomic.Int32
	w.Handle("slow", func(ctx context.Context, job *jobwire.Job) (any, error) {
		started <- job.ID
		time.Sleep(1200 * time.Millisecond)
		acked.Add(1)
		return "finished", nil
	})
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(context.Background()) }()

	first := mustEnqueue(t, c, q, "slow", nil)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("job never started")
	}
	stopped := make(chan struct{})
	stopAt := time.Now()
	go func() { w.Stop(); close(stopped) }()
	time.Sleep(200 * time.Millisecond)
	// A job enqueued after Stop is not taken, though a slot is free.
	second := mustEnqueue(t, c, q, "slow", nil)

	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return")
	}
	if d := time.Since(stopAt); d < 800*time.Millisecond {
		t.Errorf("Stop returned after %s, before the handler finished", d)
	}
	select {
	case err := <-runErr:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Stop")
	}
	// The running job was acked before Stop returned.
	j, err := c.GetJob(context.Background(), q, first)
	if err != nil || j.GetState() != jobwire.StateCompleted || string(j.GetResult()) != `"finished"` {
		t.Errorf("first job after Stop: %v %v", j, err)
	}
	time.Sleep(300 * time.Millisecond)
	j, err = c.GetJob(context.Background(), q, second)
	if err != nil || j.GetState() != jobwire.StatePending || j.GetAttempts() != 0 {
		t.Errorf("job enqueued after Stop: %v %v", j, err)
	}
	if len(started) != 0 {
		t.Errorf("a handler started after Stop")
	}
}

func TestRunCtxCancelAndInvalidClaim(t *testing.T) {
	t.Parallel()
	// Cancelling Run's context stops the worker.
	w, err := jobwire.NewWorker(brokerAddr, []string{queueName(t)}, jobwire.WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	nop := func(ctx context.Context, job *jobwire.Job) (any, error) { return nil, nil }
	w.Handle("t", nop)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}

	// INVALID_ARGUMENT on Claim (a queue name with '#', which the broker
	// refuses) is fatal: Run returns it.
	w, err = jobwire.NewWorker(brokerAddr, []string{"bad#queue"}, jobwire.WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("t", nop)
	go func() { done <- w.Run(context.Background()) }()
	select {
	case err := <-done:
		if je := asError(t, err); je.Code != codes.InvalidArgument {
			t.Errorf("Run with an invalid queue name: %v", err)
		}
	case <-time.After(5 * time.Second):
		w.Stop()
		t.Fatal("Run with an invalid queue name did not return")
	}
}

// A value outside an option's limits (those of ClaimRequest in broker.proto)
// is an error of NewWorker naming the option and the limit; nothing is sent.
func TestNewWorkerRefusesBadOptions(t *testing.T) {
	t.Parallel()
	q := []string{"q"}
	ab := []string{"a", "b"}
	for _, tc := range []struct {
		name   string
		queues []string
		opts   []jobwire.WorkerOption
		want   string // "" = accepted
	}{
		{"no queue", nil, nil, "jobwire: NewWorker: 0 queues; give 1..32"},
		{"33 queues", make([]string, 33), nil, "jobwire: NewWorker: 33 queues; give 1..32"},
		{"concurrency 0", q, []jobwire.WorkerOption{jobwire.WithConcurrency(0)}, "jobwire: WithConcurrency(0): must be 1..1000"},
		{"concurrency 1001", q, []jobwire.WorkerOption{jobwire.WithConcurrency(1001)}, "jobwire: WithConcurrency(1001): must be 1..1000"},
		{"concurrency 1000", q, []jobwire.WorkerOption{jobwire.WithConcurrency(1000)}, ""},
		{"lease 10ms", q, []jobwire.WorkerOption{jobwire.WithLease(10 * time.Millisecond)},
			"jobwire: WithLease(10ms): must be 1s..12h (or 0: the broker default)"},
		{"lease 13h", q, []jobwire.WorkerOption{jobwire.WithLease(13 * time.Hour)},
			"jobwire: WithLease(13h0m0s): must be 1s..12h (or 0: the broker default)"},
		{"lease -1s", q, []jobwire.WorkerOption{jobwire.WithLease(-time.Second)}, "jobwire: WithLease(-1s): must be 1s..12h"},
		{"lease 0 and 1s..12h", q, []jobwire.WorkerOption{jobwire.WithLease(0), jobwire.WithLease(time.Second), jobwire.WithLease(12 * time.Hour)}, ""},
		{"worker id of 257 bytes", q, []jobwire.WorkerOption{jobwire.WithWorkerID(strings.Repeat("w", 257))},
			"jobwire: WithWorkerID: 257 bytes; at most 256"},
		{"grace -1s", q, []jobwire.WorkerOption{jobwire.WithGrace(-time.Second)}, "jobwire: WithGrace(-1s): must be 0 or more"},
		{"grace 0", q, []jobwire.WorkerOption{jobwire.WithGrace(0)}, ""},
		{"nil logger", q, []jobwire.WorkerOption{jobwire.WithLogger(nil)}, "jobwire: WithLogger(nil)"},
		{"last wins", q, []jobwire.WorkerOption{jobwire.WithConcurrency(0), jobwire.WithConcurrency(4)}, ""},
		{"weights: none for a queue", ab, []jobwire.WorkerOption{jobwire.WithWeights(map[string]int{"a": 3})},
			`jobwire: WithWeights: no weight for queue "b"; give one for each queue`},
		{"weights: a queue not consumed", ab, []jobwire.WorkerOption{jobwire.WithWeights(map[string]int{"a": 3, "b": 1, "c": 1})},
			`jobwire: WithWeights: queue "c" is not one of the worker's queues`},
		{"weight 0", ab, []jobwire.WorkerOption{jobwire.WithWeights(map[string]int{"a": 0, "b": 1})},
			`jobwire: WithWeights: queue "a" has weight 0; must be 1..1000`},
		{"weight 1001", ab, []jobwire.WorkerOption{jobwire.WithWeights(map[string]int{"a": 1, "b": 1001})},
			`jobwire: WithWeights: queue "b" has weight 1001; must be 1..1000`},
		{"weight -1", ab, []jobwire.WorkerOption{jobwire.WithWeights(map[string]int{"a": -1, "b": 1})},
			`jobwire: WithWeights: queue "a" has weight -1; must be 1..1000`},
		{"weights 1 and 1000", ab, []jobwire.WorkerOption{jobwire.WithWeights(map[string]int{"a": 1, "b": 1000})}, ""},
		{"weights empty", ab, []jobwire.WorkerOption{jobwire.WithWeights(map[string]int{})}, ""},
		{"weights nil, last wins", ab, []jobwire.WorkerOption{jobwire.WithWeights(map[string]int{"a": 0}), jobwire.WithWeights(nil)}, ""},
	} {
		w, err := jobwire.NewWorker("127.0.0.1:1", tc.queues, tc.opts...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: NewWorker: %v", tc.name, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: NewWorker succeeded, want an error %q", tc.name, tc.want)
		case tc.want != "" && !strings.HasPrefix(err.Error(), tc.want):
			t.Errorf("%s: error %q, want %q", tc.name, err, tc.want)
		}
		if w != nil && tc.want != "" {
			t.Errorf("%s: a worker came with the error", tc.name)
		}
	}
}

// The worker id defaults to go-<host>-<pid>; WithWorkerID sets it.
func TestNewWorkerID(t *testing.T) {
	t.Parallel()
	w, err := jobwire.NewWorker("127.0.0.1:1", []string{"q"})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("-%d", os.Getpid()); !strings.HasPrefix(w.WorkerID(), "go-") || !strings.HasSuffix(w.WorkerID(), want) {
		t.Errorf("default WorkerID() = %q, want go-<host>%s", w.WorkerID(), want)
	}
	w, err = jobwire.NewWorker("127.0.0.1:1", []string{"q"}, jobwire.WithWorkerID("billing-1"))
	if err != nil || w.WorkerID() != "billing-1" {
		t.Errorf("WithWorkerID: %v, %v", w, err)
	}
}
