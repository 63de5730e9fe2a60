package jobwire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	jobwire "github.com/jobwire/jobwire/client/go"
	"github.com/jobwire/jobwire/client/go/internal/testbroker"
	"github.com/jobwire/jobwire/client/go/jobwirepb"
)

func TestEnqueueGetJobRoundTripWithOptions(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()

	// Raw bytes pass through unchanged; options are stored.
	raw := []byte{0x00, 0xff, 'h', 'i', 0x80}
	id := mustEnqueue(t, c, q, "bytes", raw,
		jobwire.WithPriority(7), jobwire.WithMaxAttempts(5),
		jobwire.WithBackoffBase(250*time.Millisecond), jobwire.WithBackoffMax(4*time.Second))
	j, err := c.GetJob(ctx, q, id)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if j.GetId() != id || j.GetQueue() != q || j.GetType() != "bytes" {
		t.Errorf("GetJob identity = %s/%s/%s", j.GetId(), j.GetQueue(), j.GetType())
	}
	if !bytes.Equal(j.GetPayload(), raw) {
		t.Errorf("payload = %x, want %x", j.GetPayload(), raw)
	}
	if j.GetState() != jobwire.StatePending || j.GetPriority() != 7 || j.GetMaxAttempts() != 5 ||
		j.GetAttempts() != 0 || j.GetBackoffBaseMs() != 250 || j.GetBackoffMaxMs() != 4000 {
		t.Errorf("job = %v", j)
	}

	// A JSON value is encoded as JSON.
	id = mustEnqueue(t, c, q, "json", map[string]any{"a": 1, "b": "x"})
	j, err = c.GetJob(ctx, q, id)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if string(j.GetPayload()) != `{"a":1,"b":"x"}` {
		t.Errorf("JSON payload = %q", j.GetPayload())
	}
	if j.GetMaxAttempts() != 3 || j.GetPriority() != 0 {
		t.Errorf("defaults: max_attempts %d priority %d, want 3 and 0", j.GetMaxAttempts(), j.GetPriority())
	}

	// Delay: PENDING, due in the future.
	before := time.Now().UnixMilli()
	id = mustEnqueue(t, c, q, "delayed", nil, jobwire.WithDelay(time.Minute))
	j, err = c.GetJob(ctx, q, id)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if j.GetState() != jobwire.StatePending || j.GetAvailableAtMs() < before+55_000 {
		t.Errorf("delayed job state %v available_at %d (enqueued at %d)", j.GetState(), j.GetAvailableAtMs(), before)
	}

	// RunAt: absolute time.
	at := time.Now().Add(2 * time.Hour)
	id = mustEnqueue(t, c, q, "at", nil, jobwire.WithRunAt(at))
	j, err = c.GetJob(ctx, q, id)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if j.GetAvailableAtMs() != at.UnixMilli() {
		t.Errorf("run_at job available_at %d, want %d", j.GetAvailableAtMs(), at.UnixMilli())
	}

	// Idempotency key: the second enqueue is a duplicate with the same id.
	first, err := c.Enqueue(ctx, q, "idem", "one", jobwire.WithIdempotencyKey("key-1"))
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	second, err := c.Enqueue(ctx, q, "idem", "two", jobwire.WithIdempotencyKey("key-1"))
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if first.Duplicate || !second.Duplicate || first.JobID != second.JobID {
		t.Errorf("idempotency: first %+v second %+v", first, second)
	}
	j, err = c.GetJob(ctx, q, first.JobID)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if string(j.GetPayload()) != `"one"` || j.GetIdempotencyKey() != "key-1" {
		t.Errorf("idempotent job payload %q key %q", j.GetPayload(), j.GetIdempotencyKey())
	}
	byKey, err := c.GetJobByIdempotencyKey(ctx, q, "key-1")
	if err != nil || byKey.GetId() != first.JobID {
		t.Errorf("GetJobByIdempotencyKey: %v, %v; want job %s", byKey, err, first.JobID)
	}
	if _, err := c.GetJobByIdempotencyKey(ctx, q, "key-2"); status.Code(err) != codes.NotFound {
		t.Errorf("GetJobByIdempotencyKey of an unknown key: %v, want NotFound", err)
	}

	// Concurrency key: travels with the job.
	keyed, err := c.Enqueue(ctx, q, "keyed", nil, jobwire.WithConcurrencyKey("customer-7"))
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if j, err = c.GetJob(ctx, q, keyed.JobID); err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if j.GetConcurrencyKey() != "customer-7" {
		t.Errorf("concurrency key %q, want customer-7", j.GetConcurrencyKey())
	}

	// Unknown id: NOT_FOUND.
	_, err = c.GetJob(ctx, q, "no-such-job")
	if je := asError(t, err); je.Code != codes.NotFound {
		t.Errorf("GetJob unknown id: %v", err)
	}
}

