package jobwire_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
)

// Client.Wait (WaitJob) against the real broker: a job that completes, one
// that dies, one already finished, one that times out, an unknown job, a
// cancelled context, a wait that outlives a broker restart, and one that
// outlives calls ended with a CANCELLED it did not cause.

const (
	waitJobMethod   = "/jobwire.v1.BrokerService/WaitJob"
	subscribeMethod = "/jobwire.v1.BrokerService/Subscribe"
)

// brokerCancels plays gRPC core's zombified calls (grpc/grpc#41785: a call
// that reaches a broker after its Server::Shutdown began ends with
// CANCELLED, though the client did not cancel it) on one streaming method
// of a client's channel: call i (from 0) receives pass[i] messages from the
// broker, then its next receive cancels it and ends it with
// status.Error(codes.Canceled, "CANCELLED"), as gRPC core does; calls past
// pass run as they are. calls counts the calls of the method.
type brokerCancels struct {
	method string
	pass   []int
	calls  atomic.Int64
}

func (b *brokerCancels) option() jobwire.Option {
	return jobwire.WithDialOptions(grpc.WithChainStreamInterceptor(
		func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
			streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			if method != b.method {
				return streamer(ctx, desc, cc, method, opts...)
			}
			i := int(b.calls.Add(1)) - 1
			if i >= len(b.pass) {
				return streamer(ctx, desc, cc, method, opts...)
			}
			cctx, cancel := context.WithCancel(ctx)
			s, err := streamer(cctx, desc, cc, method, opts...)
			if err != nil {
				cancel()
				return nil, err
			}
			return &cancelledStream{ClientStream: s, left: b.pass[i], cancel: cancel}, nil
		}))
}

// cancelledStream passes left messages on, then ends with CANCELLED.
type cancelledStream struct {
	grpc.ClientStream
	left   int
	cancel context.CancelFunc
}

func (s *cancelledStream) RecvMsg(m any) error {
	if s.left > 0 {
		s.left--
		return s.ClientStream.RecvMsg(m)
	}
	s.cancel()
	return status.Error(codes.Canceled, "CANCELLED")
}

// updates records what WithWaitUpdates reports.
type updates struct {
	mu   sync.Mutex
	jobs []*jobwire.JobInfo
}

func (u *updates) add(j *jobwire.JobInfo) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.jobs = append(u.jobs, j)
}

func (u *updates) states() []jobwire.JobState {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]jobwire.JobState, len(u.jobs))
	for i, j := range u.jobs {
		out[i] = j.GetState()
	}
	return out
}

func (u *updates) last() *jobwire.JobInfo {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.jobs) == 0 {
		return nil
	}
	return u.jobs[len(u.jobs)-1]
}

// waitResult is what a Wait run in the background returned.
type waitResult struct {
	job *jobwire.JobInfo
	err error
}

func waitInBackground(c *jobwire.Client, q, id string, opts ...jobwire.WaitOption) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		job, err := c.Wait(context.Background(), q, id, opts...)
		ch <- waitResult{job, err}
	}()
	return ch
}

func receive(t *testing.T, ch <-chan waitResult, timeout time.Duration) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(timeout):
		t.Fatalf("Wait did not return within %s", timeout)
		return waitResult{}
	}
}

func TestWaitReturnsTheCompletedJobWithItsResult(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	id := mustEnqueue(t, c, q, "square", map[string]int{"n": 7})
	var seen updates
	ch := waitInBackground(c, q, id, jobwire.WithWaitTimeout(20*time.Second), jobwire.WithWaitUpdates(seen.add))
	waitFor(t, 5*time.Second, "the first update", func() bool { return seen.last() != nil })
	if got := seen.states(); got[0] != jobwire.StatePending {
		t.Fatalf("first update %v, want PENDING", got)
	}
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"square": func(ctx context.Context, job *jobwire.Job) (any, error) {
			var in struct{ N int }
			if err := job.JSON(&in); err != nil {
				return nil, err
			}
			time.Sleep(300 * time.Millisecond) // ACTIVE long enough to be seen
			return map[string]int{"square": in.N * in.N}, nil
		},
	})
	r := receive(t, ch, 20*time.Second)
	if r.err != nil {
		t.Fatalf("Wait: %v", r.err)
	}
	if r.job.GetId() != id || r.job.GetState() != jobwire.StateCompleted || r.job.GetAttempts() != 1 {
		t.Fatalf("Wait returned %v", r.job)
	}
	if got := string(r.job.GetResult()); got != `{"square":49}` {
		t.Fatalf("result %q", got)
	}
	want := []jobwire.JobState{jobwire.StatePending, jobwire.StateActive, jobwire.StateCompleted}
	if got := seen.states(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("updates %v, want %v", got, want)
	}
	if seen.last() != r.job {
		t.Fatalf("the last update is not the job returned")
	}
}

