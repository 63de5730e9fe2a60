// JobStore against a real redis-server: the Lua scripts' ordering and
// backoff rules, table-driven. Each case seeds jobs, then states what the
// claims must return.
#include "broker/store/job_store.h"

#include <set>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "broker/store/job_store_test_util.h"
#include "gtest/gtest.h"

namespace jobwire::store {
namespace {

struct SeedJob {
  std::string type;
  int priority;
  int64_t delay_ms;
};

struct OrderCase {
  std::string name;
  std::vector<SeedJob> jobs;           // enqueued in this order
  absl::Duration wait_before_claim;    // lets short delays become due
  std::vector<std::string> want;       // types claimed, in order, by one claim of 100
};

TEST_F(JobStoreTest, ClaimOrder) {
  const std::vector<OrderCase> cases = {
      {"priority_desc", {{"p0", 0, 0}, {"p5", 5, 0}, {"m3", -3, 0}, {"p1000", 1000, 0}},
       absl::ZeroDuration(), {"p1000", "p5", "p0", "m3"}},
      {"fifo_within_priority", {{"a", 1, 0}, {"b", 1, 0}, {"c", 1, 0}, {"d", 1, 0}},
       absl::ZeroDuration(), {"a", "b", "c", "d"}},
      {"future_high_priority_never_blocks_due_low",
       {{"later1", 1000, 60000}, {"later2", 1000, 60000}, {"due1", -1000, 0}, {"due2", -1000, 0}},
       absl::ZeroDuration(), {"due1", "due2"}},
      {"promoted_job_keeps_its_due_time",
       // "delayed" became due 50 ms after "now" was enqueued: "now" first.
       {{"now", 0, 0}, {"delayed", 0, 50}}, absl::Milliseconds(150), {"now", "delayed"}},
      {"promoted_high_priority_beats_earlier_low",
       {{"low", -5, 0}, {"high", 5, 50}}, absl::Milliseconds(150), {"high", "low"}},
      {"due_order_across_promotion",
       // "late" enqueued first but due later than "early".
       {{"late", 0, 100}, {"early", 0, 20}}, absl::Milliseconds(250), {"early", "late"}},
  };
  for (const OrderCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string queue = "order_" + c.name;
    for (const SeedJob& j : c.jobs) Enqueue(queue, j.type, j.priority, j.delay_ms);
    absl::SleepFor(c.wait_before_claim);
    EXPECT_EQ(ClaimTypes(queue, 100), c.want);
  }
}

TEST_F(JobStoreTest, ManyScheduledHighPriorityJobsDoNotHideDueWork) {
  const std::string queue = "mix";
  for (int i = 0; i < 500; ++i) Enqueue(queue, "retry", 1000, 3600000);
  for (int i = 0; i < 5; ++i) Enqueue(queue, "due", -1000, 0);
  std::vector<std::string> got = ClaimTypes(queue, 10);
  EXPECT_EQ(got, std::vector<std::string>(5, "due"));
}

struct BackoffCase {
  int64_t base, cap;
  int attempts;       // the run that fails
  int64_t want_base;  // min(base * 2^(attempts-1), cap)
};

TEST_F(JobStoreTest, BackoffIsExponentialCappedWithTenPercentJitter) {
  const std::vector<BackoffCase> cases = {
      {1000, 3600000, 1, 1000},  {1000, 3600000, 2, 2000}, {1000, 3600000, 3, 4000},
      {1000, 3600000, 5, 16000}, {1000, 5000, 4, 5000},     {1000, 5000, 9, 5000},
      {250, 3600000, 3, 1000},
  };
  for (const BackoffCase& c : cases) {
    SCOPED_TRACE(absl::StrCat("base=", c.base, " cap=", c.cap, " attempts=", c.attempts));
    const std::string queue = absl::StrCat("backoff_", c.base, "_", c.cap, "_", c.attempts);
    std::string id = Enqueue(queue, "t", 0, 0, /*max_attempts=*/20, c.base, c.cap);
    FailOutcome outcome;
    int64_t failed_at = 0;
    for (int run = 1; run <= c.attempts; ++run) {
      // Make a scheduled retry due at once (test-only shortcut).
      ASSERT_TRUE(redis_.Command("ZADD", Keys("jw", queue).Scheduled(), 0, id).ok());
      auto claimed = Sync<ClaimOutcome>([&](auto cb) { store_->Claim(queue, 1, 30000, "w", JobStore::NewClaimId(), {}, cb); });
      ASSERT_TRUE(claimed.ok());
      ASSERT_EQ(claimed->jobs.size(), 1u);
      ASSERT_EQ(claimed->jobs[0].job().attempts(), run);
      v1::FailRequest f;
      f.set_queue(queue);
      f.set_job_id(id);
      f.set_lease_token(claimed->jobs[0].lease_token());
      f.set_error("boom");
      failed_at = testing::NowMs();
      auto failed = Sync<FailOutcome>([&](auto cb) { store_->Fail(f, cb); });
      ASSERT_TRUE(failed.ok()) << failed.status();
      outcome = *failed;
    }
    ASSERT_FALSE(outcome.dead);
    int64_t delay = outcome.next_attempt_at_ms - failed_at;
    EXPECT_GE(delay, c.want_base - 5);
    EXPECT_LE(delay, c.want_base + c.want_base / 10 + 20);
  }
}

TEST_F(JobStoreTest, JitterSpreadsRetries) {
  // Ten jobs failing their first run with the same backoff get different
  // retry times (jitter up to 10% of 100 s is up to 10 s).
  const std::string queue = "jitter";
  std::vector<int64_t> delays;
  for (int i = 0; i < 10; ++i) Enqueue(queue, "t", 0, 0, 3, 100000, 3600000);
  auto claimed = Sync<ClaimOutcome>([&](auto cb) { store_->Claim(queue, 10, 30000, "w", JobStore::NewClaimId(), {}, cb); });
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->jobs.size(), 10u);
  std::set<int64_t> distinct;
  for (const auto& job : claimed->jobs) {
    v1::FailRequest f;
    f.set_queue(queue);
    f.set_job_id(job.job().id());
    f.set_lease_token(job.lease_token());
    auto failed = Sync<FailOutcome>([&](auto cb) { store_->Fail(f, cb); });
    ASSERT_TRUE(failed.ok());
    distinct.insert(failed->next_attempt_at_ms);
  }
  EXPECT_GE(distinct.size(), 5u);
}

TEST_F(JobStoreTest, RetryAfterOverridesBackoffWithoutJitter) {
  const std::string queue = "retry_after";
  std::string id = Enqueue(queue, "t", 0, 0);
  auto claimed = Sync<ClaimOutcome>([&](auto cb) { store_->Claim(queue, 1, 30000, "w", JobStore::NewClaimId(), {}, cb); });
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->jobs.size(), 1u);
  v1::FailRequest f;
  f.set_queue(queue);
  f.set_job_id(id);
  f.set_lease_token(claimed->jobs[0].lease_token());
  f.set_retry_after_ms(777);
  auto failed = Sync<FailOutcome>([&](auto cb) { store_->Fail(f, cb); });
  ASSERT_TRUE(failed.ok());
  auto job = Sync<v1::Job>([&](auto cb) { store_->GetJob(queue, id, cb); });
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->available_at_ms(), failed->next_attempt_at_ms);
  auto score = redis_.Command("ZSCORE", Keys("jw", queue).Scheduled(), id);
  ASSERT_TRUE(score.ok());
  EXPECT_EQ(std::stoll(score->str), failed->next_attempt_at_ms);
  // 777 ms after the Redis time of the Fail: within a few ms of now + 777.
  EXPECT_NEAR(static_cast<double>(failed->next_attempt_at_ms - testing::NowMs()), 777, 30);
}

