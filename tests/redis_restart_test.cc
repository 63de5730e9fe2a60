// The broker outlives a Redis restart: while Redis is down calls answer
// UNAVAILABLE, and once it is back (empty, without the broker's scripts) the
// broker serves again without being restarted, including on Claim streams
// opened before the restart.
#include <string>

#include "gtest/gtest.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

constexpr absl::Duration kRecoveryDeadline = absl::Seconds(10);
constexpr absl::Duration kPollEvery = absl::Milliseconds(100);

class RedisRestartTest : public BrokerTest {
 protected:
  // Enqueues on `queue`, retrying every 100 ms until it succeeds or 10 s
  // pass. Returns the job id, or "" with the last status in `last`.
  std::string EnqueueWhenBack(const std::string& queue, grpc::Status* last) {
    const absl::Time deadline = absl::Now() + kRecoveryDeadline;
    while (true) {
      v1::EnqueueResponse response;
      *last = Enqueue(*stub_, MakeJob(queue, "after restart"), &response);
      if (last->ok()) return response.job_id();
      if (absl::Now() > deadline) return "";
      absl::SleepFor(kPollEvery);
    }
  }

  // Restarts Redis on the same port (all data lost) and flushes its
  // function libraries, as after a failover to an empty replica.
  void RestartRedis() {
    JW_ASSERT_OK(redis_->Restart());
    absl::StatusOr<RedisReply> flushed = redis_->Command("FUNCTION", "FLUSH");
    JW_ASSERT_OK(flushed.status());
    ASSERT_FALSE(flushed->is_error()) << flushed->str;
    ASSERT_EQ(redis_->DbSize(), 0);
  }

  // Proves the broker serves `queue` end to end on `reader`.
  void RoundTrip(ClaimReader& reader, const std::string& queue) {
    const std::string id = MustEnqueue(*stub_, MakeJob(queue, "before"));
    ASSERT_FALSE(id.empty());
    std::optional<v1::ClaimedJob> claimed = reader.Next(absl::Seconds(5));
    ASSERT_TRUE(claimed.has_value());
    EXPECT_EQ(claimed->job().id(), id);
    JW_ASSERT_OK(Ack(*stub_, *claimed));
  }
};

TEST_F(RedisRestartTest, EnqueueIsUnavailableWhileRedisIsDownThenRecovers) {
  const std::string queue = "restart.down";
  auto reader = OpenClaim(MakeClaim({queue}, 10));
  ASSERT_NO_FATAL_FAILURE(RoundTrip(*reader, queue));
  const std::string held = MustEnqueue(*stub_, MakeJob("restart.down.held"));
  ASSERT_FALSE(held.empty());

  redis_->Stop();
  for (int i = 0; i < 3; ++i) {
    v1::EnqueueResponse response;
    grpc::Status status = Enqueue(*stub_, MakeJob(queue), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << "attempt " << i << ": " << StatusText(status);
  }
  // An AckBatch fails as a whole (its acks' outcomes unknown), even with
  // an ack that validation refuses.
  v1::AckBatchRequest acks;
  v1::AckRequest* ack = acks.add_acks();
  ack->set_queue("restart.down.held");
  ack->set_job_id(held);
  ack->set_lease_token("a-token");
  acks.add_acks()->set_queue("restart.down.held");  // no job id
  v1::AckBatchResponse acked;
  grpc::Status acked_status = AckBatch(*stub_, acks, &acked);
  EXPECT_EQ(acked_status.error_code(), grpc::StatusCode::UNAVAILABLE) << StatusText(acked_status);
  EXPECT_EQ(acked.results_size(), 0);
  EXPECT_TRUE(broker_->Running()) << "the broker died with Redis";

  JW_ASSERT_OK(redis_->Start());
  absl::StatusOr<RedisReply> flushed = redis_->Command("FUNCTION", "FLUSH");
  JW_ASSERT_OK(flushed.status());

  grpc::Status last;
  const std::string id = EnqueueWhenBack(queue, &last);
  ASSERT_FALSE(id.empty()) << "Enqueue still failing 10 s after Redis came "
                              "back: "
                           << StatusText(last);
  std::optional<v1::ClaimedJob> claimed = reader->Next(kRecoveryDeadline);
  ASSERT_TRUE(claimed.has_value())
      << "the stream opened before the outage got nothing";
  EXPECT_EQ(claimed->job().id(), id);
  JW_EXPECT_OK(Ack(*stub_, *claimed));
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &job));
  EXPECT_EQ(job.state(), kCompleted) << StateName(job.state());
}

TEST_F(RedisRestartTest, OpenClaimStreamResumesAfterRestart) {
  const std::string queue = "restart.open";
  auto reader = OpenClaim(MakeClaim({queue}, 10));
  ASSERT_NO_FATAL_FAILURE(RoundTrip(*reader, queue));

  ASSERT_NO_FATAL_FAILURE(RestartRedis());
  grpc::Status last;
  const std::string id = EnqueueWhenBack(queue, &last);
  ASSERT_FALSE(id.empty()) << "Enqueue still failing 10 s after restart: "
                           << StatusText(last);
  std::optional<v1::ClaimedJob> claimed = reader->Next(kRecoveryDeadline);
  ASSERT_TRUE(claimed.has_value())
      << "the stream opened before the restart got nothing";
  EXPECT_EQ(claimed->job().id(), id);
  EXPECT_EQ(claimed->job().payload(), "after restart");
  JW_EXPECT_OK(Ack(*stub_, *claimed));
  EXPECT_FALSE(reader->WaitForEnd(absl::ZeroDuration()).has_value())
      << "the stream ended";
}

TEST_F(RedisRestartTest, NewClaimStreamIsServedAfterRestart) {
  const std::string queue = "restart.new";
  {
    auto before = OpenClaim(MakeClaim({queue}, 1));
    ASSERT_NO_FATAL_FAILURE(RoundTrip(*before, queue));
  }

  ASSERT_NO_FATAL_FAILURE(RestartRedis());
  grpc::Status last;
  const std::string id = EnqueueWhenBack(queue, &last);
  ASSERT_FALSE(id.empty()) << "Enqueue still failing 10 s after restart: "
                           << StatusText(last);
  auto reader = OpenClaim(MakeClaim({queue}, 1));
  std::optional<v1::ClaimedJob> claimed = reader->Next(kRecoveryDeadline);
  ASSERT_TRUE(claimed.has_value()) << "a new stream got nothing";
  EXPECT_EQ(claimed->job().id(), id);
  JW_EXPECT_OK(Ack(*stub_, *claimed));
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &job));
  EXPECT_EQ(job.state(), kCompleted) << StateName(job.state());
}

}  // namespace
}  // namespace jobwire::testing