func TestEnqueueBatchPerJobError(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()

	res, err := c.EnqueueBatch(ctx, q, []jobwire.BatchJob{
		{Type: "a", Payload: map[string]int{"n": 1}},
		{Type: "b", Payload: []byte("x"), Options: []jobwire.EnqueueOption{jobwire.WithPriority(5000)}},
		{Type: "c", Payload: []byte("z"), Options: []jobwire.EnqueueOption{jobwire.WithMaxAttempts(9)}},
	})
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	if len(res) != 3 {
		t.Fatalf("got %d results, want 3", len(res))
	}
	if res[0].Err != nil || res[0].JobID == "" || res[2].Err != nil || res[2].JobID == "" {
		t.Fatalf("results 0 and 2 should be stored: %+v", res)
	}
	je := asError(t, res[1].Err)
	if je.Code != codes.InvalidArgument || !strings.Contains(je.Message, "priority") || res[1].JobID != "" {
		t.Errorf("result 1 = %+v (%v)", res[1], je)
	}
	j, err := c.GetJob(ctx, q, res[0].JobID)
	if err != nil || j.GetType() != "a" || string(j.GetPayload()) != `{"n":1}` {
		t.Errorf("job 0: %v %v", j, err)
	}
	j, err = c.GetJob(ctx, q, res[2].JobID)
	if err != nil || j.GetType() != "c" || j.GetMaxAttempts() != 9 {
		t.Errorf("job 2: %v %v", j, err)
	}

	// An empty batch is a call-level error.
	_, err = c.EnqueueBatch(ctx, q, nil)
	if je := asError(t, err); je.Code != codes.InvalidArgument {
		t.Errorf("empty batch: %v", err)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	ctx := context.Background()

	id := mustEnqueue(t, c, q, "later", nil, jobwire.WithDelay(time.Hour))
	requested, err := c.Cancel(ctx, q, id)
	if err != nil || requested {
		t.Fatalf("Cancel of a PENDING job = %v, %v; want false (DEAD at once), nil", requested, err)
	}
	j, err := c.GetJob(ctx, q, id)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	if j.GetState() != jobwire.StateDead || j.GetError() != "cancelled" {
		t.Errorf("cancelled job state %v error %q", j.GetState(), j.GetError())
	}
	// The cancel is in the error history, as run 0 (the job never ran).
	if errs := j.GetErrors(); len(errs) != 1 || errs[0].GetAttempt() != 0 || errs[0].GetError() != "cancelled" ||
		errs[0].GetAtMs() < j.GetCreatedAtMs() || errs[0].GetAtMs() > j.GetFinishedAtMs() {
		t.Errorf("cancelled job's error history %v, want one entry: run 0, cancelled, between creation and finish", errs)
	}
	if requested, err := c.Cancel(ctx, q, id); requested || asError(t, err).Code != codes.FailedPrecondition {
		t.Errorf("second Cancel = %v, %v; want false, FAILED_PRECONDITION", requested, err)
	}
	if requested, err := c.Cancel(ctx, q, "no-such-job"); requested || asError(t, err).Code != codes.NotFound {
		t.Errorf("Cancel unknown = %v, %v; want false, NOT_FOUND", requested, err)
	}
}

func TestInvalidArgumentMessageUnchanged(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)

	_, err := c.Enqueue(context.Background(), q, "t", []byte("p"), jobwire.WithPriority(5000))
	je := asError(t, err)
	if je.Code != codes.InvalidArgument || status.Code(err) != codes.InvalidArgument {
		t.Fatalf("code %v / status.Code %v, want INVALID_ARGUMENT", je.Code, status.Code(err))
	}
	if !strings.Contains(je.Message, "priority") {
		t.Errorf("message %q does not name priority", je.Message)
	}
	// The same request on the raw stub gives exactly the same message.
	_, rawErr := c.Stub().Enqueue(context.Background(), &jobwirepb.EnqueueRequest{
		Queue: q, Type: "t", Payload: []byte("p"), Priority: 5000,
	})
	if got := status.Convert(rawErr).Message(); got != je.Message {
		t.Errorf("message changed: client %q, broker %q", je.Message, got)
	}
	if st, ok := status.FromError(err); !ok || st.Message() != je.Message {
		t.Errorf("status.FromError: %v %v", st, ok)
	}
	if !strings.Contains(err.Error(), "INVALID_ARGUMENT") || !strings.Contains(err.Error(), je.Message) {
		t.Errorf("Error() = %q", err.Error())
	}

	// A bad queue name too.
	_, err = c.Enqueue(context.Background(), "bad queue!", "t", nil)
	if je := asError(t, err); je.Code != codes.InvalidArgument || !strings.Contains(je.Message, "queue") {
		t.Errorf("bad queue: %v", err)
	}
}

