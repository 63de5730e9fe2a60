package jobwire

import (
	"context"
	"math/rand/v2"
	"time"
)

// Exponential backoff with full jitter, shared by the Claim stream
// (reopening) and the Ack / Fail retries.

// backoffState is exponential backoff with full jitter.
type backoffState struct {
	base, max time.Duration
	n         int
}

// next is the wait before the next attempt: uniform in [0, d], d = base
// doubled per attempt since the last reset, at most max.
func (b *backoffState) next() time.Duration {
	d := b.base << min(b.n, 20)
	if d > b.max || d <= 0 {
		d = b.max
	}
	b.n++
	return time.Duration(rand.Int64N(int64(d) + 1))
}

func (b *backoffState) reset() { b.n = 0 }

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
