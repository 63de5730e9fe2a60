package jobwire_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

// traceHeaders are the headers of the tests: a W3C trace context and a tenant.
func traceHeaders() map[string]string {
	return map[string]string{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tenant":      "acme",
	}
}

// manyHeaders is n valid headers h00, h01, ...
func manyHeaders(n int) map[string]string {
	h := make(map[string]string, n)
	for i := range n {
		h[fmt.Sprintf("h%02d", i)] = "v"
	}
	return h
}

// queueCounts is every count of the queue's stats, for "nothing stored".
func queueCounts(t *testing.T, admin jobwirepb.AdminServiceClient, q string) string {
	t.Helper()
	resp, err := admin.GetQueueStats(context.Background(), &jobwirepb.GetQueueStatsRequest{Queue: q})
	if err != nil {
		t.Fatalf("GetQueueStats(%s): %v", q, err)
	}
	s := resp.GetStats()
	return fmt.Sprintf("due=%d scheduled=%d active=%d completed=%d dead=%d",
		s.GetPendingDue(), s.GetPendingScheduled(), s.GetActive(), s.GetCompleted(), s.GetDead())
}

// Headers given at Enqueue reach the handler exactly, and GetJob shows them;
// a job without headers has none.
func TestHeadersReachHandlerAndGetJob(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()

	var mu sync.Mutex
	seen := map[string]map[string]string{}     // job id -> job.Headers
	seenInfo := map[string]map[string]string{} // job id -> job.Info.Headers
	startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"t": func(ctx context.Context, job *jobwire.Job) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			seen[job.ID] = maps.Clone(job.Headers)
			seenInfo[job.ID] = maps.Clone(job.Info.GetHeaders())
			return nil, nil
		},
	})

	want := traceHeaders()
	id := mustEnqueue(t, c, q, "t", nil, jobwire.WithHeaders(want))
	plain := mustEnqueue(t, c, q, "t", nil)
	for _, jid := range []string{id, plain} {
		waitState(t, c, q, jid, jobwire.StateCompleted, 10*time.Second)
	}

	mu.Lock()
	got, gotInfo, gotPlain := seen[id], seenInfo[id], seen[plain]
	_, ranPlain := seen[plain]
	mu.Unlock()
	if !maps.Equal(got, want) {
		t.Errorf("handler saw job.Headers %v, want %v", got, want)
	}
	if !maps.Equal(gotInfo, want) {
		t.Errorf("handler saw job.Info.Headers %v, want %v", gotInfo, want)
	}
	if !ranPlain || len(gotPlain) != 0 {
		t.Errorf("job without headers: ran %v, handler saw job.Headers %v, want none", ranPlain, gotPlain)
	}

	j, err := c.GetJob(ctx, q, id)
	if err != nil || !maps.Equal(j.GetHeaders(), want) {
		t.Errorf("GetJob(%s): headers %v, err %v; want %v", id, j.GetHeaders(), err, want)
	}
	j, err = c.GetJob(ctx, q, plain)
	if err != nil || len(j.GetHeaders()) != 0 {
		t.Errorf("GetJob(%s) of the job without headers: headers %v, err %v; want none", plain, j.GetHeaders(), err)
	}
}

// EnqueueBatch stores each entry's own headers (WithHeaders given twice
// merges, the later value winning), 64 headers included.
func TestHeadersEnqueueBatch(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()
	later := jobwire.WithDelay(time.Hour)

	merged := map[string]string{"tenant": "globex", "region": "eu-west-1", "traceparent": traceHeaders()["traceparent"]}
	entries := []struct {
		opts []jobwire.EnqueueOption
		want map[string]string
	}{
		{[]jobwire.EnqueueOption{later, jobwire.WithHeaders(traceHeaders())}, traceHeaders()},
		{[]jobwire.EnqueueOption{later}, nil},
		{[]jobwire.EnqueueOption{later,
			jobwire.WithHeaders(map[string]string{"tenant": "acme", "region": "eu-west-1"}),
			jobwire.WithHeaders(map[string]string{"tenant": "globex", "traceparent": traceHeaders()["traceparent"]}),
		}, merged},
		{[]jobwire.EnqueueOption{later, jobwire.WithHeaders(manyHeaders(64))}, manyHeaders(64)},
	}
	batch := make([]jobwire.BatchJob, len(entries))
	for i, e := range entries {
		batch[i] = jobwire.BatchJob{Type: "t", Payload: i, Options: e.opts}
	}
	res, err := c.EnqueueBatch(ctx, q, batch)
	if err != nil || len(res) != len(entries) {
		t.Fatalf("EnqueueBatch: %+v, %v", res, err)
	}
	for i, e := range entries {
		if res[i].Err != nil || res[i].JobID == "" {
			t.Errorf("entry %d: %+v", i, res[i])
			continue
		}
		j, err := c.GetJob(ctx, q, res[i].JobID)
		if err != nil || !maps.Equal(j.GetHeaders(), e.want) {
			t.Errorf("entry %d: GetJob headers %v (%d), err %v; want %v", i, j.GetHeaders(), len(j.GetHeaders()), err, e.want)
		}
	}
}

