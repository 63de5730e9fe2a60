package jobwire

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// fakeAckBatch stands in for the AckBatch call: it records each call's job
// ids, refuses the acks whose job id starts with "bad", and blocks every call
// while gate is held.
type fakeAckBatch struct {
	gate    sync.RWMutex
	callErr error

	mu    sync.Mutex
	calls [][]string
}

func (f *fakeAckBatch) send(acks []*jobwirepb.AckRequest) ([]error, error) {
	ids := make([]string, len(acks))
	for i, a := range acks {
		ids[i] = a.GetJobId()
	}
	f.mu.Lock()
	f.calls = append(f.calls, ids)
	f.mu.Unlock()
	f.gate.RLock()
	defer f.gate.RUnlock()
	if f.callErr != nil {
		return nil, f.callErr
	}
	errs := make([]error, len(acks))
	for i, id := range ids {
		if strings.HasPrefix(id, "bad") {
			errs[i] = newError(codes.FailedPrecondition, "LEASE_STALE", "refused "+id)
		}
	}
	return errs, nil
}

func (f *fakeAckBatch) callSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	sizes := make([]int, len(f.calls))
	for i, c := range f.calls {
		sizes[i] = len(c)
	}
	return sizes
}

func (c *ackCoalescer) queuedLen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queued)
}

// ackAll acks the ids from one goroutine each and returns their errors by id.
func ackAll(c *ackCoalescer, ids []string) (wait func() map[string]error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	out := map[string]error{}
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.ack(&jobwirepb.AckRequest{JobId: id})
			mu.Lock()
			out[id] = err
			mu.Unlock()
		}()
	}
	return func() map[string]error {
		wg.Wait()
		return out
	}
}

func waitQueued(t *testing.T, c *ackCoalescer, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.queuedLen() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d acks queued, want %d", c.queuedLen(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAckCoalescerSendsAloneAckAtOnce(t *testing.T) {
	f := &fakeAckBatch{}
	c := newAckCoalescer(f.send)
	if err := c.ack(&jobwirepb.AckRequest{JobId: "a"}); err != nil {
		t.Fatalf("ack: %v", err)
	}
	err := c.ack(&jobwirepb.AckRequest{JobId: "bad-b"})
	if e, ok := err.(*Error); !ok || e.Code != codes.FailedPrecondition || e.Message != "refused bad-b" {
		t.Fatalf("refused ack: %v", err)
	}
	if got := fmt.Sprint(f.callSizes()); got != "[1 1]" {
		t.Errorf("call sizes %s, want [1 1]", got)
	}
}

func TestAckCoalescerQueuesAcksWhileACallIsInFlight(t *testing.T) {
	f := &fakeAckBatch{}
	c := newAckCoalescer(f.send)
	f.gate.Lock()
	first := ackAll(c, []string{"first"})
	for len(f.callSizes()) != 1 {
		time.Sleep(time.Millisecond)
	}
	var ids []string
	for i := range 20 {
		if i%3 == 0 {
			ids = append(ids, fmt.Sprintf("bad-%d", i))
		} else {
			ids = append(ids, fmt.Sprintf("ok-%d", i))
		}
	}
	rest := ackAll(c, ids)
	waitQueued(t, c, len(ids))
	f.gate.Unlock()
	if err := first()["first"]; err != nil {
		t.Errorf("first ack: %v", err)
	}
	for id, err := range rest() {
		if strings.HasPrefix(id, "bad") != (err != nil) {
			t.Errorf("ack %s: %v", id, err)
		}
		if err != nil && err.Error() != "jobwire: FAILED_PRECONDITION: refused "+id {
			t.Errorf("ack %s got another ack's answer: %v", id, err)
		}
	}
	if got := fmt.Sprint(f.callSizes()); got != "[1 20]" {
		t.Errorf("call sizes %s, want [1 20]", got)
	}
}

func TestAckCoalescerCallErrorGoesToEveryAck(t *testing.T) {
	f := &fakeAckBatch{callErr: newError(codes.Unavailable, "REDIS_UNAVAILABLE", "redis down")}
	c := newAckCoalescer(f.send)
	f.gate.Lock()
	first := ackAll(c, []string{"first"})
	for len(f.callSizes()) != 1 {
		time.Sleep(time.Millisecond)
	}
	rest := ackAll(c, []string{"a", "b", "c"})
	waitQueued(t, c, 3)
	f.gate.Unlock()
	errs := rest()
	errs["first"] = first()["first"]
	for id, err := range errs {
		if e, ok := err.(*Error); !ok || e.Code != codes.Unavailable {
			t.Errorf("ack %s: %v, want the call's UNAVAILABLE", id, err)
		}
	}
	if got := fmt.Sprint(f.callSizes()); got != "[1 3]" {
		t.Errorf("call sizes %s, want [1 3]", got)
	}
}

func TestAckCoalescerSplitsAtMaxAckBatch(t *testing.T) {
	f := &fakeAckBatch{}
	c := newAckCoalescer(f.send)
	f.gate.Lock()
	first := ackAll(c, []string{"first"})
	for len(f.callSizes()) != 1 {
		time.Sleep(time.Millisecond)
	}
	ids := make([]string, maxAckBatch+5)
	for i := range ids {
		ids[i] = fmt.Sprintf("ok-%d", i)
	}
	rest := ackAll(c, ids)
	waitQueued(t, c, len(ids))
	f.gate.Unlock()
	first()
	for id, err := range rest() {
		if err != nil {
			t.Errorf("ack %s: %v", id, err)
		}
	}
	sizes := f.callSizes()
	if got := fmt.Sprint(sizes); got != fmt.Sprintf("[1 %d 5]", maxAckBatch) {
		t.Errorf("%d calls of sizes %v..., want [1 %d 5]", len(sizes), sizes[:min(len(sizes), 5)], maxAckBatch)
	}
}

func TestAckCoalescerSplitsAtMaxAckBatchBytes(t *testing.T) {
	f := &fakeAckBatch{}
	c := newAckCoalescer(f.send)
	f.gate.Lock()
	first := ackAll(c, []string{"first"})
	for len(f.callSizes()) != 1 {
		time.Sleep(time.Millisecond)
	}
	// Five acks of 3 MiB results: two fit one call (6 MiB), a third does not.
	result := make([]byte, 3<<20)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.ack(&jobwirepb.AckRequest{JobId: fmt.Sprintf("ok-big-%d", i), Result: result}); err != nil {
				t.Errorf("ack %d: %v", i, err)
			}
		}()
	}
	waitQueued(t, c, 5)
	f.gate.Unlock()
	first()
	wg.Wait()
	if got := fmt.Sprint(f.callSizes()); got != "[1 2 2 1]" {
		t.Errorf("call sizes %s, want [1 2 2 1]", got)
	}
}
