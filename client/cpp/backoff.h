// Backoff: the exponential backoff with full jitter of a Worker's retries
// (docs/clients.md, Worker): the reconnect of the Claim stream (100 ms to
// 5 s) and the Ack / Fail retries (100 ms to 2 s). The n-th wait since the
// last Reset is uniform in [0, min(initial * 2^(n-1), max)].
//
//   Backoff backoff(absl::Milliseconds(100), absl::Seconds(5));
//   while (!Connect()) absl::SleepFor(backoff.Next());
#ifndef JOBWIRE_CLIENT_CPP_BACKOFF_H_
#define JOBWIRE_CLIENT_CPP_BACKOFF_H_

#include <functional>

#include "absl/time/time.h"

namespace jobwire::client {

// A uniformly random duration in [0, limit] (microsecond steps): "full
// jitter". ZeroDuration when `limit` is not positive. Thread-safe.
absl::Duration FullJitter(absl::Duration limit);

// Thread safety: none; one Backoff per retry loop.
class Backoff {
 public:
  // Draws a wait in [0, limit]; FullJitter unless a test injects another.
  using Jitter = std::function<absl::Duration(absl::Duration limit)>;

  // REQUIRES: ZeroDuration() < initial <= max.
  Backoff(absl::Duration initial, absl::Duration max, Jitter jitter = FullJitter);

  // The wait before the next attempt: jitter(limit()). Then limit() doubles,
  // up to max.
  absl::Duration Next();
  // The bound of the next wait: initial, doubled by each Next, at most max.
  absl::Duration limit() const { return limit_; }
  // Makes the next wait bounded by initial again (e.g. once a stream has
  // delivered).
  void Reset() { limit_ = initial_; }

 private:
  const absl::Duration initial_;
  const absl::Duration max_;
  const Jitter jitter_;
  absl::Duration limit_;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_BACKOFF_H_
