package jobwire_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// claimTap counts the stream messages with jobs a client receives (Claim or
// Work: not those with only ack answers), and the jobs they carry.
type claimTap struct {
	mu       sync.Mutex
	messages int
	jobs     int
	largest  int
}

func (c *claimTap) interceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &tappedStream{ClientStream: s, tap: c}, nil
}

func (c *claimTap) counts() (messages, jobs, largest int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.messages, c.jobs, c.largest
}

type tappedStream struct {
	grpc.ClientStream
	tap *claimTap
}

func (s *tappedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if jobs, ok := streamJobs(m); ok && err == nil && len(jobs) > 0 {
		s.tap.mu.Lock()
		s.tap.messages++
		s.tap.jobs += len(jobs)
		s.tap.largest = max(s.tap.largest, len(jobs))
		s.tap.mu.Unlock()
	}
	return err
}

func enqueueN(t *testing.T, c *jobwire.Client, q, typ string, n int) []string {
	t.Helper()
	batch := make([]jobwire.BatchJob, n)
	for i := range batch {
		batch[i] = jobwire.BatchJob{Type: typ, Payload: i}
	}
	res, err := c.EnqueueBatch(context.Background(), q, batch)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	ids := make([]string, n)
	for i, r := range res {
		if r.Err != nil || r.JobID == "" {
			t.Fatalf("job %d not enqueued: %+v", i, r)
		}
		ids[i] = r.JobID
	}
	return ids
}

// Jobs already pending when a Worker starts arrive several per Claim message;
// every one of them is started (all at once: they hold all the slots), run
// exactly once and acked.
func TestWorkerRunsJobsBatchedInOneClaimMessage(t *testing.T) {
	t.Parallel()
	const n = 50
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ids := enqueueN(t, c, q, "batched", n)

	tap := &claimTap{}
	var (
		mu      sync.Mutex
		runs    = map[string]int{}
		started atomic.Int64
		running atomic.Int64
		peak    atomic.Int64
		allIn   = make(chan struct{})
	)
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"batched": func(ctx context.Context, job *jobwire.Job) (any, error) {
			mu.Lock()
			runs[job.ID]++
			mu.Unlock()
			r := running.Add(1)
			defer running.Add(-1)
			for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
			}
			if started.Add(1) == n {
				close(allIn)
			}
			// Hold the slot until every job has started, so that all n must
			// have been handed to handlers concurrently.
			select {
			case <-allIn:
			case <-time.After(10 * time.Second):
			case <-ctx.Done():
			}
			return append([]byte("r:"), job.Payload...), nil
		},
	}, jobwire.WithConcurrency(n), jobwire.WithLease(30*time.Second),
		jobwire.WithDialOptions(grpc.WithChainStreamInterceptor(tap.interceptor)))

	waitFor(t, 15*time.Second, fmt.Sprintf("all %d handlers to start together", n), func() bool { return started.Load() == n })
	for i, id := range ids {
		j := waitState(t, c, q, id, jobwire.StateCompleted, 30*time.Second)
		if want := "r:" + strconv.Itoa(i); string(j.GetResult()) != want || j.GetAttempts() != 1 {
			t.Errorf("job %d: result %q attempts %d, want %q on attempt 1", i, j.GetResult(), j.GetAttempts(), want)
		}
	}
	for i, id := range ids {
		waitFor(t, 5*time.Second, fmt.Sprintf("outcome of job %d", i), func() bool { return len(rw.out.forJob(id)) == 1 })
		if o := rw.out.forJob(id)[0]; o.Kind != jobwire.OutcomeAckOK {
			t.Errorf("job %d outcome %+v", i, o)
		}
	}
	mu.Lock()
	if len(runs) != n {
		t.Errorf("%d distinct jobs ran, want %d", len(runs), n)
	}
	for i, id := range ids {
		if runs[id] != 1 {
			t.Errorf("job %d ran %d times, want 1", i, runs[id])
		}
	}
	mu.Unlock()
	if p := peak.Load(); p != n {
		t.Errorf("at most %d handlers ran at once, want %d", p, n)
	}
	messages, jobs, largest := tap.counts()
	t.Logf("Claim delivered %d jobs in %d messages (largest %d jobs)", jobs, messages, largest)
	if jobs != n || largest < 2 || messages >= n {
		t.Errorf("Claim delivered %d jobs in %d messages (largest %d jobs), want %d jobs with several per message",
			jobs, messages, largest, n)
	}
}