func TestWaitForAJobThatDies(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"bad": func(ctx context.Context, job *jobwire.Job) (any, error) {
			return nil, jobwire.NonRetryable(fmt.Errorf("input %s is malformed", "a.csv"))
		},
	})
	id := mustEnqueue(t, c, q, "bad", nil, jobwire.WithMaxAttempts(5))
	job, err := c.Wait(context.Background(), q, id, jobwire.WithWaitTimeout(20*time.Second))
	if job != nil || !errors.Is(err, jobwire.ErrJobDead) {
		t.Fatalf("Wait = %v, %v; want ErrJobDead", job, err)
	}
	var dead *jobwire.JobDeadError
	if !errors.As(err, &dead) {
		t.Fatalf("%v (%T) is not a *JobDeadError", err, err)
	}
	if errors.Is(err, jobwire.ErrWaitTimeout) || errors.Is(err, jobwire.ErrJobNotFound) {
		t.Errorf("%v matches another sentinel", err)
	}
	if dead.Job.GetId() != id || dead.Job.GetState() != jobwire.StateDead || dead.Job.GetAttempts() != 1 {
		t.Fatalf("dead job %v", dead.Job)
	}
	if got, want := dead.Job.GetError(), "error: input a.csv is malformed"; got != want {
		t.Fatalf("error text %q, want %q", got, want)
	}
	if want := fmt.Sprintf("jobwire: job %s in queue %s is dead: error: input a.csv is malformed", id, q); err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestWaitForAJobAlreadyFinishedAnswersAtOnce(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"t": func(ctx context.Context, job *jobwire.Job) (any, error) { return []byte("done"), nil },
	})
	id := mustEnqueue(t, c, q, "t", nil)
	waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)
	later := mustEnqueue(t, c, q, "later", nil, jobwire.WithDelay(time.Minute))
	if _, err := c.Cancel(context.Background(), q, later); err != nil {
		t.Fatalf("Cancel: %v", err)
	}

	var seen updates
	start := time.Now()
	job, err := c.Wait(context.Background(), q, id, jobwire.WithWaitTimeout(10*time.Second), jobwire.WithWaitUpdates(seen.add))
	took := time.Since(start)
	if err != nil || job.GetState() != jobwire.StateCompleted || string(job.GetResult()) != "done" {
		t.Fatalf("Wait = %v, %v", job, err)
	}
	if len(seen.states()) != 1 || seen.last() != job {
		t.Fatalf("updates %v, want the one job", seen.states())
	}
	if took > time.Second {
		t.Fatalf("Wait took %s", took)
	}
	_, err = c.Wait(context.Background(), q, later) // no timeout: the answer is at once
	var dead *jobwire.JobDeadError
	if !errors.As(err, &dead) || dead.Job.GetError() != "cancelled" {
		t.Fatalf("Wait of a cancelled job: %v", err)
	}
}

func TestWaitTimesOutWithTheLastState(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	id := mustEnqueue(t, c, q, "nobody-handles-this", map[string]int{"x": 1})
	start := time.Now()
	job, err := c.Wait(context.Background(), q, id, jobwire.WithWaitTimeout(300*time.Millisecond))
	took := time.Since(start)
	if job != nil || !errors.Is(err, jobwire.ErrWaitTimeout) {
		t.Fatalf("Wait = %v, %v; want ErrWaitTimeout", job, err)
	}
	if took < 290*time.Millisecond || took > 1300*time.Millisecond {
		t.Fatalf("Wait took %s", took)
	}
	var late *jobwire.WaitTimeoutError
	if !errors.As(err, &late) {
		t.Fatalf("%v (%T) is not a *WaitTimeoutError", err, err)
	}
	if late.LastJob.GetId() != id || late.LastJob.GetState() != jobwire.StatePending {
		t.Fatalf("LastJob %v", late.LastJob)
	}
	je := asError(t, err)
	if je.Code != codes.DeadlineExceeded || je.Reason != "WAIT_TIMEOUT" || status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("error %+v: want DEADLINE_EXCEEDED from the broker, reason WAIT_TIMEOUT", je)
	}
	if errors.Is(err, jobwire.ErrJobDead) {
		t.Errorf("%v matches ErrJobDead", err)
	}
}

