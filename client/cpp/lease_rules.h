// The lease arithmetic of a Worker (docs/clients.md, Worker: Leases), as pure
// functions of their inputs and the time, so that tests can check them with
// any clock.
#ifndef JOBWIRE_CLIENT_CPP_LEASE_RULES_H_
#define JOBWIRE_CLIENT_CPP_LEASE_RULES_H_

#include <cstdint>
#include <optional>

#include "absl/time/time.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::client {

// The broker's default lease out of the box (--default_lease_ms): the length
// assumed for a job whose Worker asked for the broker's default from a
// broker older than ClaimedJob.lease_ms.
inline constexpr int64_t kBrokerDefaultLeaseMs = 30000;

// The lease length of a job delivered with `claimed` to a Worker whose Claim
// asked for `requested_lease_ms` (ClaimRequest.lease_ms, from
// WorkerOptions::lease_ms): the lease the broker granted (claimed.lease_ms).
// From a broker older than that field (0): `requested_lease_ms`, or
// kBrokerDefaultLeaseMs when that is 0. No clock is read: the Redis clock's
// lease_expires_at_ms is never compared with the local one here.
absl::Duration LeaseLength(const v1::ClaimedJob& claimed, int64_t requested_lease_ms);

// ExtendLeaseRequest.lease_ms for a job delivered with `claimed`: the granted
// lease again; from an older broker `requested_lease_ms` (0: the broker
// default, as in the Claim).
int64_t RenewLeaseMs(const v1::ClaimedJob& claimed, int64_t requested_lease_ms);

// The wait before the next Ack / Fail attempt after one answered
// UNAVAILABLE / DEADLINE_EXCEEDED: `wait` (the jittered backoff), clipped so
// that an attempt is made kFinalLead (100 ms) before the lease end and a last
// one at the end. `left`: time until the estimated lease end. nullopt when
// the lease has ended (no attempt is left: the outcome is unknown).
std::optional<absl::Duration> RetryWait(absl::Duration wait, absl::Duration left);

// How long ago the lease of a delivery ended, or nullopt while it lasts. It
// has ended when `now` is at or past `expires_at_ms` (epoch ms on the Redis
// clock: this assumes the worker's and Redis's clocks agree to well within a
// lease, e.g. NTP), or when `local_expiry` (the worker's own estimate:
// receipt or last renewal plus the lease length) has passed.
std::optional<absl::Duration> LeaseEndedAgo(absl::Time now, int64_t expires_at_ms,
                                            absl::Time local_expiry);

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_LEASE_RULES_H_
