// A claim whose reply is lost: claim.lua ran in Redis, then the broker's
// connection dropped before the reply arrived (a FaultProxy between the
// broker and Redis cuts the connection on exactly that reply). The jobs must
// come back when the broker reconnects, their attempt given back, and reach
// the stream as their first attempt, instead of sitting ACTIVE until their
// lease expires (and, with max_attempts 1, going DEAD unrun). The same for
// the claim that rides along an enqueue (the hand-off to a waiting stream),
// whose reply is the enqueue's.
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

constexpr int kJobs = 3;
constexpr int64_t kLeaseMs = 120000;  // never runs out during a test
// What a script reply holds only for an active job: its packed record's
// state, 'active' as cmsgpack writes it (a 6-byte string: 0xa6, the bytes).
constexpr char kActiveRecord[] = "\xa6" "active";

v1::EnqueueBatchRequest Batch() {
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < kJobs; ++i) {
    *batch.add_jobs() = MakeJob("lost", "p");
    batch.mutable_jobs(i)->set_max_attempts(1);
  }
  return batch;
}

// Reads up to kJobs jobs from `reader` for 15 s, acking each; returns their
// ids. Each must be its first attempt.
std::set<std::string> DeliveredAndAcked(v1::BrokerService::Stub& stub, ClaimReader& reader) {
  std::set<std::string> got;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(15);
       got.size() < kJobs && absl::Now() < deadline;) {
    std::optional<v1::ClaimedJob> job = reader.NextBefore(deadline);
    if (!job.has_value()) break;
    EXPECT_EQ(job->job().attempts(), 1) << job->job().id();
    got.insert(job->job().id());
    JW_EXPECT_OK(Ack(stub, *job));
  }
  return got;
}

void ExpectCompletedOnce(v1::BrokerService::Stub& stub, const std::set<std::string>& ids) {
  for (const std::string& id : ids) {
    v1::Job job;
    JW_ASSERT_OK(GetJob(stub, "lost", id, &job));
    EXPECT_EQ(job.state(), kCompleted) << id;
    EXPECT_EQ(job.attempts(), 1) << id;
  }
}

TEST(LostClaimTest, JobsOfAClaimWhoseReplyWasLostComeBackOnReconnect) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  FaultProxy proxy(redis.port());
  JW_ASSERT_OK(proxy.Start());
  BrokerProcess broker(redis.port());
  broker.set_redis_url(absl::StrCat("redis://127.0.0.1:", proxy.port()));
  JW_ASSERT_OK(broker.Start());
  auto stub = broker.NewStub();

  // The jobs are stored before any stream reads the queue, so the stream's
  // first claim.lua call claims them.
  v1::EnqueueBatchResponse response;
  JW_ASSERT_OK(EnqueueBatch(*stub, Batch(), &response));
  // Only a claim reply carries the record of an active job.
  proxy.CutOnNextReplyContaining(kActiveRecord);
  ClaimReader reader(broker.NewStub(), MakeClaim({"lost"}, kJobs, kLeaseMs));
  std::set<std::string> got = DeliveredAndAcked(*stub, reader);
  EXPECT_EQ(proxy.cuts(), 1) << "the claim reply was never cut";
  EXPECT_EQ(got.size(), static_cast<size_t>(kJobs)) << "jobs of the lost claim never delivered";
  std::set<std::string> enqueued;
  for (const auto& result : response.results()) enqueued.insert(result.job_id());
  EXPECT_EQ(got, enqueued);
  ExpectCompletedOnce(*stub, got);
}

// The stream waits, so the enqueue.lua call claims for it: its reply, which
// carries both the enqueue's ids and the claim, is cut. The producer hears
// UNAVAILABLE (its jobs may be stored: they are), and the claimed jobs come
// back on reconnect and reach the stream as their first attempt.
TEST(LostClaimTest, JobsOfAHandOffWhoseReplyWasLostComeBackOnReconnect) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  FaultProxy proxy(redis.port());
  JW_ASSERT_OK(proxy.Start());
  BrokerProcess broker(redis.port());
  broker.set_redis_url(absl::StrCat("redis://127.0.0.1:", proxy.port()));
  JW_ASSERT_OK(broker.Start());
  auto stub = broker.NewStub();

  ClaimReader reader(broker.NewStub(), MakeClaim({"lost"}, kJobs, kLeaseMs));
  absl::SleepFor(absl::Milliseconds(300));  // the stream waits on the queue
  proxy.CutOnNextReplyContaining(kActiveRecord);
  v1::EnqueueBatchResponse response;
  JW_ASSERT_OK(EnqueueBatch(*stub, Batch(), &response));
  ASSERT_EQ(response.results_size(), kJobs);
  for (const auto& result : response.results()) {
    EXPECT_EQ(result.code(), grpc::StatusCode::UNAVAILABLE) << result.message();
  }
  std::set<std::string> got = DeliveredAndAcked(*stub, reader);
  EXPECT_EQ(proxy.cuts(), 1) << "the enqueue's reply was never cut";
  EXPECT_EQ(got.size(), static_cast<size_t>(kJobs)) << "jobs of the lost hand-off never delivered";
  ExpectCompletedOnce(*stub, got);
}

}  // namespace
}  // namespace jobwire::testing
