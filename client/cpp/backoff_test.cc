// Backoff and FullJitter (no broker needed).
#include "client/cpp/backoff.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "client/cpp/claim_stream.h"
#include "client/cpp/outcome_settler.h"
#include "gtest/gtest.h"

namespace jobwire::client {
namespace {

// A jitter that returns the bound itself, so that the waits show the bounds.
absl::Duration NoJitter(absl::Duration limit) { return limit; }

// The next `n` waits of `backoff`.
std::vector<absl::Duration> Waits(Backoff& backoff, int n) {
  std::vector<absl::Duration> waits;
  for (int i = 0; i < n; ++i) waits.push_back(backoff.Next());
  return waits;
}

// The reconnect backoff (docs/clients.md): 100 ms doubling to 5 s, back to
// 100 ms after Reset (a stream delivered).
TEST(BackoffTest, TheReconnectBoundDoublesFrom100MsTo5sUntilReset) {
  Backoff backoff(ClaimStream::kInitialBackoff, ClaimStream::kMaxBackoff, NoJitter);
  const std::vector<absl::Duration> want = {
      absl::Milliseconds(100),  absl::Milliseconds(200),  absl::Milliseconds(400),
      absl::Milliseconds(800),  absl::Milliseconds(1600), absl::Milliseconds(3200),
      absl::Milliseconds(5000), absl::Milliseconds(5000)};
  EXPECT_EQ(Waits(backoff, 8), want);
  backoff.Reset();
  EXPECT_EQ(backoff.limit(), absl::Milliseconds(100));
  EXPECT_EQ(Waits(backoff, 2),
            (std::vector<absl::Duration>{absl::Milliseconds(100), absl::Milliseconds(200)}));
}

// The Ack / Fail retry backoff: 100 ms doubling to 2 s.
TEST(BackoffTest, TheAckRetryBoundDoublesFrom100MsTo2s) {
  Backoff backoff(OutcomeSettler::kInitialBackoff, OutcomeSettler::kMaxBackoff, NoJitter);
  const std::vector<absl::Duration> want = {
      absl::Milliseconds(100), absl::Milliseconds(200),  absl::Milliseconds(400),
      absl::Milliseconds(800), absl::Milliseconds(1600), absl::Milliseconds(2000),
      absl::Milliseconds(2000)};
  EXPECT_EQ(Waits(backoff, 7), want);
}

// Full jitter: uniform over the whole of [0, bound], not a band near the
// bound. 4000 draws: each within the bound, and each tenth of the range hit
// about 400 times (a bucket under 250 has a probability far below 1e-12).
TEST(BackoffTest, FullJitterIsUniformOverZeroToTheBound) {
  const absl::Duration bound = absl::Milliseconds(100);
  std::vector<int> buckets(10, 0);
  for (int i = 0; i < 4000; ++i) {
    const absl::Duration wait = FullJitter(bound);
    ASSERT_GE(wait, absl::ZeroDuration());
    ASSERT_LE(wait, bound);
    ++buckets[std::min<int64_t>(9, absl::ToInt64Microseconds(wait) / 10000)];
  }
  for (int count : buckets) EXPECT_GT(count, 250);
  EXPECT_EQ(FullJitter(absl::ZeroDuration()), absl::ZeroDuration());
  EXPECT_EQ(FullJitter(absl::Milliseconds(-5)), absl::ZeroDuration());
}

// The default jitter of a Backoff is FullJitter.
TEST(BackoffTest, NextDrawsUnderTheBound) {
  Backoff backoff(absl::Milliseconds(100), absl::Seconds(5));
  for (absl::Duration bound : {absl::Milliseconds(100), absl::Milliseconds(200),
                               absl::Milliseconds(400)}) {
    const absl::Duration wait = backoff.Next();
    EXPECT_GE(wait, absl::ZeroDuration());
    EXPECT_LE(wait, bound);
  }
}

}  // namespace
}  // namespace jobwire::client
