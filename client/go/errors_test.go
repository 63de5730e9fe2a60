package jobwire

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// RetryAfter without a broker: the rounding and clamping of retry_after_ms.
// fail_test.go shows it end to end.

func TestRetryAfterMsTable(t *testing.T) {
	base := errors.New("busy")
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		err  error
		want int64
	}{
		{"plain error: no retry_after", base, 0},
		{"whole ms", RetryAfter(base, 1500*ms), 1500},
		{"rounded up to a whole ms", RetryAfter(base, 1500*ms+time.Nanosecond), 1501},
		{"under 1 ms: 1", RetryAfter(base, time.Microsecond), 1},
		{"zero: 1", RetryAfter(base, 0), 1},
		{"negative: 1", RetryAfter(base, -time.Second), 1},
		{"exactly 7 days", RetryAfter(base, 7*24*time.Hour), 604800000},
		{"past 7 days: clamped", RetryAfter(base, 7*24*time.Hour+ms), 604800000},
		{"huge: clamped", RetryAfter(base, math.MaxInt64), 604800000},
		{"wrapped", fmt.Errorf("ctx: %w", RetryAfter(base, 2*time.Second)), 2000},
		{"non-retryable outside wins", NonRetryable(RetryAfter(base, time.Second)), 0},
		{"non-retryable inside wins", RetryAfter(NonRetryable(base), time.Second), 0},
	} {
		if got := retryAfterMs(c.err); got != c.want {
			t.Errorf("%s: retryAfterMs = %d, want %d", c.name, got, c.want)
		}
	}
	if RetryAfter(nil, time.Second) != nil {
		t.Errorf("RetryAfter(nil, d) is not nil")
	}
	var ra *RetryAfterError
	if err := fmt.Errorf("ctx: %w", RetryAfter(base, time.Second)); !errors.As(err, &ra) || ra.Delay != time.Second || ra.Err != base {
		t.Errorf("errors.As through wrapping found %+v", ra)
	}
}

// KeepAttempt without a broker: keep_attempt is sent only with a delay, and
// non-retryable wins (then neither is sent). fail_test.go shows it end to end.
func TestKeepAttemptTable(t *testing.T) {
	base := errors.New("rate limited")
	for _, c := range []struct {
		name     string
		err      error
		wantMs   int64
		wantKeep bool
	}{
		{"plain error", base, 0, false},
		{"retry after alone", RetryAfter(base, time.Second), 1000, false},
		{"keep attempt", RetryAfter(base, time.Second, KeepAttempt()), 1000, true},
		{"wrapped", fmt.Errorf("ctx: %w", RetryAfter(base, time.Second, KeepAttempt())), 1000, true},
		{"the outer RetryAfter decides", RetryAfter(RetryAfter(base, time.Hour, KeepAttempt()), time.Second), 1000, false},
		{"non-retryable outside wins", NonRetryable(RetryAfter(base, time.Second, KeepAttempt())), 0, false},
		{"non-retryable inside wins", RetryAfter(NonRetryable(base), time.Second, KeepAttempt()), 0, false},
	} {
		if ms, keep := retryAfterMs(c.err), keepAttempt(c.err); ms != c.wantMs || keep != c.wantKeep {
			t.Errorf("%s: retry_after_ms %d keep_attempt %t, want %d %t", c.name, ms, keep, c.wantMs, c.wantKeep)
		}
	}
	var ra *RetryAfterError
	if err := RetryAfter(base, time.Second, KeepAttempt()); !errors.As(err, &ra) || !ra.KeepAttempt || ra.Err != base {
		t.Errorf("errors.As found %+v", ra)
	}
	if RetryAfter(nil, time.Second, KeepAttempt()) != nil {
		t.Errorf("RetryAfter(nil, d, KeepAttempt()) is not nil")
	}
}

// toError decodes the broker's error details: the first ErrorInfo of domain
// jobwire.dev (others ignored), the BadRequest field and the RetryInfo delay.
func TestToErrorReadsTheDetails(t *testing.T) {
	st, err := status.New(codes.ResourceExhausted, "redis is out of memory").WithDetails(
		&errdetails.ErrorInfo{Reason: "FOREIGN", Domain: "example.com"},
		&errdetails.ErrorInfo{Reason: "REDIS_OUT_OF_MEMORY", Domain: "jobwire.dev"},
		&errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)},
	)
	if err != nil {
		t.Fatal(err)
	}
	e := toError(st.Err()).(*Error)
	if e.Code != codes.ResourceExhausted || e.Reason != "REDIS_OUT_OF_MEMORY" || e.Metadata != nil ||
		e.Field != "" || e.RetryDelay != 1500*time.Millisecond || !errors.Is(e, ErrRedisOutOfMemory) {
		t.Errorf("RESOURCE_EXHAUSTED: %+v", e)
	}
	if got := e.GRPCStatus(); got != st {
		t.Errorf("GRPCStatus() is not the status received")
	}

	st, err = status.New(codes.InvalidArgument, "jobs[3].priority: out of range").WithDetails(
		&errdetails.ErrorInfo{Reason: "INVALID_FIELD", Domain: "jobwire.dev", Metadata: map[string]string{"field": "jobs[3].priority"}},
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "jobs[3].priority", Description: "out of range"}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	e = toError(fmt.Errorf("call: %w", st.Err())).(*Error)
	if e.Reason != "INVALID_FIELD" || e.Field != "jobs[3].priority" || e.Metadata["field"] != "jobs[3].priority" ||
		e.RetryDelay != 0 || !errors.Is(e, ErrInvalidField) {
		t.Errorf("INVALID_ARGUMENT: %+v", e)
	}

	// No details (a client-side error): no reason, matches no sentinel.
	e = toError(status.Error(codes.Unavailable, "connection refused")).(*Error)
	if e.Reason != "" || e.Metadata != nil || e.Field != "" || e.RetryDelay != 0 || errors.Is(e, ErrRedisUnavailable) {
		t.Errorf("UNAVAILABLE without details: %+v", e)
	}
}
