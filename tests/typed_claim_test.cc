// Claim streams that take only some job types (ClaimRequest.types), through
// the real broker and a real Redis: each stream gets only its types, a job
// no open stream takes waits without using an attempt, a pile of other
// types never hides a stream's own, and a wake-up reaches the stream that
// can use it (also when the jobs arrive through another broker, so that
// the notification, not the hand-off, delivers them). Every check counts
// what the test's own readers received.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

v1::ClaimRequest TypedClaim(const std::string& queue, std::vector<std::string> types,
                            int max_in_flight = 1) {
  v1::ClaimRequest request = MakeClaim({queue}, max_in_flight);
  for (std::string& type : types) request.add_types(std::move(type));
  return request;
}

v1::EnqueueRequest TypedJob(const std::string& queue, const std::string& type) {
  v1::EnqueueRequest job = MakeJob(queue);
  job.set_type(type);
  return job;
}

// Takes jobs from `reader` until `count` arrived (or none for kPrompt),
// acking each; returns how many of each type it got.
std::map<std::string, int> TakeAndAck(v1::BrokerService::Stub& stub, ClaimReader& reader,
                                      int count) {
  std::map<std::string, int> types;
  for (int i = 0; i < count; ++i) {
    std::optional<v1::ClaimedJob> job = reader.Next(kPrompt);
    if (!job) break;
    ++types[job->job().type()];
    JW_EXPECT_OK(Ack(stub, *job));
  }
  return types;
}

using TypedClaimTest = LifecycleTest;

TEST_F(TypedClaimTest, EachStreamGetsOnlyItsTypes) {
  const std::string queue = "mixed";
  auto a = OpenClaim(TypedClaim(queue, {"a"}, 5));
  auto bc = OpenClaim(TypedClaim(queue, {"b", "c"}, 5));
  absl::SleepFor(absl::Milliseconds(200));  // both streams wait
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < 20; ++i) {
    *batch.add_jobs() = TypedJob(queue, "a");
    *batch.add_jobs() = TypedJob(queue, i % 2 ? "b" : "c");
  }
  v1::EnqueueBatchResponse response;
  JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &response));
  EXPECT_EQ(TakeAndAck(*stub_, *a, 20), (std::map<std::string, int>{{"a", 20}}));
  EXPECT_EQ(TakeAndAck(*stub_, *bc, 20), (std::map<std::string, int>{{"b", 10}, {"c", 10}}));
  EXPECT_FALSE(a->Next(kQuiet));
  EXPECT_FALSE(bc->Next(kQuiet));
}

TEST_F(TypedClaimTest, AJobNoStreamTakesWaitsWithoutUsingAnAttempt) {
  const std::string queue = "waits";
  auto b = OpenClaim(TypedClaim(queue, {"b"}));
  absl::SleepFor(absl::Milliseconds(200));
  const std::string orphan = MustEnqueue(*stub_, TypedJob(queue, "a"));
  EXPECT_FALSE(b->Next(kQuiet)) << "a stream of type b got a job of type a";
  MustEnqueue(*stub_, TypedJob(queue, "b"));
  std::optional<v1::ClaimedJob> mine = b->Next(kPrompt);
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->job().type(), "b");

  v1::Job waiting;
  JW_ASSERT_OK(GetJob(*stub_, queue, orphan, &waiting));
  EXPECT_EQ(waiting.state(), kPending) << StateName(waiting.state());
  EXPECT_EQ(waiting.attempts(), 0);
  auto a = OpenClaim(TypedClaim(queue, {"a"}));
  std::optional<v1::ClaimedJob> taken = a->Next(kPrompt);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->job().id(), orphan);
  EXPECT_EQ(taken->job().attempts(), 1);
}

TEST_F(TypedClaimTest, APileOfOtherTypesDoesNotHideAStreamsType) {
  const std::string queue = "pile";
  v1::EnqueueBatchRequest batch;
  for (int i = 0; i < 1000; ++i) {
    v1::EnqueueRequest job = TypedJob(queue, "bulk");
    job.set_priority(100);
    *batch.add_jobs() = job;
  }
  v1::EnqueueBatchResponse response;
  for (int round = 0; round < 3; ++round) JW_ASSERT_OK(EnqueueBatch(*stub_, batch, &response));
  const std::string urgent = MustEnqueue(*stub_, TypedJob(queue, "urgent"));
  auto reader = OpenClaim(TypedClaim(queue, {"urgent"}));
  std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->job().id(), urgent);
}

TEST_F(TypedClaimTest, AWakeUpReachesTheStreamThatTakesTheType) {
  // The jobs are stored through another broker: this broker's streams hear
  // of them by notification only, which wakes the first waiter (here of
  // another type); it must pass the wake-up on to the stream that takes it.
  const std::string queue = "relay";
  std::unique_ptr<BrokerProcess> other = AnotherBroker();
  JW_ASSERT_OK(other->Start());
  auto producer = other->NewStub();
  auto a = OpenClaim(TypedClaim(queue, {"a"}));
  absl::SleepFor(absl::Milliseconds(200));  // "a" waits first
  auto b = OpenClaim(TypedClaim(queue, {"b"}));
  absl::SleepFor(absl::Milliseconds(200));
  for (int i = 0; i < 5; ++i) {
    const std::string id = MustEnqueue(*producer, TypedJob(queue, "b"));
    std::optional<v1::ClaimedJob> job = b->Next(kPrompt);
    ASSERT_TRUE(job) << "job " << i;
    EXPECT_EQ(job->job().id(), id);
    JW_ASSERT_OK(Ack(*stub_, *job));
  }
  EXPECT_FALSE(a->Next(kQuiet));
}

TEST_F(TypedClaimTest, AStreamOfEveryTypeTakesAll) {
  const std::string queue = "all";
  for (const char* type : {"x", "y", "z"}) MustEnqueue(*stub_, TypedJob(queue, type));
  auto reader = OpenClaim(MakeClaim({queue}, 3));
  EXPECT_EQ(TakeAndAck(*stub_, *reader, 3),
            (std::map<std::string, int>{{"x", 1}, {"y", 1}, {"z", 1}}));
}

}  // namespace
}  // namespace jobwire::testing
