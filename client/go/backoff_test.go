package jobwire

import (
	"testing"
	"time"
)

// The Claim stream's reopen backoff (docs/clients.md, Worker): 100 ms
// doubling to 5 s with full jitter (uniform in [0, d]), back to the start once
// a stream delivers (reset).

func TestReconnectBackoffIsFullJitterUpToTheDoubledCap(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		n     int // attempts since the last reset
		limit time.Duration
	}{
		{0, 100 * ms}, {1, 200 * ms}, {2, 400 * ms}, {5, 3200 * ms}, {6, 5000 * ms}, {7, 5000 * ms}, {60, 5000 * ms},
	} {
		lo, hi := c.limit+1, time.Duration(-1)
		for i := 0; i < 2000; i++ {
			bo := reconnectBackoff()
			bo.n = c.n
			d := bo.next()
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < 0 || hi > c.limit {
			t.Errorf("attempt %d: waits %v..%v, want within [0, %v]", c.n, lo, hi, c.limit)
		}
		// Full jitter, not half-to-full ([d/2, d]): about a quarter of the
		// draws fall below d/4.
		if lo >= c.limit/4 || hi <= c.limit*3/4 {
			t.Errorf("attempt %d: 2000 waits span only %v..%v of [0, %v]", c.n, lo, hi, c.limit)
		}
	}
}

func TestReconnectBackoffResets(t *testing.T) {
	bo := reconnectBackoff()
	for i := 0; i < 10; i++ {
		bo.next()
	}
	bo.reset()
	for i := 0; i < 100; i++ {
		b := bo // the first wait after a reset, drawn again
		if d := b.next(); d > 100*time.Millisecond {
			t.Fatalf("first wait after reset %v, want at most 100ms", d)
		}
	}
}