func TestWaitForAnUnknownJobIsNotFound(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	_, err := c.Wait(context.Background(), queueName(t), "424242424", jobwire.WithWaitTimeout(5*time.Second))
	if !errors.Is(err, jobwire.ErrJobNotFound) || asError(t, err).Code != codes.NotFound {
		t.Fatalf("Wait = %v; want NOT_FOUND / ErrJobNotFound", err)
	}
	if errors.Is(err, jobwire.ErrJobDead) || errors.Is(err, jobwire.ErrWaitTimeout) {
		t.Errorf("%v matches a wait sentinel", err)
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	id := mustEnqueue(t, c, q, "nobody-handles-this", nil)
	waitCancelledByCaller(t, c, q, id)

	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	_, err := c.Wait(dctx, q, id)
	if asError(t, err).Code != codes.DeadlineExceeded || errors.Is(err, jobwire.ErrWaitTimeout) {
		t.Fatalf("Wait past its context's deadline: %v (a context deadline is not ErrWaitTimeout)", err)
	}
}

func TestWaitOutlivesABrokerRestart(t *testing.T) {
	for _, how := range []string{"kill", "drain"} {
		t.Run(how, func(t *testing.T) {
			b, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0, brokerFlags...)
			if err != nil {
				t.Fatalf("start broker: %v", err)
			}
			t.Cleanup(func() { b.Stop(5 * time.Second) })
			c := newClient(t, b.Addr(), jobwire.WithTimeout(3*time.Second))
			q := queueName(t)
			id := mustEnqueue(t, c, q, "t", map[string]int{"n": 1})
			var seen updates
			ch := waitInBackground(c, q, id, jobwire.WithWaitTimeout(40*time.Second), jobwire.WithWaitUpdates(seen.add))
			waitFor(t, 5*time.Second, "the first update", func() bool { return seen.last() != nil })
			port := b.Port
			if how == "kill" {
				b.Kill()
			} else {
				b.Stop(10 * time.Second) // SIGTERM: the broker drains
			}
			select {
			case r := <-ch:
				t.Fatalf("Wait returned while the broker was down: %v, %v", r.job, r.err)
			case <-time.After(time.Second):
			}
			b2, err := testbroker.StartBroker(tmpDir, redisProc.Port, port, brokerFlags...)
			if err != nil {
				t.Fatalf("restart broker: %v", err)
			}
			t.Cleanup(func() { b2.Stop(5 * time.Second) })
			time.Sleep(time.Second) // the wait resumes, sees PENDING again: not reported twice
			startWorker(t, b2.Addr(), []string{q}, map[string]jobwire.Handler{
				"t": func(ctx context.Context, job *jobwire.Job) (any, error) { return job.Payload, nil },
			})
			r := receive(t, ch, 30*time.Second)
			if r.err != nil || r.job.GetState() != jobwire.StateCompleted || string(r.job.GetResult()) != `{"n":1}` {
				t.Fatalf("Wait = %v, %v", r.job, r.err)
			}
			checkPendingOnceThenCompleted(t, seen.states())
		})
	}
}

