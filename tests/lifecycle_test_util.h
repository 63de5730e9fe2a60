// Shared by the lifecycle tests (lifecycle_test.cc, retry_lease_test.cc,
// redis_calls_test.cc).
//
// Timing checks have a strict lower bound (a job must never come early) and
// a generous upper bound (the machine is shared). Times on the wire come from
// the Redis clock, which is this machine's clock; 1 ms is allowed for the
// truncation to whole milliseconds.
#ifndef JOBWIRE_TESTS_LIFECYCLE_TEST_UTIL_H_
#define JOBWIRE_TESTS_LIFECYCLE_TEST_UTIL_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "tests/test_harness.h"

namespace jobwire::testing {

// Upper-bound slack for anything timed, on a shared 2-core machine.
inline constexpr int64_t kSlackMs = 300;
// How long "nothing else arrives" is watched for.
inline constexpr absl::Duration kQuiet = absl::Milliseconds(500);
// How long a job that is due now may take to arrive.
inline constexpr absl::Duration kPrompt = absl::Seconds(5);

class LifecycleTest : public BrokerTest {};

// The field a refusal names: its message's first word.
inline std::string FieldOf(const grpc::Status& status) {
  const std::string& message = status.error_message();
  return message.substr(0, message.find(':'));
}

// A queue rate limit (admin.proto RateLimit; burst 0: count).
inline v1::RateLimit Limit(int32_t count, int64_t interval_ms, int32_t burst = 0) {
  v1::RateLimit limit;
  limit.set_count(count);
  limit.set_interval_ms(interval_ms);
  limit.set_burst(burst);
  return limit;
}

// Takes jobs one at a time from `reader`, acking each, and returns their ids.
inline std::vector<std::string> ClaimAndAckInOrder(v1::BrokerService::Stub& stub,
                                                   ClaimReader& reader, int count) {
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    std::optional<v1::ClaimedJob> claimed = reader.Next(kPrompt);
    EXPECT_TRUE(claimed.has_value()) << "job " << i << " of " << count;
    if (!claimed.has_value()) break;
    ids.push_back(claimed->job().id());
    JW_EXPECT_OK(Ack(stub, *claimed));
  }
  return ids;
}

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_LIFECYCLE_TEST_UTIL_H_