// Headers beyond the broker's limits are refused INVALID_ARGUMENT /
// INVALID_FIELD naming "headers", and nothing is stored; in a batch only the
// bad entries are refused.
func TestHeadersInvalidAreRefused(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	admin := adminClient(t)
	q := queueName(t)
	ctx := context.Background()

	badKey := map[string]string{"tenant": "acme", "Bad Key": "x"}
	cases := []struct {
		name    string
		headers map[string]string
	}{
		{"key \"Bad Key\"", badKey},
		{"65 headers", manyHeaders(65)},
	}
	for _, tc := range cases {
		_, err := c.Enqueue(ctx, q, "t", nil, jobwire.WithHeaders(tc.headers), jobwire.WithIdempotencyKey("k-"+tc.name))
		if err == nil {
			t.Errorf("Enqueue with %s: accepted, want INVALID_ARGUMENT", tc.name)
			continue
		}
		je := asError(t, err)
		if je.Code != codes.InvalidArgument || !errors.Is(err, jobwire.ErrInvalidField) || je.Field != "headers" {
			t.Errorf("Enqueue with %s: %v (reason %q, field %q), want INVALID_ARGUMENT INVALID_FIELD naming headers", tc.name, err, je.Reason, je.Field)
		}
		t.Logf("%s: %v", tc.name, err)
	}
	if got, want := queueCounts(t, admin, q), "due=0 scheduled=0 active=0 completed=0 dead=0"; got != want {
		t.Errorf("after the refused enqueues: %s, want %s", got, want)
	}
	// The idempotency keys were not taken either.
	for _, tc := range cases {
		res, err := c.Enqueue(ctx, q, "t", nil, jobwire.WithIdempotencyKey("k-"+tc.name), jobwire.WithDelay(time.Hour))
		if err != nil || res.Duplicate {
			t.Errorf("Enqueue with the key of the refused %s: %+v, %v; want a new job", tc.name, res, err)
		}
	}

	bq := queueName(t)
	res, err := c.EnqueueBatch(ctx, bq, []jobwire.BatchJob{
		{Type: "t", Options: []jobwire.EnqueueOption{jobwire.WithDelay(time.Hour), jobwire.WithHeaders(traceHeaders())}},
		{Type: "t", Options: []jobwire.EnqueueOption{jobwire.WithDelay(time.Hour), jobwire.WithHeaders(badKey)}},
		{Type: "t", Options: []jobwire.EnqueueOption{jobwire.WithDelay(time.Hour), jobwire.WithHeaders(manyHeaders(65))}},
	})
	if err != nil || len(res) != 3 {
		t.Fatalf("EnqueueBatch: %+v, %v", res, err)
	}
	if res[0].Err != nil || res[0].JobID == "" {
		t.Errorf("entry 0 (valid headers): %+v", res[0])
	}
	for i := 1; i < 3; i++ {
		if res[i].Err == nil {
			t.Errorf("entry %d (%s): accepted (%+v), want INVALID_ARGUMENT", i, cases[i-1].name, res[i])
			continue
		}
		je := asError(t, res[i].Err)
		if je.Code != codes.InvalidArgument || !errors.Is(je, jobwire.ErrInvalidField) || !strings.Contains(je.Message, fmt.Sprintf("jobs[%d].headers", i)) || res[i].JobID != "" {
			t.Errorf("entry %d (%s): %v (reason %q), job %q; want INVALID_ARGUMENT INVALID_FIELD naming jobs[%d].headers, no job",
				i, cases[i-1].name, je, je.Reason, res[i].JobID, i)
		}
		t.Logf("batch entry %d: %v", i, je)
	}
	if got, want := queueCounts(t, admin, bq), "due=0 scheduled=1 active=0 completed=0 dead=0"; got != want {
		t.Errorf("after the batch: %s, want %s (the valid entry alone)", got, want)
	}
}
