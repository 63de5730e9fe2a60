// Failures, retries and leases through the real broker and a real Redis:
// Fail with backoff, retry_after_ms, dead jobs, lease expiry and fencing,
// repeated Ack, ExtendLease.

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_harness.h"
#include "tests/lifecycle_test_util.h"

namespace jobwire::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

TEST_F(LifecycleTest, FailSchedulesRetryWithBackoffAndRedelivers) {
  const std::string queue = "retry";
  v1::EnqueueRequest request = MakeJob(queue);
  request.set_backoff_base_ms(200);
  const std::string id = MustEnqueue(*stub_, request);
  auto reader = OpenClaim(MakeClaim({queue}, 1));
  std::optional<v1::ClaimedJob> first = reader->Next(kPrompt);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->job().attempts(), 1);

  const int64_t t0 = NowMs();
  v1::FailResponse response;
  JW_ASSERT_OK(Fail(*stub_, MakeFail(*first, "boom: disk full"), &response));
  const int64_t t1 = NowMs();
  EXPECT_EQ(response.outcome(), kRetryScheduled)
      << OutcomeName(response.outcome());
  // attempts = 1: backoff = 200 ms plus up to 10% jitter.
  EXPECT_GE(response.next_attempt_at_ms(), t0 + 200 - 1);
  EXPECT_LE(response.next_attempt_at_ms(), t1 + 220 + kSlackMs);

  v1::Job pending;
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &pending));
  EXPECT_EQ(pending.state(), kPending) << StateName(pending.state());
  EXPECT_EQ(pending.error(), "boom: disk full");
  EXPECT_EQ(pending.attempts(), 1);
  EXPECT_EQ(pending.available_at_ms(), response.next_attempt_at_ms());

  absl::Time received_at;
  std::optional<v1::ClaimedJob> second = reader->NextBefore(
      absl::FromUnixMillis(response.next_attempt_at_ms()) +
          absl::Milliseconds(kSlackMs),
      &received_at);
  ASSERT_TRUE(second.has_value()) << "retry not delivered when due";
  EXPECT_GE(absl::ToUnixMillis(received_at), response.next_attempt_at_ms() - 1)
      << "retry delivered before its backoff";
  EXPECT_EQ(second->job().id(), id);
  EXPECT_EQ(second->job().attempts(), 2);
  EXPECT_EQ(second->job().error(), "boom: disk full");
  EXPECT_NE(second->lease_token(), first->lease_token());
  JW_EXPECT_OK(Ack(*stub_, *second));
}

TEST_F(LifecycleTest, RetryAfterOverridesTheBackoffWithoutJitter) {
  const std::string queue = "retry.after";
  v1::EnqueueRequest request = MakeJob(queue);
  request.set_backoff_base_ms(60000);
  MustEnqueue(*stub_, request);
  auto reader = OpenClaim(MakeClaim({queue}, 1));
  std::optional<v1::ClaimedJob> first = reader->Next(kPrompt);
  ASSERT_TRUE(first.has_value());

  const int64_t t0 = NowMs();
  v1::FailResponse response;
  JW_ASSERT_OK(
      Fail(*stub_, MakeFail(*first, "throttled", false, 300), &response));
  const int64_t t1 = NowMs();
  EXPECT_EQ(response.outcome(), kRetryScheduled)
      << OutcomeName(response.outcome());
  EXPECT_GE(response.next_attempt_at_ms(), t0 + 300 - 1);
  EXPECT_LE(response.next_attempt_at_ms(), t1 + 300 + 1);
  std::optional<v1::ClaimedJob> second = reader->NextBefore(
      absl::FromUnixMillis(response.next_attempt_at_ms()) +
      absl::Milliseconds(kSlackMs));
  ASSERT_TRUE(second.has_value()) << "retry_after_ms was not honoured";
  EXPECT_EQ(second->job().attempts(), 2);
}

