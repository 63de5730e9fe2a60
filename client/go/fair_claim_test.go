package jobwire_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// claimRequests records the ClaimRequests a client sends (each Claim or
// Work stream it opens).
type claimRequests struct {
	mu   sync.Mutex
	list []*jobwirepb.ClaimRequest
}

func (c *claimRequests) interceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &sentStream{ClientStream: s, rec: c}, nil
}

func (c *claimRequests) all() []*jobwirepb.ClaimRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}

type sentStream struct {
	grpc.ClientStream
	rec *claimRequests
}

func (s *sentStream) SendMsg(m any) error {
	if req := sentClaim(m); req != nil {
		s.rec.mu.Lock()
		s.rec.list = append(s.rec.list, req)
		s.rec.mu.Unlock()
	}
	return s.ClientStream.SendMsg(m)
}

// WithWeights splits the worker's slots between its queues by weight while
// both have due jobs: with heavy 3 and light 1 and both well stocked, the
// first 1,200 jobs the handlers run are about 900 of heavy and 300 of light.
// Every Claim carries the weights in the order of the queues.
func TestWorkerWeightsSplitSlotsBetweenQueues(t *testing.T) {
	t.Parallel()
	const (
		counted   = 1200
		tolerance = 60
	)
	c := newClient(t, brokerAddr)
	base := queueName(t)
	heavy, light := base+".heavy", base+".light"
	// More than either queue gives while counted jobs run (900 / 300), so
	// neither runs dry; heavy in two batches (at most 1,000 jobs a batch).
	enqueueN(t, c, heavy, "fair", 650)
	enqueueN(t, c, heavy, "fair", 650)
	enqueueN(t, c, light, "fair", 600)

	var (
		mu   sync.Mutex
		seen []string // the queue of each job handled, in handling order
		done = make(chan struct{})
	)
	sent := &claimRequests{}
	rw := startWorker(t, brokerAddr, []string{heavy, light}, map[string]jobwire.Handler{
		"fair": func(ctx context.Context, job *jobwire.Job) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < counted {
				seen = append(seen, job.Queue)
				if len(seen) == counted {
					close(done)
				}
			}
			return nil, nil
		},
	}, jobwire.WithConcurrency(10), jobwire.WithWeights(map[string]int{heavy: 3, light: 1}),
		jobwire.WithDialOptions(grpc.WithChainStreamInterceptor(sent.interceptor)))

	start := time.Now()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		t.Fatalf("only %d of %d jobs handled after 15 s", n, counted)
	}
	rw.w.Stop()

	mu.Lock()
	counts := map[string]int{}
	for _, q := range seen {
		counts[q]++
	}
	mu.Unlock()
	t.Logf("first %d jobs in %v: heavy %d, light %d", counted, time.Since(start).Round(time.Millisecond),
		counts[heavy], counts[light])
	if h := counts[heavy]; h < 900-tolerance || h > 900+tolerance {
		t.Errorf("heavy (weight 3) ran %d of the first %d jobs, want 900 ± %d", h, counted, tolerance)
	}
	if l := counts[light]; l < 300-tolerance || l > 300+tolerance {
		t.Errorf("light (weight 1) ran %d of the first %d jobs, want 300 ± %d", l, counted, tolerance)
	}
	if other := counted - counts[heavy] - counts[light]; other != 0 {
		t.Errorf("%d jobs of other queues", other)
	}

	reqs := sent.all()
	if len(reqs) == 0 {
		t.Fatal("no ClaimRequest recorded")
	}
	for i, req := range reqs {
		if !slices.Equal(req.GetQueues(), []string{heavy, light}) || !slices.Equal(req.GetWeights(), []int32{3, 1}) {
			t.Errorf("ClaimRequest %d: queues %q weights %v, want %q [3 1]", i, req.GetQueues(), req.GetWeights(),
				[]string{heavy, light})
		}
	}
}
