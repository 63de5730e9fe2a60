package jobwire

import (
	"slices"
	"testing"
	"time"
)

// retryWait decides, after an Ack / Fail attempt answered UNAVAILABLE, how
// long to wait before the next one. These tests pin the rule without a
// broker: the cross-process tests in lease_end_test.go show it end to end,
// but whether the old rule ("give up when the next backoff would pass the
// lease end") fails them depends on the jittered backoff drawn.

func TestRetryWaitTable(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name       string
		wait, left time.Duration
		want       time.Duration
		ok         bool
	}{
		{"short backoff, lease far off", 100 * ms, 3000 * ms, 100 * ms, true},
		{"backoff past the final lead: wait for it", 1900 * ms, 2000 * ms, 1900 * ms, true},
		{"backoff past the lease end: the next-to-last attempt", 2000 * ms, 1500 * ms, 1400 * ms, true},
		{"inside the final lead: the last attempt at the end", 2000 * ms, 60 * ms, 60 * ms, true},
		{"backoff shorter than what is left of the final lead", 10 * ms, 60 * ms, 10 * ms, true},
		{"lease ended", 100 * ms, 0, 0, false},
		{"lease ended a while ago", 100 * ms, -time.Second, 0, false},
	} {
		got, ok := retryWait(c.wait, c.left)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: retryWait(%v, %v) = %v, %v; want %v, %v", c.name, c.wait, c.left, got, ok, c.want, c.ok)
		}
	}
}

// Whatever backoff is drawn, the attempts go on until the lease end: one
// finalLead before it and one at it.
func TestRetryWaitKeepsAttemptsUpToTheLeaseEnd(t *testing.T) {
	lease := 4 * time.Second
	for _, backoff := range []time.Duration{20 * time.Millisecond, 700 * time.Millisecond, 2 * time.Second, time.Minute} {
		var attempts []time.Duration // since the first attempt
		now := time.Duration(0)
		for i := 0; i < 1000; i++ {
			attempts = append(attempts, now)
			d, ok := retryWait(backoff, lease-now)
			if !ok {
				break
			}
			now += d
		}
		n := len(attempts)
		if attempts[n-1] != lease || !slices.Contains(attempts, lease-finalLead) {
			t.Errorf("backoff %v: attempts at %v; want one at %v and the last at %v",
				backoff, attempts, lease-finalLead, lease)
		}
	}
}

// The lease length of a delivery: never guessed from lease_expires_at_ms and
// the local clock.
func TestLeaseLengthTable(t *testing.T) {
	for _, c := range []struct {
		name               string
		grantedMs, askedMs int64
		want               time.Duration
	}{
		{"granted by the broker", 1500, 0, 1500 * time.Millisecond},
		{"granted wins over asked", 1500, 4000, 1500 * time.Millisecond},
		{"older broker: the lease asked for", 0, 4000, 4 * time.Second},
		{"older broker, broker default asked for: 30 s", 0, 0, 30 * time.Second},
	} {
		if got := leaseLength(c.grantedMs, c.askedMs); got != c.want {
			t.Errorf("%s: leaseLength(%d, %d) = %v, want %v", c.name, c.grantedMs, c.askedMs, got, c.want)
		}
	}
}
