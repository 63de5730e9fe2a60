package jobwire_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
)

// The Worker's two lease-end rules (docs/clients.md, Worker): an Ack
// answered UNAVAILABLE is sent again until the lease has ended (ack_unknown
// when still unanswered then), and a delivery whose lease ended before its
// handler could start is dropped (expired_dropped) and delivered again.

// lateClaims pauses the reader of a Claim stream (as SIGSTOP or a long GC
// would) before it hands over a message carrying a first attempt of a
// "late" job: until 300 ms after that lease ended.
func lateClaims(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &lateStream{ClientStream: s}, nil
}

type lateStream struct{ grpc.ClientStream }

func (s *lateStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if jobs, ok := streamJobs(m); ok && err == nil {
		for _, cj := range jobs {
			if cj.GetJob().GetType() == "late" && cj.GetJob().GetAttempts() == 1 {
				time.Sleep(time.Until(time.UnixMilli(cj.GetLeaseExpiresAtMs()).Add(300 * time.Millisecond)))
			}
		}
	}
	return err
}

// kinds lists "<kind> <attempt>" of the outcomes of job id.
func kinds(rw *runningWorker, id string) []string {
	var out []string
	for _, o := range rw.out.forJob(id) {
		out = append(out, fmt.Sprintf("%s %d", o.Kind, o.Job.Attempt))
	}
	return out
}

func TestDeliveryWhoseLeaseEndedIsDroppedAndDeliveredAgain(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	var mu sync.Mutex
	var runs []int
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"late": func(ctx context.Context, job *jobwire.Job) (any, error) {
			mu.Lock()
			runs = append(runs, job.Attempt)
			mu.Unlock()
			return job.Attempt, nil
		},
	}, jobwire.WithLease(2*time.Second), jobwire.WithDialOptions(grpc.WithStreamInterceptor(lateClaims)))
	id := mustEnqueue(t, c, q, "late", nil, jobwire.WithMaxAttempts(5))
	waitFor(t, 20*time.Second, "two outcomes", func() bool { return len(rw.out.forJob(id)) >= 2 })
	j := waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // nothing more comes
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(runs, []int{2}) {
		t.Errorf("handler ran for attempts %v, want [2]", runs)
	}
	if got, want := kinds(rw, id), []string{"expired_dropped 1", "ack_ok 2"}; !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
	if n := rw.w.Stats().ExpiredDeliveriesDropped; n != 1 {
		t.Errorf("Stats().ExpiredDeliveriesDropped = %d, want 1", n)
	}
	if j.GetAttempts() != 2 || string(j.GetResult()) != "2" {
		t.Errorf("job attempts %d result %q", j.GetAttempts(), j.GetResult())
	}
}

// ackAcrossOutage runs one job whose handler returns just after its broker
// was killed, and restarts the broker backBeforeEnd before the lease ends
// (negative: after). It returns the job id, the worker, the lease end and
// when the first outcome was reported.
func ackAcrossOutage(t *testing.T, backBeforeEnd time.Duration) (string, *runningWorker, time.Time, func() time.Time) {
	b, err := testbroker.StartBroker(tmpDir, redisProc.Port, 0, brokerFlags...)
	if err != nil {
		t.Fatal(err)
	}
	port := b.Port
	t.Cleanup(func() { b.Stop(5 * time.Second) })
	producer := newClient(t, brokerAddr) // the suite's broker, same Redis
	q := queueName(t)
	started := make(chan struct{}, 1)
	killed := make(chan struct{})
	leaseEnd := make(chan time.Time, 1)
	// Reconnects within 0.2 s of the broker listening again (the gRPC
	// default backs off for seconds after a few failed connects).
	fast := grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1, Jitter: 0.2, MaxDelay: 200 * time.Millisecond},
		MinConnectTimeout: time.Second,
	})
	rw := startWorker(t, b.Addr(), []string{q}, map[string]jobwire.Handler{
		"t": func(ctx context.Context, job *jobwire.Job) (any, error) {
			if job.Attempt == 1 {
				started <- struct{}{}
				<-killed
				// No renewal got through since the claim: the lease ends
				// here (Redis clock; the worker's estimate is a few ms later).
				leaseEnd <- time.UnixMilli(job.LeaseExpiresAtMs)
			}
			return job.Attempt, nil
		},
	}, jobwire.WithLease(4*time.Second), jobwire.WithTimeout(2*time.Second), jobwire.WithDialOptions(fast))
	id := mustEnqueue(t, producer, q, "t", nil, jobwire.WithMaxAttempts(5))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("job never started")
	}
	b.Kill()
	close(killed)
	end := <-leaseEnd
	time.Sleep(time.Until(end.Add(-backBeforeEnd)))
	b, err = testbroker.StartBroker(tmpDir, redisProc.Port, port, brokerFlags...)
	if err != nil {
		t.Fatalf("restart broker on port %d: %v", port, err)
	}
	waitState(t, producer, q, id, jobwire.StateCompleted, 20*time.Second)
	return id, rw, end, rw.out.first
}

func TestAckIsSentAgainUntilTheLeaseEnds(t *testing.T) {
	t.Parallel()
	// The broker listens again 0.8 s before the lease ends: later than the
	// old rule ("stop when the next backoff would pass the lease end") may
	// give up, in time for the attempts kept up to the lease end.
	id, rw, _, _ := ackAcrossOutage(t, 800*time.Millisecond)
	waitFor(t, 10*time.Second, "the outcome", func() bool { return len(rw.out.forJob(id)) >= 1 })
	if got, want := kinds(rw, id), []string{"ack_ok 1"}; !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}

func TestAckUnansweredWhenTheLeaseEndsIsUnknown(t *testing.T) {
	t.Parallel()
	id, rw, end, reportedAt := ackAcrossOutage(t, -time.Second)
	waitFor(t, 10*time.Second, "two outcomes", func() bool { return len(rw.out.forJob(id)) >= 2 })
	if got, want := kinds(rw, id), []string{"ack_unknown 1", "ack_ok 2"}; !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
	if o := rw.out.forJob(id)[0]; o.Code != codes.Unavailable && o.Code != codes.DeadlineExceeded {
		t.Errorf("first outcome code %v, want UNAVAILABLE or DEADLINE_EXCEEDED", o.Code)
	}
	// Given up only once the lease had ended (not a backoff earlier).
	if at := reportedAt(); at.Before(end.Add(-50 * time.Millisecond)) {
		t.Errorf("gave up at %s, %s before the lease ended", at.Format(time.StampMilli), end.Sub(at))
	}
}
