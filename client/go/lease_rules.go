package jobwire

import "time"

// The lease rules every Worker follows (docs/clients.md, Worker).

// leaseLength is the lease length of a delivery: grantedMs
// (ClaimedJob.lease_ms, the lease the broker granted) when the broker sent
// it. A broker older than that field sends 0: then askedMs (the Claim's
// lease_ms, WithLease), else (the worker asked for the broker default)
// defaultLeaseMs. No clock is read: the Redis clock and the local one need
// not agree.
func leaseLength(grantedMs, askedMs int64) time.Duration {
	ms := grantedMs
	if ms <= 0 {
		ms = askedMs
	}
	if ms <= 0 {
		ms = defaultLeaseMs
	}
	return time.Duration(ms) * time.Millisecond
}

// finalLead is how long before the estimated lease end the next-to-last
// Ack / Fail attempt is sent, so that it reaches the broker while the lease
// still holds; the last attempt is sent at the end.
const finalLead = 100 * time.Millisecond

// retryWait is the wait before the next Ack / Fail attempt after one
// answered UNAVAILABLE / DEADLINE_EXCEEDED, or CANCELLED the client did not
// cause (retryable): wait (the jittered backoff), clipped so that an attempt
// is made finalLead before the lease end and a last one at the end. left is
// the time until the estimated lease end; ok is false when the lease has
// ended (no attempt is left: the outcome is unknown).
func retryWait(wait, left time.Duration) (d time.Duration, ok bool) {
	if left <= 0 {
		return 0, false
	}
	if left > finalLead && wait >= left-finalLead {
		return left - finalLead, true
	}
	return min(wait, left), true
}

// leaseEndedAgo tells whether the lease of a delivery has ended, and how long
// ago: when the local wall clock is at or past leaseExpiresAtMs (epoch ms on
// the Redis clock, so this assumes the worker's and Redis's clocks agree to
// well within a lease, e.g. NTP), or when localDeadline (the worker's own
// estimate: receipt time plus the lease length) has passed.
func leaseEndedAgo(now time.Time, leaseExpiresAtMs int64, localDeadline time.Time) (time.Duration, bool) {
	ago := now.Sub(localDeadline)
	if leaseExpiresAtMs > 0 {
		ago = max(ago, now.Sub(time.UnixMilli(leaseExpiresAtMs)))
	}
	return ago, ago >= 0
}
