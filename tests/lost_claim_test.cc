// A claim whose reply is lost: claim.lua ran in Redis, then the broker's
// connection dropped before the reply arrived (a FaultProxy between the
// broker and Redis cuts the connection on exactly that reply). The jobs must
// come back when the broker reconnects, their attempt given back, and reach
// the waiting stream as their first attempt, instead of sitting ACTIVE until
// their lease expires (and, with max_attempts 1, going DEAD unrun).
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/fault_proxy.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

TEST(LostClaimTest, JobsOfAClaimWhoseReplyWasLostComeBackOnReconnect) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  FaultProxy proxy(redis.port());
  JW_ASSERT_OK(proxy.Start());
  BrokerProcess broker(redis.port());
  broker.set_redis_url(absl::StrCat("redis://127.0.0.1:", proxy.port()));
  JW_ASSERT_OK(broker.Start());
  auto stub = broker.NewStub();

  constexpr int kJobs = 3;
  constexpr int64_t kLeaseMs = 120000;  // never runs out during the test
  ClaimReader reader(broker.NewStub(), MakeClaim({"lost"}, kJobs, kLeaseMs));
  absl::SleepFor(absl::Milliseconds(300));  // the stream waits on the queue

  // Only a claim reply carries job hashes, hence "lease_token".
  proxy.CutOnNextReplyContaining("lease_token");
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < kJobs; ++i) {
    *batch.add_jobs() = MakeJob("lost", "p");
    batch.mutable_jobs(i)->set_max_attempts(1);
  }
  v1::EnqueueBatchResponse response;
  JW_ASSERT_OK(EnqueueBatch(*stub, batch, &response));

  std::set<std::string> got;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(15);
       got.size() < kJobs && absl::Now() < deadline;) {
    std::optional<v1::ClaimedJob> job = reader.NextBefore(deadline);
    if (!job.has_value()) break;
    EXPECT_EQ(job->job().attempts(), 1) << job->job().id();
    got.insert(job->job().id());
    JW_EXPECT_OK(Ack(*stub, *job));
  }
  EXPECT_EQ(proxy.cuts(), 1) << "the claim reply was never cut";
  EXPECT_EQ(got.size(), static_cast<size_t>(kJobs)) << "jobs of the lost claim never delivered";
  for (const auto& result : response.results()) {
    v1::Job job;
    JW_ASSERT_OK(GetJob(*stub, "lost", result.job_id(), &job));
    EXPECT_EQ(job.state(), kCompleted) << result.job_id();
    EXPECT_EQ(job.attempts(), 1) << result.job_id();
  }
}

}  // namespace
}  // namespace jobwire::testing
