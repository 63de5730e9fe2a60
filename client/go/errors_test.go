package jobwire

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
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
