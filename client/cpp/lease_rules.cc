#include "client/cpp/lease_rules.h"

#include <algorithm>

namespace jobwire::client {
namespace {

// The next-to-last Ack / Fail attempt goes out this long before the
// estimated lease end, so that it reaches the broker while the lease holds;
// the last one goes out at the end.
constexpr absl::Duration kFinalLead = absl::Milliseconds(100);

}  // namespace

absl::Duration LeaseLength(const v1::ClaimedJob& claimed, int64_t requested_lease_ms) {
  if (claimed.lease_ms() > 0) return absl::Milliseconds(claimed.lease_ms());
  if (requested_lease_ms > 0) return absl::Milliseconds(requested_lease_ms);
  return absl::Milliseconds(kBrokerDefaultLeaseMs);
}

int64_t RenewLeaseMs(const v1::ClaimedJob& claimed, int64_t requested_lease_ms) {
  return claimed.lease_ms() > 0 ? claimed.lease_ms() : requested_lease_ms;
}

std::optional<absl::Duration> RetryWait(absl::Duration wait, absl::Duration left) {
  if (left <= absl::ZeroDuration()) return std::nullopt;
  if (left > kFinalLead && wait >= left - kFinalLead) return left - kFinalLead;
  return std::min(wait, left);
}

std::optional<absl::Duration> LeaseEndedAgo(absl::Time now, int64_t expires_at_ms,
                                            absl::Time local_expiry) {
  absl::Duration ago = now - local_expiry;
  if (expires_at_ms > 0) ago = std::max(ago, now - absl::FromUnixMillis(expires_at_ms));
  if (ago < absl::ZeroDuration()) return std::nullopt;
  return ago;
}

}  // namespace jobwire::client