// A Fail with keep_attempt (a downstream's "retry after X") gives the run's
// attempt back: a job of 2 attempts turned away 4 times is retried each
// time after retry_after_ms, never dead; the runs that do count make it dead
// at its second counted attempt. A run Cancel asked to stop counts anyway.
TEST_F(LifecycleTest, KeepAttemptRetriesWithoutUsingAnAttempt) {
  const std::string queue = "retry.keep";
  v1::EnqueueRequest request = MakeJob(queue);
  request.set_max_attempts(2);
  const std::string id = MustEnqueue(*stub_, request);
  auto reader = OpenClaim(MakeClaim({queue}, 1));
  for (int i = 0; i < 4; ++i) {
    std::optional<v1::ClaimedJob> run = reader->Next(kPrompt);
    ASSERT_TRUE(run.has_value()) << "turned-away run " << i << " was not retried";
    EXPECT_EQ(run->job().attempts(), 1) << "run " << i;
    v1::FailRequest fail = MakeFail(*run, "429 from the downstream", false, 100);
    fail.set_keep_attempt(true);
    const int64_t t0 = NowMs();
    v1::FailResponse response;
    JW_ASSERT_OK(Fail(*stub_, fail, &response));
    EXPECT_EQ(response.outcome(), kRetryScheduled) << OutcomeName(response.outcome());
    EXPECT_GE(response.next_attempt_at_ms(), t0 + 100 - 1);
    v1::Job job;
    JW_ASSERT_OK(GetJob(*stub_, queue, id, &job));
    EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
    EXPECT_EQ(job.attempts(), 0) << "the turned-away run counted";
    EXPECT_EQ(job.error(), "429 from the downstream");
  }
  for (int counted = 1; counted <= 2; ++counted) {
    std::optional<v1::ClaimedJob> run = reader->Next(kPrompt);
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->job().attempts(), counted);
    v1::FailResponse response;
    JW_ASSERT_OK(Fail(*stub_, MakeFail(*run, "boom", false, 100), &response));
    EXPECT_EQ(response.outcome(), counted == 2 ? kOutcomeDead : kRetryScheduled);
  }

  const std::string cancelled = MustEnqueue(*stub_, MakeJob(queue));
  std::optional<v1::ClaimedJob> run = reader->Next(kPrompt);
  ASSERT_TRUE(run.has_value());
  ASSERT_EQ(run->job().id(), cancelled);
  JW_ASSERT_OK(Cancel(*stub_, queue, cancelled));
  v1::FailRequest fail = MakeFail(*run, "429", false, 100);
  fail.set_keep_attempt(true);
  v1::FailResponse response;
  JW_ASSERT_OK(Fail(*stub_, fail, &response));
  EXPECT_EQ(response.outcome(), kOutcomeDead) << "a run Cancel asked to stop is not given back";
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, cancelled, &job));
  EXPECT_EQ(job.error(), "cancelled");
}

TEST_F(LifecycleTest, JobOutlivesItsClaimStream) {
  const std::string queue = "stream.closed";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  std::optional<v1::ClaimedJob> claimed;
  {
    auto reader = OpenClaim(MakeClaim({queue}, 1, 30000));
    claimed = reader->Next(kPrompt);
    ASSERT_TRUE(claimed.has_value());
  }  // The stream is cancelled here.
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &job));
  EXPECT_EQ(job.state(), kActive) << StateName(job.state());
  JW_ASSERT_OK(Ack(*stub_, *claimed, "acked after the stream ended"));
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &job));
  EXPECT_EQ(job.state(), kCompleted) << StateName(job.state());
  EXPECT_EQ(job.result(), "acked after the stream ended");
}

// A claim still running in Redis when its stream ends returns its jobs to the
// queue at once (release.lua), instead of leaving them until their leases
// expire. CLIENT PAUSE holds the claim until the stream is gone.
TEST_F(LifecycleTest, JobClaimedForAnEndedStreamGoesToTheNextWorker) {
  const std::string queue = "stream.ended";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  auto paused = RedisCommandOnEveryMaster({"CLIENT", "PAUSE", "500", "WRITE"});
  JW_ASSERT_OK(paused.status());
  {
    auto leaving = OpenClaim(MakeClaim({queue}, 1, 30000));
    absl::SleepFor(absl::Milliseconds(100));  // its claim waits on the pause
    leaving->Cancel();
    ASSERT_TRUE(leaving->WaitForEnd(absl::Seconds(2)).has_value());
    EXPECT_EQ(leaving->received(), 0);
  }
  auto next = OpenClaim(MakeClaim({queue}, 1, 30000));
  std::optional<v1::ClaimedJob> claimed = next->Next(absl::Seconds(3));
  ASSERT_TRUE(claimed.has_value()) << "job stranded until its lease expires";
  EXPECT_EQ(claimed->job().id(), id);
  EXPECT_EQ(claimed->job().attempts(), 1);
}