func TestUnreachableBrokerFailsWithinDeadline(t *testing.T) {
	t.Parallel()
	// Nothing listens on this port: UNAVAILABLE, at once.
	port, err := testbroker.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, net.JoinHostPort("127.0.0.1", itoa(port)), jobwire.WithTimeout(time.Second))
	start := time.Now()
	_, err = c.Enqueue(context.Background(), "q", "t", nil)
	elapsed := time.Since(start)
	je := asError(t, err)
	if je.Code != codes.Unavailable && je.Code != codes.DeadlineExceeded {
		t.Errorf("closed port: code %v", je.Code)
	}
	if elapsed > 3*time.Second {
		t.Errorf("closed port: took %s with a 1 s deadline", elapsed)
	}

	// A peer that accepts TCP but never speaks gRPC: the deadline ends the
	// call.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	c2 := newClient(t, l.Addr().String(), jobwire.WithTimeout(time.Second))
	start = time.Now()
	_, err = c2.GetJob(context.Background(), "q", "id")
	elapsed = time.Since(start)
	je = asError(t, err)
	if je.Code != codes.Unavailable && je.Code != codes.DeadlineExceeded {
		t.Errorf("silent peer: code %v", je.Code)
	}
	if elapsed < 500*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("silent peer: took %s with a 1 s deadline", elapsed)
	}

	// A deadline on the context wins over the client's default.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = c2.GetJob(ctx, "q", "id")
	if je := asError(t, err); je.Code != codes.DeadlineExceeded && je.Code != codes.Unavailable {
		t.Errorf("ctx deadline: %v", err)
	}
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("ctx deadline 300 ms: took %s", d)
	}
}

func TestEncodePayload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, ""},
		{[]byte("raw"), "raw"},
		{json.RawMessage(`{"x":1}`), `{"x":1}`},
		{"s", `"s"`},
		{42, "42"},
		{struct {
			N int `json:"n"`
		}{3}, `{"n":3}`},
	} {
		got, err := jobwire.EncodePayload(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("EncodePayload(%#v) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := jobwire.EncodePayload(make(chan int)); err == nil {
		t.Errorf("EncodePayload(chan) did not fail")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