// A WaitJob call ended with a CANCELLED the client did not cause (a broker
// stopping, grpc/grpc#41785) is called again, as after UNAVAILABLE: the
// first call ends so after the job's first message, the second before any
// message; the wait goes on, reports PENDING once, and returns the job
// COMPLETED. A caller's own cancellation still ends the wait
// (TestWaitEndsWithItsContext; here too, on the same channel).
func TestWaitCallsAgainAfterACancelledItDidNotCause(t *testing.T) {
	t.Parallel()
	cancels := &brokerCancels{method: waitJobMethod, pass: []int{1, 0}}
	c := newClient(t, brokerAddr, cancels.option())
	q := queueName(t)
	id := mustEnqueue(t, c, q, "t", map[string]int{"n": 3})
	var seen updates
	ch := waitInBackground(c, q, id, jobwire.WithWaitTimeout(30*time.Second), jobwire.WithWaitUpdates(seen.add))
	waitFor(t, 10*time.Second, "a third WaitJob call (or Wait to return)", func() bool {
		return cancels.calls.Load() >= 3 || len(ch) > 0
	})
	if len(ch) > 0 {
		r := <-ch
		t.Fatalf("Wait returned after a CANCELLED it did not cause: %v, %v", r.job, r.err)
	}
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"t": func(ctx context.Context, job *jobwire.Job) (any, error) { return job.Payload, nil },
	})
	r := receive(t, ch, 20*time.Second)
	if r.err != nil || r.job.GetId() != id || r.job.GetState() != jobwire.StateCompleted || string(r.job.GetResult()) != `{"n":3}` {
		t.Fatalf("Wait = %v, %v; want the job COMPLETED", r.job, r.err)
	}
	if n := cancels.calls.Load(); n < 3 {
		t.Fatalf("%d WaitJob calls, want 3 or more", n)
	}
	checkPendingOnceThenCompleted(t, seen.states())

	// The caller's own cancellation is not taken for the broker's (a queue
	// no worker takes).
	q2 := queueName(t)
	other := mustEnqueue(t, c, q2, "t", nil)
	waitCancelledByCaller(t, c, q2, other)
}

// waitCancelledByCaller checks that a Wait for job id (which nobody runs)
// whose context the caller cancels after 300 ms returns CANCELLED, not
// ErrWaitTimeout, within 5 s.
func waitCancelledByCaller(t *testing.T, c *jobwire.Client, q, id string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Wait(ctx, q, id)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if asError(t, err).Code != codes.Canceled || errors.Is(err, jobwire.ErrWaitTimeout) {
			t.Fatalf("Wait after its context was cancelled: %v, want CANCELLED", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after its context was cancelled")
	}
}

func TestWaitErrorTypesWithErrorsIsAndAs(t *testing.T) {
	t.Parallel()
	late := fmt.Errorf("report: %w", &jobwire.WaitTimeoutError{
		LastJob: &jobwire.JobInfo{Id: "7"},
		Err:     &jobwire.Error{Code: codes.DeadlineExceeded, Message: "job 7 in queue q did not finish within 1s"},
	})
	if !errors.Is(late, jobwire.ErrWaitTimeout) || errors.Is(late, jobwire.ErrJobDead) {
		t.Errorf("a client-made timeout (no Reason) must match ErrWaitTimeout only: %v", late)
	}
	if je := asError(t, late); je.Reason != "" || status.Code(late) != codes.DeadlineExceeded {
		t.Errorf("Unwrap: %+v, code %v", je, status.Code(late))
	}
	if late.Error() != "report: jobwire: DEADLINE_EXCEEDED: job 7 in queue q did not finish within 1s" {
		t.Errorf("Error() = %q", late.Error())
	}
	dead := fmt.Errorf("report: %w", &jobwire.JobDeadError{Job: &jobwire.JobInfo{Id: "7", Queue: "q", Error: "cancelled"}})
	var je *jobwire.Error
	if !errors.Is(dead, jobwire.ErrJobDead) || errors.Is(dead, jobwire.ErrWaitTimeout) || errors.As(dead, &je) {
		t.Errorf("a JobDeadError must match ErrJobDead only, and hold no *Error: %v", dead)
	}
	if dead.Error() != "report: jobwire: job 7 in queue q is dead: cancelled" {
		t.Errorf("Error() = %q", dead.Error())
	}
}

// checkPendingOnceThenCompleted checks the states a wait reported across
// calls made again: PENDING first and only once (a later call's first
// message repeating it is not reported), COMPLETED last.
func checkPendingOnceThenCompleted(t *testing.T, states []jobwire.JobState) {
	t.Helper()
	pending := 0
	for _, s := range states {
		if s == jobwire.StatePending {
			pending++
		}
	}
	if len(states) == 0 || states[0] != jobwire.StatePending || states[len(states)-1] != jobwire.StateCompleted || pending != 1 {
		t.Fatalf("updates %v: want PENDING once, first, and COMPLETED last", states)
	}
}
