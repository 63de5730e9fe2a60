// A queue's default job timeout (AdminService CreateQueue / UpdateQueue
// default_job_timeout_ms): the timeout of a job enqueued without one, ahead
// of the broker's --default_job_timeout_ms; set, changed to "no limit" and
// removed; seen by another replica within about a second; every partition
// of a partitioned queue; gone with DeleteQueue; bad values refused with
// nothing changed.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr int64_t kBrokerDefault = 60000;

class QueueTimeoutTest : public BrokerTest {
 protected:
  QueueTimeoutTest() : BrokerTest({absl::StrCat("--default_job_timeout_ms=", kBrokerDefault)}) {}

  void SetUp() override {
    BrokerTest::SetUp();
    admin_ = v1::AdminService::NewStub(broker_->channel());
  }

  grpc::Status Create(const std::string& queue, int partitions, std::optional<int64_t> timeout) {
    v1::CreateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    if (timeout) request.set_default_job_timeout_ms(*timeout);
    v1::CreateQueueResponse response;
    grpc::ClientContext context;
    return admin_->CreateQueue(&context, request, &response);
  }
  grpc::Status Update(const std::string& queue, int partitions, std::optional<int64_t> timeout) {
    v1::UpdateQueueRequest request;
    request.set_queue(queue);
    request.set_partitions(partitions);
    if (timeout) request.set_default_job_timeout_ms(*timeout);
    v1::UpdateQueueResponse response;
    grpc::ClientContext context;
    return admin_->UpdateQueue(&context, request, &response);
  }
  v1::QueueStats Stats(const std::string& queue) { return MustGetQueueStats(*admin_, queue); }
  // Enqueues a job (with `timeout_ms`, 0 for none) through `stub`; returns
  // the timeout it was stored with.
  int64_t StoredTimeout(v1::BrokerService::Stub& stub, const std::string& queue,
                        int64_t timeout_ms = 0) {
    v1::EnqueueRequest request = MakeJob(queue);
    request.set_timeout_ms(timeout_ms);
    v1::EnqueueResponse response;
    grpc::Status status = Enqueue(stub, request, &response);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    v1::Job job;
    status = GetJob(stub, queue, response.job_id(), &job);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    return job.timeout_ms();
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(QueueTimeoutTest, TheQueueDefaultComesBetweenTheJobsAndTheBrokers) {
  EXPECT_EQ(StoredTimeout(*stub_, "plain"), kBrokerDefault);
  EXPECT_FALSE(Stats("plain").has_default_job_timeout_ms());

  ASSERT_TRUE(Create("q", 1, 5000).ok());
  EXPECT_EQ(Stats("q").default_job_timeout_ms(), 5000);
  EXPECT_EQ(StoredTimeout(*stub_, "q"), 5000);
  EXPECT_EQ(StoredTimeout(*stub_, "q", 7000), 7000);  // the job's own wins

  // 0: no limit, even though the broker's default has one.
  ASSERT_TRUE(Update("q", 0, 0).ok());
  EXPECT_TRUE(Stats("q").has_default_job_timeout_ms());
  EXPECT_EQ(Stats("q").default_job_timeout_ms(), 0);
  EXPECT_EQ(StoredTimeout(*stub_, "q"), 0);

  // -1: removed, the broker's default applies again.
  ASSERT_TRUE(Update("q", 0, -1).ok());
  EXPECT_FALSE(Stats("q").has_default_job_timeout_ms());
  EXPECT_EQ(StoredTimeout(*stub_, "q"), kBrokerDefault);

  // Changing the partitions only leaves the timeout.
  ASSERT_TRUE(Update("q", 0, 9000).ok());
  ASSERT_TRUE(Update("q", 2, std::nullopt).ok());
  EXPECT_EQ(Stats("q").default_job_timeout_ms(), 9000);
  EXPECT_EQ(Stats("q").partitions(), 2);
}

TEST_F(QueueTimeoutTest, AnotherReplicaAppliesAChangeWithinAboutASecond) {
  std::unique_ptr<BrokerProcess> replica = AnotherBroker(
      {absl::StrCat("--default_job_timeout_ms=", kBrokerDefault)});
  JW_ASSERT_OK(replica->Start());
  auto replica_stub = replica->NewStub();
  ASSERT_TRUE(Create("shared", 1, 4000).ok());
  EXPECT_EQ(StoredTimeout(*replica_stub, "shared"), 4000);  // first read: from Redis

  ASSERT_TRUE(Update("shared", 0, 3000).ok());
  const absl::Time changed = absl::Now();
  int64_t seen = 0;
  while ((seen = StoredTimeout(*replica_stub, "shared")) != 3000 &&
         absl::Now() < changed + absl::Seconds(5)) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(seen, 3000);
  EXPECT_LT(absl::Now() - changed, absl::Seconds(3));
}

TEST_F(QueueTimeoutTest, EveryPartitionTakesItAndDeleteQueueRemovesIt) {
  ASSERT_TRUE(Create("parts", 3, 4000).ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(StoredTimeout(*stub_, "parts"), 4000) << i;

  v1::DeleteQueueRequest request;
  request.set_queue("parts");
  request.set_force(true);
  v1::DeleteQueueResponse response;
  grpc::ClientContext context;
  grpc::Status status = admin_->DeleteQueue(&context, request, &response);
  ASSERT_TRUE(status.ok()) << StatusText(status);
  EXPECT_EQ(StoredTimeout(*stub_, "parts"), kBrokerDefault);
  EXPECT_FALSE(Stats("parts").has_default_job_timeout_ms());
}

TEST_F(QueueTimeoutTest, BadValuesAreRefusedAndChangeNothing) {
  ASSERT_TRUE(Create("q", 1, 5000).ok());
  struct Case {
    std::string what;
    grpc::Status status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"create, negative", Create("other", 1, -1),
       "default_job_timeout_ms: must be in 0..604800000 (0: no limit), got -1"},
      {"create, too long", Create("other", 1, 604800001),
       "default_job_timeout_ms: must be in 0..604800000 (0: no limit), got 604800001"},
      {"update, below -1", Update("q", 0, -2),
       "default_job_timeout_ms: must be -1 (remove) or 0..604800000 (0: no limit), got -2"},
      {"update, too long", Update("q", 0, 604800001),
       "default_job_timeout_ms: must be -1 (remove) or 0..604800000 (0: no limit), got "
       "604800001"},
      {"update, nothing", Update("q", 0, std::nullopt),
       "partitions, default_job_timeout_ms, rate_limit, max_active, max_active_per_key or "
       "key_rate_limit must be given"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << c.what << ": " << StatusText(c.status);
    EXPECT_TRUE(absl::StrContains(c.status.error_message(), c.message))
        << c.what << ": " << c.status.error_message();
  }
  // A refused shrink changes the timeout neither.
  ASSERT_TRUE(Update("q", 3, std::nullopt).ok());
  EXPECT_EQ(Update("q", 2, 1000).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Stats("q").default_job_timeout_ms(), 5000);
  EXPECT_EQ(StoredTimeout(*stub_, "q"), 5000);
}

}  // namespace
}  // namespace jobwire::testing
