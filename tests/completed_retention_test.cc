// Per-job completed retention end to end (EnqueueRequest.completed_retention_ms
// against the real broker and Redis): 0 deletes the job on Ack while a
// repeated Ack still answers OK; N keeps it N ms, counted in the stats until
// then; above --completed_retention_max_ms (or negative) is INVALID_ARGUMENT
// naming the field and the limit; unset takes --completed_retention_ms; the
// broker refuses a maximum below its default.
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr int64_t kDefaultRetentionMs = 60000;
constexpr int64_t kMaxRetentionMs = 120000;

class CompletedRetentionTest : public BrokerTest {
 protected:
  CompletedRetentionTest()
      : BrokerTest({absl::StrCat("--completed_retention_ms=", kDefaultRetentionMs),
                    absl::StrCat("--completed_retention_max_ms=", kMaxRetentionMs)}) {}

  void SetUp() override {
    BrokerTest::SetUp();
    if (HasFatalFailure()) return;
    admin_ = v1::AdminService::NewStub(broker_->channel());
  }

  // Enqueues one job of `queue` (retention unset when nullopt), claims and
  // acks it; returns the claim and sets *acked_at to just before the Ack.
  v1::ClaimedJob EnqueueClaimAck(const std::string& queue, std::optional<int64_t> retention,
                                 absl::Time* acked_at = nullptr) {
    v1::EnqueueRequest request = MakeJob(queue, "p");
    if (retention) request.set_completed_retention_ms(*retention);
    MustEnqueue(*stub_, request);
    auto reader = OpenClaim(MakeClaim({queue}, 1));
    std::optional<v1::ClaimedJob> claimed = reader->Next(kPrompt);
    EXPECT_TRUE(claimed.has_value());
    if (!claimed) return v1::ClaimedJob();
    if (acked_at != nullptr) *acked_at = absl::Now();
    JW_EXPECT_OK(Ack(*stub_, *claimed, "done"));
    return *claimed;
  }