TEST_F(LifecycleTest, ExhaustedAttemptsMakeTheJobDead) {
  const std::string queue = "exhausted";
  v1::EnqueueRequest request = MakeJob(queue);
  request.set_max_attempts(2);
  request.set_backoff_base_ms(100);
  const std::string id = MustEnqueue(*stub_, request);
  auto reader = OpenClaim(MakeClaim({queue}, 1));

  std::optional<v1::ClaimedJob> first = reader->Next(kPrompt);
  ASSERT_TRUE(first.has_value());
  v1::FailResponse response;
  JW_ASSERT_OK(Fail(*stub_, MakeFail(*first, "first failure"), &response));
  EXPECT_EQ(response.outcome(), kRetryScheduled)
      << OutcomeName(response.outcome());

  std::optional<v1::ClaimedJob> second = reader->Next(kPrompt);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->job().attempts(), 2);
  const int64_t before = NowMs();
  JW_ASSERT_OK(Fail(*stub_, MakeFail(*second, "second failure"), &response));
  EXPECT_EQ(response.outcome(), kOutcomeDead)
      << OutcomeName(response.outcome());
  EXPECT_EQ(response.next_attempt_at_ms(), 0);

  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &job));
  EXPECT_EQ(job.state(), kDead) << StateName(job.state());
  EXPECT_EQ(job.error(), "second failure");
  EXPECT_EQ(job.attempts(), 2);
  EXPECT_GE(job.finished_at_ms(), before - 1);
  EXPECT_EQ(job.lease_expires_at_ms(), 0);
  EXPECT_FALSE(reader->Next(kQuiet).has_value()) << "a dead job was delivered";
}

TEST_F(LifecycleTest, NonRetryableFailureIsDeadAtOnceAndRepeatable) {
  const std::string queue = "fatal";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  auto reader = OpenClaim(MakeClaim({queue}, 1));
  std::optional<v1::ClaimedJob> claimed = reader->Next(kPrompt);
  ASSERT_TRUE(claimed.has_value());

  v1::FailResponse response;
  JW_ASSERT_OK(Fail(*stub_, MakeFail(*claimed, "bad input", true), &response));
  EXPECT_EQ(response.outcome(), kOutcomeDead)
      << OutcomeName(response.outcome());
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &job));
  EXPECT_EQ(job.state(), kDead) << StateName(job.state());
  EXPECT_EQ(job.attempts(), 1);
  EXPECT_EQ(job.error(), "bad input");

  // Repeating a successful Fail with the same token answers the same outcome.
  v1::FailResponse again;
  JW_EXPECT_OK(Fail(*stub_, MakeFail(*claimed, "bad input", true), &again));
  EXPECT_EQ(again.outcome(), kOutcomeDead) << OutcomeName(again.outcome());
  EXPECT_FALSE(reader->Next(kQuiet).has_value()) << "a dead job was delivered";
}

// Enqueues one job with a tiny backoff, claims it under a 1 s lease, lets the
// lease expire and returns both deliveries.
class LeaseTest : public LifecycleTest {
 protected:
  void ClaimTwiceThroughLeaseExpiry(const std::string& queue) {
    v1::EnqueueRequest request = MakeJob(queue);
    request.set_backoff_base_ms(10);
    request.set_backoff_max_ms(10);
    id_ = MustEnqueue(*stub_, request);
    ASSERT_FALSE(id_.empty());
    reader_ = OpenClaim(MakeClaim({queue}, 1, 1000));
    std::optional<v1::ClaimedJob> first = reader_->Next(kPrompt);
    ASSERT_TRUE(first.has_value());
    first_ = *first;
    EXPECT_EQ(first_.job().attempts(), 1);

    // Expiry at lease_expires_at, reaped then (the broker woke its reaper
    // for the lease it granted, though an idle reaper runs only every 5 s),
    // retried after a 10 ms backoff.
    const int64_t expires = first_.lease_expires_at_ms();
    absl::Time received_at;
    std::optional<v1::ClaimedJob> second = reader_->NextBefore(
        absl::FromUnixMillis(expires + 1000 + 500), &received_at);
    ASSERT_TRUE(second.has_value()) << "not redelivered after lease expiry";
    second_ = *second;
    EXPECT_GE(absl::ToUnixMillis(received_at), expires - 1)
        << "redelivered before the lease expired";
    EXPECT_EQ(second_.job().id(), id_);
    EXPECT_EQ(second_.job().attempts(), 2);
    EXPECT_EQ(second_.job().error(), "lease expired");
    EXPECT_NE(second_.lease_token(), first_.lease_token());
  }

  std::string id_;
  std::unique_ptr<ClaimReader> reader_;
  v1::ClaimedJob first_;
  v1::ClaimedJob second_;
};