// A raw Claim stream with max_in_flight 20 and 50 jobs pending: the first
// message carries several jobs, exactly 20 distinct jobs arrive (the first 20
// enqueued, in order) and no more until one is acked.
func TestRawClaimStreamBatchesUpToMaxInFlight(t *testing.T) {
	t.Parallel()
	const pending, inFlight = 50, 20
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ids := enqueueN(t, c, q, "raw", pending)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := c.Stub().Claim(ctx, &jobwirepb.ClaimRequest{
		Queues: []string{q}, MaxInFlight: inFlight, LeaseMs: 60000, WorkerId: "go-test-batched",
	})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	type message struct {
		jobs []*jobwirepb.ClaimedJob
		err  error
	}
	msgs := make(chan message, 100)
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				msgs <- message{err: err}
				return
			}
			msgs <- message{jobs: m.GetJobs()}
		}
	}()
	recv := func(within time.Duration) (message, bool) {
		select {
		case m := <-msgs:
			return m, true
		case <-time.After(within):
			return message{}, false
		}
	}

	var got []*jobwirepb.ClaimedJob
	sizes := []int{}
	for len(got) < inFlight {
		m, ok := recv(10 * time.Second)
		if !ok {
			t.Fatalf("only %d jobs after 10 s (messages %v), want %d", len(got), sizes, inFlight)
		}
		if m.err != nil {
			t.Fatalf("Claim.Recv after %d jobs: %v", len(got), m.err)
		}
		if len(m.jobs) == 0 {
			t.Errorf("empty Claim message")
		}
		sizes = append(sizes, len(m.jobs))
		got = append(got, m.jobs...)
	}
	t.Logf("Claim message sizes before any ack: %v", sizes)
	if sizes[0] < 2 {
		t.Errorf("first message carried %d job, want several (messages %v)", sizes[0], sizes)
	}
	// Nothing more may arrive while all 20 slots are taken.
	if m, ok := recv(700 * time.Millisecond); ok {
		t.Errorf("after %d jobs, got a further message before any ack: %d jobs, err %v", len(got), len(m.jobs), m.err)
		got = append(got, m.jobs...)
	}
	if len(got) != inFlight {
		t.Fatalf("got %d jobs in messages %v, want exactly %d", len(got), sizes, inFlight)
	}
	seen := map[string]bool{}
	for i, cj := range got {
		id := cj.GetJob().GetId()
		if seen[id] {
			t.Errorf("job %s delivered twice", id)
		}
		seen[id] = true
		// Same priority, due at once: claim order is enqueue order.
		if id != ids[i] {
			t.Errorf("job %d delivered is %s, want %s (enqueue order)", i, id, ids[i])
		}
		if cj.GetLeaseToken() == "" || cj.GetJob().GetQueue() != q || cj.GetJob().GetState() != jobwire.StateActive {
			t.Errorf("job %d delivered as %v", i, cj)
		}
	}

	// Acking one frees one slot: exactly one more job, the 21st, arrives.
	res, err := c.AckBatch(context.Background(), []jobwire.BatchAck{
		{Queue: q, JobID: got[0].GetJob().GetId(), LeaseToken: got[0].GetLeaseToken()},
	})
	if err != nil || res[0].Err != nil {
		t.Fatalf("AckBatch: %v / %+v", err, res)
	}
	m, ok := recv(10 * time.Second)
	if !ok || m.err != nil || len(m.jobs) != 1 || m.jobs[0].GetJob().GetId() != ids[inFlight] {
		t.Fatalf("after one ack got %v (ok %v), want job %s alone", m, ok, ids[inFlight])
	}
	if m, ok := recv(500 * time.Millisecond); ok {
		t.Errorf("after one ack, a further message: %d jobs, err %v", len(m.jobs), m.err)
	}
}