  int64_t CompletedCount(const std::string& queue) {
    return MustGetQueueStats(*admin_, queue).completed();
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(CompletedRetentionTest, RetentionZeroDeletesOnAckAndARepeatedAckIsStillOk) {
  const std::string queue = "delete.on.ack";
  v1::ClaimedJob claimed = EnqueueClaimAck(queue, 0);
  v1::Job job;
  grpc::Status read = GetJob(*stub_, queue, claimed.job().id(), &job);
  EXPECT_EQ(read.error_code(), grpc::StatusCode::NOT_FOUND) << StatusText(read);
  EXPECT_EQ(CompletedCount(queue), 0);

  // The worker did not hear the first answer and repeats: OK, both alone
  // and in an AckBatch, and nothing comes back.
  JW_EXPECT_OK(Ack(*stub_, claimed, "done"));
  v1::AckBatchRequest batch;
  v1::AckRequest* ack = batch.add_acks();
  ack->set_queue(queue);
  ack->set_job_id(claimed.job().id());
  ack->set_lease_token(claimed.lease_token());
  v1::AckBatchResponse response;
  JW_ASSERT_OK(AckBatch(*stub_, batch, &response));
  ASSERT_EQ(response.results_size(), 1);
  EXPECT_EQ(response.results(0).code(), 0) << response.results(0).message();
  // Another token is refused, as for a job kept completed.
  grpc::Status other = Ack(*stub_, queue, claimed.job().id(), "not-the-token");
  EXPECT_EQ(other.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << StatusText(other);
  read = GetJob(*stub_, queue, claimed.job().id(), &job);
  EXPECT_EQ(read.error_code(), grpc::StatusCode::NOT_FOUND) << StatusText(read);
}

TEST_F(CompletedRetentionTest, RetentionNKeepsTheJobThatLongAndCountsItUntilThen) {
  const std::string queue = "short.retention";
  constexpr int64_t kRetentionMs = 1000;
  absl::Time acked_at;
  v1::ClaimedJob claimed = EnqueueClaimAck(queue, kRetentionMs, &acked_at);
  v1::Job job;
  grpc::Status read = GetJob(*stub_, queue, claimed.job().id(), &job);
  const bool early = absl::Now() < acked_at + absl::Milliseconds(kRetentionMs);
  const int64_t counted = CompletedCount(queue);
  if (early) {
    JW_ASSERT_OK(read);
    EXPECT_EQ(job.state(), v1::JOB_STATE_COMPLETED);
    EXPECT_EQ(job.result(), "done");
    EXPECT_EQ(counted, 1);
  }
  const absl::Time deadline = acked_at + absl::Milliseconds(kRetentionMs + 1000 + kSlackMs);
  while (absl::Now() < deadline) {
    read = GetJob(*stub_, queue, claimed.job().id(), &job);
    if (read.error_code() == grpc::StatusCode::NOT_FOUND) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(read.error_code(), grpc::StatusCode::NOT_FOUND) << StatusText(read);
  EXPECT_GE(absl::Now(), acked_at + absl::Milliseconds(kRetentionMs - 1)) << "gone too early";
  EXPECT_EQ(CompletedCount(queue), 0);
}

TEST_F(CompletedRetentionTest, UnsetTakesTheBrokerDefault) {
  const std::string queue = "default.retention";
  v1::ClaimedJob claimed = EnqueueClaimAck(queue, std::nullopt);
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, claimed.job().id(), &job));
  EXPECT_EQ(job.state(), v1::JOB_STATE_COMPLETED);
  // Deleted when its completed-index score (the expiry) passes.
  const std::string completed = absl::StrCat("jw:{", queue, "}:completed");
  auto expiry = RedisCommandFor(completed, {"ZSCORE", completed, claimed.job().id()});
  ASSERT_TRUE(expiry.ok() && !expiry->str.empty());
  EXPECT_EQ(std::stoll(expiry->str) - job.finished_at_ms(), kDefaultRetentionMs);
  EXPECT_EQ(CompletedCount(queue), 1);
}

TEST_F(CompletedRetentionTest, AboveTheMaximumOrNegativeIsRefusedAndStoresNothing) {
  for (int64_t retention : {kMaxRetentionMs + 1, int64_t{-1}}) {
    SCOPED_TRACE(retention);
    v1::EnqueueRequest request = MakeJob("bad.retention", "p");
    request.set_completed_retention_ms(retention);
    v1::EnqueueResponse response;
    grpc::Status status = Enqueue(*stub_, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << StatusText(status);
    EXPECT_TRUE(absl::StrContains(status.error_message(), "completed_retention_ms"))
        << status.error_message();
    EXPECT_TRUE(absl::StrContains(status.error_message(), absl::StrCat("0..", kMaxRetentionMs)))
        << status.error_message();
    EXPECT_EQ(RedisDbSize(), 0);
  }
  // The maximum itself is allowed.
  v1::EnqueueRequest at_max = MakeJob("bad.retention", "p");
  at_max.set_completed_retention_ms(kMaxRetentionMs);
  MustEnqueue(*stub_, at_max);
}

TEST(CompletedRetentionFlagsTest, TheMaximumComesFromTheEnvironment) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  setenv("JOBWIRE_COMPLETED_RETENTION_MAX_MS", "86400001", 1);
  BrokerProcess broker(redis.port());
  absl::Status started = broker.Start();
  unsetenv("JOBWIRE_COMPLETED_RETENTION_MAX_MS");
  JW_ASSERT_OK(started);
  auto stub = broker.NewStub();
  v1::EnqueueRequest request = MakeJob("env", "p");
  request.set_completed_retention_ms(86400002);
  v1::EnqueueResponse response;
  grpc::Status status = Enqueue(*stub, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << StatusText(status);
  EXPECT_TRUE(absl::StrContains(status.error_message(), "0..86400001")) << status.error_message();
}

TEST(CompletedRetentionFlagsTest, AMaximumBelowTheDefaultRetentionStopsTheBroker) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  const std::string log = absl::StrCat(::testing::TempDir(), "/retention_flags.log");
  BrokerProcess broker(redis.port(),
                       {"--completed_retention_ms=2000", "--completed_retention_max_ms=1000"});
  broker.set_stderr_path(log);
  EXPECT_FALSE(broker.Start().ok());
  const std::string text = ReadTextFile(log);
  EXPECT_TRUE(absl::StrContains(text, "--completed_retention_max_ms must be in 2000..")) << text;
}

}  // namespace
}  // namespace jobwire::testing