TEST_F(LeaseTest, ExpiredLeaseIsRedelivered) {
  const std::string queue = "lease.expiry";
  ASSERT_NO_FATAL_FAILURE(ClaimTwiceThroughLeaseExpiry(queue));
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, id_, &job));
  EXPECT_EQ(job.state(), kActive) << StateName(job.state());
  EXPECT_EQ(job.attempts(), 2);
  EXPECT_EQ(job.error(), "lease expired");
  JW_EXPECT_OK(Ack(*stub_, second_));
}

TEST_F(LeaseTest, StaleTokenIsRefusedAfterRedelivery) {
  const std::string queue = "lease.stale";
  ASSERT_NO_FATAL_FAILURE(ClaimTwiceThroughLeaseExpiry(queue));

  EXPECT_EQ(Ack(*stub_, first_, "stale").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::FailResponse fail_response;
  EXPECT_EQ(Fail(*stub_, MakeFail(first_, "stale failure"), &fail_response)
                .error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::ExtendLeaseRequest extend;
  extend.set_queue(queue);
  extend.set_job_id(id_);
  extend.set_lease_token(first_.lease_token());
  extend.set_lease_ms(60000);
  v1::ExtendLeaseResponse extend_response;
  EXPECT_EQ(ExtendLease(*stub_, extend, &extend_response).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  // The refused calls changed nothing.
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, id_, &job));
  EXPECT_EQ(job.state(), kActive) << StateName(job.state());
  EXPECT_EQ(job.attempts(), 2);
  EXPECT_EQ(job.error(), "lease expired");
  EXPECT_EQ(job.lease_expires_at_ms(), second_.lease_expires_at_ms());

  JW_ASSERT_OK(Ack(*stub_, second_, "second owner"));
  JW_ASSERT_OK(GetJob(*stub_, queue, id_, &job));
  EXPECT_EQ(job.state(), kCompleted) << StateName(job.state());
  EXPECT_EQ(job.result(), "second owner");
}

TEST_F(LifecycleTest, RepeatedAckWithTheSameTokenIsOkAndChangesNothing) {
  const std::string queue = "ack.twice";
  const std::string id = MustEnqueue(*stub_, MakeJob(queue));
  auto reader = OpenClaim(MakeClaim({queue}, 1));
  std::optional<v1::ClaimedJob> claimed = reader->Next(kPrompt);
  ASSERT_TRUE(claimed.has_value());

  JW_ASSERT_OK(Ack(*stub_, *claimed, "first result"));
  v1::Job after_first;
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &after_first));
  JW_EXPECT_OK(Ack(*stub_, *claimed, "first result"));
  JW_EXPECT_OK(Ack(*stub_, *claimed, "other result"));
  v1::Job after_repeats;
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &after_repeats));
  EXPECT_EQ(after_repeats.state(), kCompleted)
      << StateName(after_repeats.state());
  EXPECT_EQ(after_repeats.result(), "first result");
  EXPECT_EQ(after_repeats.finished_at_ms(), after_first.finished_at_ms());
  EXPECT_EQ(after_repeats.attempts(), 1);
}

