package jobwire_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	jobwire "github.com/jobwire/jobwire/client/go"
)

// How a handler's error becomes a Fail (docs/clients.md, Worker): its text is
// cut to 64 KiB at a character boundary, and RetryAfter sets retry_after_ms
// (with KeepAttempt, keep_attempt too: the run uses no attempt).

func TestFailErrorTextCutTo64KiBAtACharacterBoundary(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		// The payload is the error message.
		"fail": func(ctx context.Context, job *jobwire.Job) (any, error) {
			return nil, errors.New(string(job.Payload))
		},
	}, jobwire.WithConcurrency(2))
	for _, tc := range []struct {
		name    string
		message string
		wantLen int // of the stored text "error: <message>" cut
	}{
		// 7 + 2k bytes: 65536 would split an "é"; the cut keeps 65535.
		{"two-byte characters", strings.Repeat("é", 100*1024/2), 65535},
		// 7 + 3k bytes: 21843 "€" end exactly at 65536, which is kept.
		{"three-byte characters", strings.Repeat("€", 100*1024/3), 65536},
		// 7 + 2 + 4k bytes: the last whole emoji ends at 65536 - 3.
		{"four-byte characters", "xy" + strings.Repeat("😀", 100*1024/4), 65533},
	} {
		text := "error: " + tc.message
		want := text[:tc.wantLen]
		for n := tc.wantLen + 1; n <= 64*1024; n++ {
			if utf8.ValidString(text[:n]) {
				t.Fatalf("%s: bad test: %d bytes is a longer whole-character prefix", tc.name, n)
			}
		}
		if !utf8.ValidString(want) {
			t.Fatalf("%s: bad test: the %d-byte prefix is not whole characters", tc.name, tc.wantLen)
		}
		id := mustEnqueue(t, c, q, "fail", []byte(tc.message), jobwire.WithMaxAttempts(1))
		j := waitState(t, c, q, id, jobwire.StateDead, 10*time.Second)
		if got := j.GetError(); got != want {
			t.Errorf("%s: stored error of %d bytes (valid UTF-8 %t), want the %d-byte prefix",
				tc.name, len(got), utf8.ValidString(got), len(want))
		}
		waitFor(t, 5*time.Second, "fail outcome", func() bool { return len(rw.out.forJob(id)) == 1 })
		if o := rw.out.forJob(id)[0]; o.Kind != jobwire.OutcomeFailOK || o.FailOutcome != "DEAD" || o.ErrorText != want {
			t.Errorf("%s: outcome %s %s with a %d-byte text, want fail_ok DEAD with the %d-byte prefix",
				tc.name, o.Kind, o.FailOutcome, len(o.ErrorText), len(want))
		}
	}
}

// busyError is a handler error type of its own (its name is in the text).
type busyError struct{ what string }

func (e *busyError) Error() string { return e.what + " is busy" }

