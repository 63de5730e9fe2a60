// Leases settled or renewed through another broker replica than the one
// whose Claim stream holds them (a worker whose channel balances its calls
// round_robin over the replicas), through real brokers on one real Redis:
// the holding broker frees the stream's slot on an Ack or a Fail sent to the
// other replica at once, not at the lease's end, and keeps the slot taken
// past the first deadline while the other replica renews the lease. Every
// check counts what the test's own stream received.
#include <memory>
#include <optional>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

class SettleElsewhereTest : public LifecycleTest {
 protected:
  void SetUp() override {
    LifecycleTest::SetUp();
    other_ = AnotherBroker();
    JW_ASSERT_OK(other_->Start());
    elsewhere_ = other_->NewStub();
  }

  std::unique_ptr<BrokerProcess> other_;
  std::unique_ptr<v1::BrokerService::Stub> elsewhere_;  // the other replica
};

// A lease far longer than the test: a slot freed only at the lease's end
// would never free in time.
constexpr int64_t kLongLeaseMs = 120000;

TEST_F(SettleElsewhereTest, AnAckThroughAnotherReplicaFreesTheSlot) {
  const std::string queue = "acked-elsewhere";
  auto reader = OpenClaim(MakeClaim({queue}, /*max_in_flight=*/1, kLongLeaseMs));
  for (int i = 0; i < 3; ++i) MustEnqueue(*stub_, MakeJob(queue));
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job) << "job " << i << ": the slot of the job before stayed taken";
    JW_ASSERT_OK(Ack(*elsewhere_, *job));
  }
  EXPECT_FALSE(reader->Next(kQuiet));
}

TEST_F(SettleElsewhereTest, AnAckBatchThroughAnotherReplicaFreesEverySlot) {
  const std::string queue = "batch-elsewhere";
  auto reader = OpenClaim(MakeClaim({queue}, /*max_in_flight=*/3, kLongLeaseMs));
  for (int i = 0; i < 6; ++i) MustEnqueue(*stub_, MakeJob(queue));
  v1::AckBatchRequest batch;
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job) << "job " << i;
    v1::AckRequest* ack = batch.add_acks();
    ack->set_queue(queue);
    ack->set_job_id(job->job().id());
    ack->set_lease_token(job->lease_token());
  }
  EXPECT_FALSE(reader->Next(kQuiet)) << "more jobs than slots";
  v1::AckBatchResponse response;
  JW_ASSERT_OK(AckBatch(*elsewhere_, batch, &response));
  for (int i = 3; i < 6; ++i) {
    ASSERT_TRUE(reader->Next(kPrompt)) << "job " << i << ": a slot stayed taken";
  }
}

TEST_F(SettleElsewhereTest, AFailThroughAnotherReplicaFreesTheSlot) {
  const std::string queue = "failed-elsewhere";
  auto reader = OpenClaim(MakeClaim({queue}, /*max_in_flight=*/1, kLongLeaseMs));
  v1::EnqueueRequest once = MakeJob(queue);
  once.set_max_attempts(1);
  const std::string first = MustEnqueue(*stub_, once);
  const std::string second = MustEnqueue(*stub_, MakeJob(queue));
  std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->job().id(), first);
  v1::FailResponse failed;
  JW_ASSERT_OK(Fail(*elsewhere_, MakeFail(*job, "boom"), &failed));
  job = reader->Next(kPrompt);
  ASSERT_TRUE(job) << "the failed job's slot stayed taken";
  EXPECT_EQ(job->job().id(), second);
}

TEST_F(SettleElsewhereTest, RenewalsThroughAnotherReplicaKeepTheSlotTaken) {
  const std::string queue = "renewed-elsewhere";
  constexpr int64_t kLeaseMs = 1500;
  auto reader = OpenClaim(MakeClaim({queue}, /*max_in_flight=*/1, kLeaseMs));
  MustEnqueue(*stub_, MakeJob(queue));
  MustEnqueue(*stub_, MakeJob(queue));
  std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
  ASSERT_TRUE(job);
  // Renewed through the other replica for three leases: the holding broker
  // must not take the first deadline as the slot's end.
  const absl::Time until = absl::Now() + absl::Milliseconds(3 * kLeaseMs);
  while (absl::Now() < until) {
    v1::ExtendLeaseRequest renew;
    renew.set_queue(queue);
    renew.set_job_id(job->job().id());
    renew.set_lease_token(job->lease_token());
    renew.set_lease_ms(kLeaseMs);
    v1::ExtendLeaseResponse renewed;
    JW_ASSERT_OK(ExtendLease(*elsewhere_, renew, &renewed));
    EXPECT_FALSE(reader->Next(absl::Milliseconds(kLeaseMs / 3)))
        << "a second job while the first one's lease was renewed: its slot was freed";
  }
  JW_ASSERT_OK(Ack(*elsewhere_, *job));
  EXPECT_TRUE(reader->Next(kPrompt)) << "the acked job's slot stayed taken";
}

}  // namespace
}  // namespace jobwire::testing
