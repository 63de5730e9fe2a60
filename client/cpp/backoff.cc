#include "client/cpp/backoff.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>

namespace jobwire::client {

absl::Duration FullJitter(absl::Duration limit) {
  if (limit <= absl::ZeroDuration()) return absl::ZeroDuration();
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int64_t> dist(0, absl::ToInt64Microseconds(limit));
  return absl::Microseconds(dist(rng));
}

Backoff::Backoff(absl::Duration initial, absl::Duration max, Jitter jitter)
    : initial_(initial), max_(max), jitter_(std::move(jitter)), limit_(initial) {}

absl::Duration Backoff::Next() {
  const absl::Duration wait = jitter_(limit_);
  limit_ = std::min(limit_ * 2, max_);
  return wait;
}

}  // namespace jobwire::client
