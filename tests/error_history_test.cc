// A job's error history (Job.errors) through the real broker and a real
// Redis: each failed run adds its attempt, time and error, oldest first;
// only the last ten are kept, each cut to 512 bytes while Job.error keeps
// the latest whole; a run given back (keep_attempt) is still listed; a
// Cancel that makes a job dead is listed; RetryDead keeps the history.
// Every check reads what GetJob answers the test after its own calls.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

class ErrorHistoryTest : public BrokerTest {
 protected:
  // A job of `queue` retried 1 ms after each failure, `max_attempts` runs.
  v1::EnqueueRequest Retried(const std::string& queue, int32_t max_attempts) {
    v1::EnqueueRequest job = MakeJob(queue);
    job.set_max_attempts(max_attempts);
    job.set_backoff_base_ms(1);
    job.set_backoff_max_ms(1);
    return job;
  }

  v1::Job Get(const std::string& queue, const std::string& id) {
    return MustGetJob(*stub_, queue, id);
  }

  // Claims the next run from `reader` and fails it with `error`; with
  // `keep_attempt`, as a downstream's "retry in a minute" (the run given
  // back, the job due in 60 s).
  void FailNext(ClaimReader& reader, const std::string& error, bool keep_attempt = false) {
    std::optional<v1::ClaimedJob> claimed = reader.Next(kPrompt);
    ASSERT_TRUE(claimed) << "no run to fail with " << error;
    v1::FailRequest fail = MakeFail(*claimed, error, false, keep_attempt ? 60'000 : 0);
    fail.set_keep_attempt(keep_attempt);
    v1::FailResponse response;
    JW_ASSERT_OK(Fail(*stub_, fail, &response));
  }
};

TEST_F(ErrorHistoryTest, EachFailedRunIsListedOldestFirst) {
  const std::string queue = "flaky";
  const absl::Time before = absl::Now();
  const std::string id = MustEnqueue(*stub_, Retried(queue, 3));
  auto reader = OpenClaim(MakeClaim({queue}, 1));
  for (const char* error : {"disk full", "timeout talking to S3", "bad input"}) {
    FailNext(*reader, error);
  }
  const v1::Job job = Get(queue, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_DEAD);
  EXPECT_EQ(job.error(), "bad input");
  ASSERT_EQ(job.errors_size(), 3);
  const std::vector<std::string> want = {"disk full", "timeout talking to S3", "bad input"};
  int64_t last_at = absl::ToUnixMillis(before) - 1;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(job.errors(i).attempt(), i + 1);
    EXPECT_EQ(job.errors(i).error(), want[i]);
    EXPECT_GE(job.errors(i).at_ms(), last_at) << "oldest first";
    last_at = job.errors(i).at_ms();
  }
  EXPECT_LE(last_at, absl::ToUnixMillis(absl::Now()) + 1);
  EXPECT_GE(job.finished_at_ms(), last_at);
  // The job stays pending after the retry below once no stream can claim it.
  auto admin = v1::AdminService::NewStub(broker_->channel());
  reader.reset();
  WaitNoClaimStreams(*admin);

  // RetryDead gives the job new runs and keeps what happened to the old ones.
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::RetryDeadRequest retry;
  retry.set_queue(queue);
  retry.add_job_ids(id);
  v1::RetryDeadResponse moved;
  JW_ASSERT_OK(admin->RetryDead(&context, retry, &moved));
  ASSERT_EQ(moved.moved(), 1);
  const v1::Job again = Get(queue, id);
  EXPECT_EQ(again.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(again.errors_size(), 3);
}

TEST_F(ErrorHistoryTest, TheLastTenAreKeptEachCutTo512Bytes) {
  const std::string queue = "very-flaky";
  const std::string id = MustEnqueue(*stub_, Retried(queue, 12));
  auto reader = OpenClaim(MakeClaim({queue}, 1));
  for (int run = 1; run <= 10; ++run) FailNext(*reader, absl::StrCat("error ", run));
  std::string euros;  // 600 bytes of 3-byte characters
  for (int i = 0; i < 200; ++i) euros += "\xe2\x82\xac";
  FailNext(*reader, euros);
  const std::string long_error(2000, 'x');
  FailNext(*reader, long_error);
  const v1::Job job = Get(queue, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_DEAD);
  EXPECT_EQ(job.error(), long_error) << "the latest error stays whole";
  ASSERT_EQ(job.errors_size(), 10);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(job.errors(i).attempt(), i + 3);
    EXPECT_EQ(job.errors(i).error(), absl::StrCat("error ", i + 3));
  }
  EXPECT_EQ(job.errors(8).attempt(), 11);
  EXPECT_EQ(job.errors(8).error(), euros.substr(0, 510)) << "cut before a character 512 would split";
  EXPECT_EQ(job.errors(9).attempt(), 12);
  EXPECT_EQ(job.errors(9).error(), std::string(512, 'x'));
}

TEST_F(ErrorHistoryTest, ARunGivenBackAndACancelAreListed) {
  const std::string queue = "throttled";
  const std::string id = MustEnqueue(*stub_, Retried(queue, 2));
  auto reader = OpenClaim(MakeClaim({queue}, 1));
  // The downstream said "later": the run is given back (attempts 0 again)
  // but the history says which run it was.
  FailNext(*reader, "429 from the payment API", /*keep_attempt=*/true);
  v1::Job job = Get(queue, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job.attempts(), 0);
  ASSERT_EQ(job.errors_size(), 1);
  EXPECT_EQ(job.errors(0).attempt(), 1);
  EXPECT_EQ(job.errors(0).error(), "429 from the payment API");
  reader.reset();  // the jobs below stay pending until cancelled, once the stream is gone
  WaitNoClaimStreams(*v1::AdminService::NewStub(broker_->channel()));

  JW_ASSERT_OK(Cancel(*stub_, queue, id));
  job = Get(queue, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_DEAD);
  ASSERT_EQ(job.errors_size(), 2);
  EXPECT_EQ(job.errors(1).attempt(), 0);
  EXPECT_EQ(job.errors(1).error(), "cancelled");

  // A job that never failed has no history; one cancelled before its first
  // run has the cancel alone.
  const std::string fresh = MustEnqueue(*stub_, MakeJob(queue));
  EXPECT_EQ(Get(queue, fresh).errors_size(), 0);
  JW_ASSERT_OK(Cancel(*stub_, queue, fresh));
  job = Get(queue, fresh);
  ASSERT_EQ(job.errors_size(), 1);
  EXPECT_EQ(job.errors(0).attempt(), 0);
  EXPECT_EQ(job.errors(0).error(), "cancelled");
}

}  // namespace
}  // namespace jobwire::testing
