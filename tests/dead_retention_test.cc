// Bounds on dead jobs (--dead_max_per_queue, --dead_retention_ms), enforced
// by the reaper's pass (at most 5 s apart): off by default, and when set the
// oldest dead jobs go first, with their idempotency keys. And queues that
// stay empty (--idle_queue_ttl_ms) leave the registry.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr absl::Duration kPass = absl::Seconds(12);  // two reaper passes and slack

// Enqueues `n` jobs (idempotency keys key-0 ..) and cancels each, oldest
// first; returns their ids.
std::vector<std::string> MakeDead(v1::BrokerService::Stub& stub, const std::string& queue, int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) {
    v1::EnqueueRequest job = MakeJob(queue, "p");
    job.set_idempotency_key(absl::StrCat("key-", i));
    ids.push_back(MustEnqueue(stub, job));
    EXPECT_TRUE(Cancel(stub, queue, ids.back()).ok());
    absl::SleepFor(absl::Milliseconds(5));  // distinct death times
  }
  return ids;
}

bool Exists(v1::BrokerService::Stub& stub, const std::string& queue, const std::string& id) {
  v1::Job job;
  return GetJob(stub, queue, id, &job).ok();
}

class DeadMaxTest : public BrokerTest {
 protected:
  DeadMaxTest() : BrokerTest({"--dead_max_per_queue=3"}) {}
};

TEST_F(DeadMaxTest, KeepsTheNewestDeadJobsPerQueue) {
  std::vector<std::string> ids = MakeDead(*stub_, "capped", 5);
  const absl::Time deadline = absl::Now() + kPass;
  while (Exists(*stub_, "capped", ids[1]) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_FALSE(Exists(*stub_, "capped", ids[0]));
  EXPECT_FALSE(Exists(*stub_, "capped", ids[1]));
  for (int i = 2; i < 5; ++i) EXPECT_TRUE(Exists(*stub_, "capped", ids[i])) << i;
  // The removed job's idempotency key is free again.
  v1::EnqueueRequest again = MakeJob("capped", "p");
  again.set_idempotency_key("key-0");
  v1::EnqueueResponse response;
  JW_ASSERT_OK(Enqueue(*stub_, again, &response));
  EXPECT_FALSE(response.duplicate());
}

class DeadRetentionTest : public BrokerTest {
 protected:
  DeadRetentionTest() : BrokerTest({"--dead_retention_ms=1000"}) {}
};

TEST_F(DeadRetentionTest, RemovesDeadJobsPastTheRetention) {
  std::vector<std::string> ids = MakeDead(*stub_, "aging", 2);
  EXPECT_TRUE(Exists(*stub_, "aging", ids[0]));  // not before the retention
  const absl::Time deadline = absl::Now() + kPass;
  while ((Exists(*stub_, "aging", ids[0]) || Exists(*stub_, "aging", ids[1])) &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_FALSE(Exists(*stub_, "aging", ids[0]));
  EXPECT_FALSE(Exists(*stub_, "aging", ids[1]));
}

// By default dead jobs stay.
TEST_F(BrokerTest, DeadJobsAreKeptByDefault) {
  std::vector<std::string> ids = MakeDead(*stub_, "kept", 2);
  absl::SleepFor(absl::Seconds(6));  // past a reaper pass
  EXPECT_TRUE(Exists(*stub_, "kept", ids[0]));
  EXPECT_TRUE(Exists(*stub_, "kept", ids[1]));
}

class IdleQueueTest : public BrokerTest {
 protected:
  IdleQueueTest()
      : BrokerTest({"--idle_queue_ttl_ms=1000", "--completed_retention_ms=500"}) {}

  bool Listed(const std::string& queue) {
    auto admin = v1::AdminService::NewStub(broker_->channel());
    grpc::ClientContext context;
    v1::ListQueuesResponse response;
    EXPECT_TRUE(admin->ListQueues(&context, v1::ListQueuesRequest(), &response).ok());
    for (const auto& q : response.queues()) {
      if (q.queue() == queue) return true;
    }
    return false;
  }
};

// A queue whose last job completed and expired leaves the registry after the
// idle time (two reaper passes: one finds it empty, a later one drops it); a
// queue that still holds a dead job stays; the next enqueue brings it back.
TEST_F(IdleQueueTest, AnEmptyQueueLeavesTheRegistryAndComesBackWithItsNextJob) {
  MustEnqueue(*stub_, MakeJob("brief", "p"));
  {
    ClaimReader reader(broker_->NewStub(), MakeClaim({"brief"}, 1));
    std::optional<v1::ClaimedJob> job = reader.Next(absl::Seconds(5));
    ASSERT_TRUE(job.has_value());
    JW_ASSERT_OK(Ack(*stub_, *job));
  }
  MakeDead(*stub_, "kept", 1);
  ASSERT_TRUE(Listed("brief"));
  const absl::Time deadline = absl::Now() + absl::Seconds(25);
  while (Listed("brief") && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(250));
  EXPECT_FALSE(Listed("brief"));
  EXPECT_TRUE(Listed("kept"));
  MustEnqueue(*stub_, MakeJob("brief", "p"));
  EXPECT_TRUE(Listed("brief"));
}

}  // namespace
}  // namespace jobwire::testing