// release.lua undoes an undelivered claim: the job is claimable again at
// once, in its old place, and the undelivered lease can do nothing.
TEST_F(JobStoreTest, ReleaseGivesAnUndeliveredClaimBack) {
  const std::string queue = "release";
  std::string id = Enqueue(queue, "t", 5, 0);
  auto claimed = Sync<ClaimOutcome>([&](auto cb) { store_->Claim(queue, 1, 30000, "w", JobStore::NewClaimId(), {}, cb); });
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->jobs.size(), 1u);
  const std::string token = claimed->jobs[0].lease_token();

  auto released = Sync<bool>([&](auto cb) { store_->Release(queue, id, token, cb); });
  ASSERT_TRUE(released.ok()) << released.status();
  auto job = Sync<v1::Job>([&](auto cb) { store_->GetJob(queue, id, cb); });
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state(), testing::kPending);
  EXPECT_EQ(job->attempts(), 0);
  EXPECT_EQ(job->lease_expires_at_ms(), 0);

  // Released twice, or acked with the undelivered token: refused.
  auto again = Sync<bool>([&](auto cb) { store_->Release(queue, id, token, cb); });
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  v1::AckRequest ack;
  ack.set_queue(queue);
  ack.set_job_id(id);
  ack.set_lease_token(token);
  auto acked = Sync<std::vector<AckOutcome>>([&](auto cb) { store_->Ack(queue, {&ack}, cb); });
  ASSERT_TRUE(acked.ok()) << acked.status();
  EXPECT_EQ(acked->at(0).status.code(), absl::StatusCode::kFailedPrecondition);

  // Claimable again, as attempt 1 with a new token.
  auto reclaimed = Sync<ClaimOutcome>([&](auto cb) { store_->Claim(queue, 1, 30000, "w", JobStore::NewClaimId(), {}, cb); });
  ASSERT_TRUE(reclaimed.ok());
  ASSERT_EQ(reclaimed->jobs.size(), 1u);
  EXPECT_EQ(reclaimed->jobs[0].job().id(), id);
  EXPECT_EQ(reclaimed->jobs[0].job().attempts(), 1);
  EXPECT_NE(reclaimed->jobs[0].lease_token(), token);
}

}  // namespace
}  // namespace jobwire::store