TEST_F(LifecycleTest, AckBatchSettlesEachAckOnItsOwnAndFreesTheirSlots) {
  const std::string q1 = "ackbatch.one", q2 = "ackbatch.two";
  const std::string a = MustEnqueue(*stub_, MakeJob(q1));
  const std::string b = MustEnqueue(*stub_, MakeJob(q1));
  const std::string c = MustEnqueue(*stub_, MakeJob(q2));
  auto reader = OpenClaim(MakeClaim({q1, q2}, 3));
  std::map<std::string, v1::ClaimedJob> claimed;  // by "queue/id"
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::ClaimedJob> job = reader->Next(kPrompt);
    ASSERT_TRUE(job.has_value()) << "job " << i;
    claimed[job->job().queue() + "/" + job->job().id()] = *job;
  }
  ASSERT_EQ(claimed.size(), 3u);
  const v1::ClaimedJob& ja = claimed[q1 + "/" + a];
  const v1::ClaimedJob& jb = claimed[q1 + "/" + b];
  const v1::ClaimedJob& jc = claimed[q2 + "/" + c];

  struct Item {
    std::string queue, id, token, result;
    grpc::StatusCode code;
  };
  const std::vector<Item> items = {
      {q1, a, ja.lease_token(), "result a", grpc::StatusCode::OK},
      {q2, c, jc.lease_token(), "result c", grpc::StatusCode::OK},
      {q1, b, ja.lease_token(), "stale", grpc::StatusCode::FAILED_PRECONDITION},
      {q1, "000000009999", jb.lease_token(), "", grpc::StatusCode::NOT_FOUND},
      {"bad queue", b, jb.lease_token(), "", grpc::StatusCode::INVALID_ARGUMENT},
      {q1, a, ja.lease_token(), "repeat", grpc::StatusCode::OK},
  };
  v1::AckBatchRequest batch;
  for (const Item& item : items) {
    v1::AckRequest* ack = batch.add_acks();
    ack->set_queue(item.queue);
    ack->set_job_id(item.id);
    ack->set_lease_token(item.token);
    ack->set_result(item.result);
  }
  v1::AckBatchResponse response;
  JW_ASSERT_OK(AckBatch(*stub_, batch, &response));
  ASSERT_EQ(response.results_size(), static_cast<int>(items.size()));
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(response.results(i).code(), static_cast<int>(items[i].code))
        << "ack " << i << ": " << response.results(i).message();
  }
  EXPECT_TRUE(absl::StartsWith(response.results(4).message(), "acks[4].queue:"))
      << response.results(4).message();

  // a and c completed with their first results; b is still held.
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, q1, a, &job));
  EXPECT_EQ(job.state(), kCompleted) << StateName(job.state());
  EXPECT_EQ(job.result(), "result a");
  JW_ASSERT_OK(GetJob(*stub_, q2, c, &job));
  EXPECT_EQ(job.state(), kCompleted) << StateName(job.state());
  EXPECT_EQ(job.result(), "result c");
  JW_ASSERT_OK(GetJob(*stub_, q1, b, &job));
  EXPECT_EQ(job.state(), kActive) << StateName(job.state());

  // The two acked jobs freed their slots: two new jobs arrive, a third does
  // not (b still holds the last slot).
  for (int i = 0; i < 3; ++i) MustEnqueue(*stub_, MakeJob(q1));
  EXPECT_TRUE(reader->Next(kPrompt).has_value());
  EXPECT_TRUE(reader->Next(kPrompt).has_value());
  EXPECT_FALSE(reader->Next(kQuiet).has_value());
}

TEST_F(LifecycleTest, ExtendLeaseKeepsTheJobPastItsFirstLease) {
  const std::string queue = "lease.extend";
  v1::EnqueueRequest request = MakeJob(queue);
  request.set_backoff_base_ms(10);
  const std::string id = MustEnqueue(*stub_, request);
  auto first_reader = OpenClaim(MakeClaim({queue}, 1, 1000, "worker-a"));
  absl::Time claimed_at;
  std::optional<v1::ClaimedJob> claimed =
      first_reader->Next(kPrompt, &claimed_at);
  ASSERT_TRUE(claimed.has_value());

  absl::SleepFor(claimed_at + absl::Milliseconds(500) - absl::Now());
  v1::ExtendLeaseRequest extend;
  extend.set_queue(queue);
  extend.set_job_id(id);
  extend.set_lease_token(claimed->lease_token());
  extend.set_lease_ms(3000);
  v1::ExtendLeaseResponse response;
  const int64_t t0 = NowMs();
  JW_ASSERT_OK(ExtendLease(*stub_, extend, &response));
  const int64_t t1 = NowMs();
  EXPECT_GE(response.lease_expires_at_ms(), t0 + 3000 - 1);
  EXPECT_LE(response.lease_expires_at_ms(), t1 + 3000 + kSlackMs);
  v1::Job job;
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &job));
  EXPECT_EQ(job.lease_expires_at_ms(), response.lease_expires_at_ms());

  // Past the first lease (1 s) plus a reaper period: nobody gets the job.
  auto second_reader = OpenClaim(MakeClaim({queue}, 1, 1000, "worker-b"));
  const absl::Time quiet_until = claimed_at + absl::Milliseconds(2200);
  EXPECT_FALSE(second_reader->NextBefore(quiet_until).has_value())
      << "redelivered although the lease was extended";
  EXPECT_FALSE(first_reader->Next(absl::ZeroDuration()).has_value());

  JW_ASSERT_OK(Ack(*stub_, *claimed, "done"));
  JW_ASSERT_OK(GetJob(*stub_, queue, id, &job));
  EXPECT_EQ(job.state(), kCompleted) << StateName(job.state());
  EXPECT_EQ(job.attempts(), 1);
}

}  // namespace
}  // namespace jobwire::testing