func TestRetryAfterSchedulesTheNextAttempt(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	var mu sync.Mutex
	failedAt := map[string]int64{} // job id -> when the handler returned the error (epoch ms)
	startedAt := map[string][]int64{}
	handler := func(err func() error) jobwire.Handler {
		return func(ctx context.Context, job *jobwire.Job) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			startedAt[job.ID] = append(startedAt[job.ID], time.Now().UnixMilli())
			if job.Attempt > 1 {
				return "done", nil
			}
			failedAt[job.ID] = time.Now().UnixMilli()
			return nil, err()
		}
	}
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"soon": handler(func() error {
			// 1500.3 ms: rounded up to 1501.
			return jobwire.RetryAfter(errors.New("busy"), 1500*time.Millisecond+300*time.Microsecond)
		}),
		"wrapped": handler(func() error {
			return fmt.Errorf("wrapped: %w", jobwire.RetryAfter(&busyError{"db"}, 10*time.Minute))
		}),
		"month": handler(func() error {
			return jobwire.RetryAfter(&busyError{"api"}, 30*24*time.Hour) // clamped to 7 days
		}),
		"dead_outer": handler(func() error {
			return jobwire.NonRetryable(jobwire.RetryAfter(&busyError{"x"}, time.Second))
		}),
		"dead_inner": handler(func() error {
			return jobwire.RetryAfter(jobwire.NonRetryable(&busyError{"y"}), time.Second)
		}),
	}, jobwire.WithConcurrency(4))
	// With a one-hour backoff, a retry due sooner came from retry_after_ms.
	backoff := []jobwire.EnqueueOption{jobwire.WithMaxAttempts(2), jobwire.WithBackoffBase(time.Hour), jobwire.WithBackoffMax(time.Hour)}
	for _, tc := range []struct {
		typ      string
		delayMs  int64
		wantText string
	}{
		{"soon", 1501, "error: busy"},
		{"wrapped", 600000, "error: wrapped: db is busy"},
		{"month", 604800000, "jobwire_test.busyError: api is busy"},
	} {
		id := mustEnqueue(t, c, q, tc.typ, nil, backoff...)
		waitFor(t, 10*time.Second, tc.typ+" fail outcome", func() bool { return len(rw.out.forJob(id)) >= 1 })
		o := rw.out.forJob(id)[0]
		mu.Lock()
		failed := failedAt[id]
		mu.Unlock()
		// Due retry_after_ms after the Fail reached the broker (a few ms after
		// the handler returned).
		if o.Kind != jobwire.OutcomeFailOK || o.FailOutcome != "RETRY_SCHEDULED" || o.ErrorText != tc.wantText ||
			o.NextAttemptAtMs < failed+tc.delayMs-5 || o.NextAttemptAtMs > failed+tc.delayMs+1000 {
			t.Errorf("%s: outcome %s %s text %q due %+d ms after the failure, want fail_ok RETRY_SCHEDULED %q due %+d ms",
				tc.typ, o.Kind, o.FailOutcome, o.ErrorText, o.NextAttemptAtMs-failed, tc.wantText, tc.delayMs)
		}
		j, err := c.GetJob(context.Background(), q, id)
		if tc.typ == "soon" {
			// Attempt 2 of 2 runs once due, and completes: the retry did
			// not use up the attempts early.
			j = waitState(t, c, q, id, jobwire.StateCompleted, 10*time.Second)
			mu.Lock()
			starts := startedAt[id]
			mu.Unlock()
			if j.GetAttempts() != 2 || len(starts) != 2 || starts[1] < o.NextAttemptAtMs-5 {
				t.Errorf("soon: attempts %d, handler started at %v, retry due at %d", j.GetAttempts(), starts, o.NextAttemptAtMs)
			}
			continue
		}
		if err != nil || j.GetState() != jobwire.StatePending || j.GetAttempts() != 1 ||
			j.GetAvailableAtMs() != o.NextAttemptAtMs || j.GetError() != tc.wantText {
			t.Errorf("%s: job %v (err %v), want PENDING, attempts 1, due at %d", tc.typ, j, err, o.NextAttemptAtMs)
		}
	}
	// NonRetryable wins over RetryAfter, in either order: DEAD at once.
	for _, typ := range []string{"dead_outer", "dead_inner"} {
		id := mustEnqueue(t, c, q, typ, nil, jobwire.WithMaxAttempts(5))
		j := waitState(t, c, q, id, jobwire.StateDead, 10*time.Second)
		want := "jobwire_test.busyError: " + map[string]string{"dead_outer": "x", "dead_inner": "y"}[typ] + " is busy"
		if j.GetAttempts() != 1 || j.GetError() != want {
			t.Errorf("%s: attempts %d error %q, want 1 and %q", typ, j.GetAttempts(), j.GetError(), want)
		}
	}
}

// A run turned away with KeepAttempt uses no attempt: a job of max attempts 2
// turned away three times (which would be DEAD without keep_attempt) runs a
// fourth time as attempt 1 and completes with attempts 1.
func TestKeepAttemptRunsTurnedAwayUseNoAttempt(t *testing.T) {
	t.Parallel()
	c := newClient(t, brokerAddr)
	q := queueName(t)
	var mu sync.Mutex
	var runs []int
	rw := startWorker(t, brokerAddr, []string{q}, map[string]jobwire.Handler{
		"limited": func(ctx context.Context, job *jobwire.Job) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, job.Attempt)
			if len(runs) <= 3 {
				return nil, jobwire.RetryAfter(errors.New("rate limited downstream"), 50*time.Millisecond, jobwire.KeepAttempt())
			}
			return "done", nil
		},
	})
	id := mustEnqueue(t, c, q, "limited", nil, jobwire.WithMaxAttempts(2))
	j := waitState(t, c, q, id, jobwire.StateCompleted, 15*time.Second)
	if j.GetAttempts() != 1 || j.GetMaxAttempts() != 2 || string(j.GetResult()) != `"done"` {
		t.Errorf("job: attempts %d of %d, result %q; want 1 of 2, \"done\"", j.GetAttempts(), j.GetMaxAttempts(), j.GetResult())
	}
	mu.Lock()
	if fmt.Sprint(runs) != "[1 1 1 1]" {
		t.Errorf("the handler ran as attempts %v, want [1 1 1 1]", runs)
	}
	mu.Unlock()
	waitFor(t, 5*time.Second, "4 outcomes", func() bool { return len(rw.out.forJob(id)) == 4 })
	for i, o := range rw.out.forJob(id) {
		var ra *jobwire.RetryAfterError
		switch {
		case i < 3 && (o.Kind != jobwire.OutcomeFailOK || o.FailOutcome != "RETRY_SCHEDULED" ||
			o.Job.Attempt != 1 || o.ErrorText != "error: rate limited downstream" ||
			!errors.As(o.HandlerErr, &ra) || !ra.KeepAttempt):
			t.Errorf("outcome %d: %s %s attempt %d %q, want fail_ok RETRY_SCHEDULED attempt 1 with KeepAttempt", i, o.Kind, o.FailOutcome, o.Job.Attempt, o.ErrorText)
		case i == 3 && (o.Kind != jobwire.OutcomeAckOK || o.Job.Attempt != 1):
			t.Errorf("outcome 3: %s attempt %d, want ack_ok attempt 1", o.Kind, o.Job.Attempt)
		}
	}
}
