// Per-job completed retention against a real redis-server (enqueue.lua
// stores it, ack.lua applies it): the completed index's score (expiry),
// deletion on ack for retention 0 with its tombstone, the jobs deleted by
// expiry (ack.lua, reap.lua) and counted by expiry (queue_stats.lua), and a
// job record without the field.
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "broker/store/job_store_test_util.h"
#include "gtest/gtest.h"

namespace jobwire::store {
namespace {

constexpr int64_t kDefaultRetentionMs = 60000;

StoreOptions WithDefaultRetention() {
  StoreOptions o;
  o.completed_retention_ms = kDefaultRetentionMs;
  return o;
}

class CompletedRetentionStoreTest : public JobStoreTest {
 public:
  CompletedRetentionStoreTest() : JobStoreTest(WithDefaultRetention()) {}

  // Enqueues one job of `queue` (retention unset when nullopt), claims it
  // with `lease_ms` and returns the claim.
  v1::ClaimedJob EnqueueAndClaim(const std::string& queue, std::optional<int64_t> retention,
                                 int64_t lease_ms = 30000) {
    v1::EnqueueRequest r;
    r.set_queue(queue);
    r.set_type("t");
    r.set_max_attempts(3);
    r.set_backoff_base_ms(1000);
    r.set_backoff_max_ms(1000);
    if (retention) r.set_completed_retention_ms(*retention);
    auto out = Sync<std::vector<EnqueueOutcome>>([&](auto cb) { store_->Enqueue(queue, {r}, cb); });
    EXPECT_TRUE(out.ok()) << out.status();
    auto claimed = Claim(queue, 1, lease_ms);
    EXPECT_TRUE(claimed.ok() && claimed->jobs.size() == 1);
    return claimed.ok() && !claimed->jobs.empty() ? claimed->jobs[0] : v1::ClaimedJob();
  }

  int64_t Integer(const std::vector<std::string>& argv) {
    auto r = redis_.CommandArgv(argv);
    return r.ok() ? r->integer : -100;
  }
  std::string String(const std::vector<std::string>& argv) {
    auto r = redis_.CommandArgv(argv);
    return r.ok() ? r->str : "";
  }
  // Redis' clock, epoch ms.
  int64_t RedisNowMs() {
    auto r = redis_.Command("TIME");
    if (!r.ok() || r->elements.size() != 2) return -1;
    return std::stoll(r->elements[0].str) * 1000 + std::stoll(r->elements[1].str) / 1000;
  }
  // Ms until the ack tombstone of job `id` expires (its acked_expiry score).
  int64_t TombstoneTtlMs(const std::string& queue, const std::string& id) {
    const std::string expiry = String({"ZSCORE", KeysOf(queue).AckedExpiry(), id});
    return expiry.empty() ? -100 : std::stoll(expiry) - RedisNowMs();
  }
  int64_t CompletedCount(const std::string& queue) {
    auto stats = Sync<v1::QueueStats>([&](auto cb) { admin_->Stats(queue, cb); });
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? stats->completed() : -1;
  }
};

// The retention a job gets (its own, else the store's) makes its
// completed-index score finish time + retention: when it is deleted.
TEST_F(CompletedRetentionStoreTest, TheIndexScoreIsTheExpiry) {
  struct Case {
    std::string name;
    std::optional<int64_t> retention;
    int64_t want_ms;
  };
  for (const Case& c : std::vector<Case>{{"unset_takes_the_default", std::nullopt, kDefaultRetentionMs},
                                         {"own_short", 5000, 5000},
                                         {"own_long", 7LL * 24 * 3600 * 1000, 7LL * 24 * 3600 * 1000}}) {
    SCOPED_TRACE(c.name);
    const std::string queue = "ttl-" + c.name;
    v1::ClaimedJob job = EnqueueAndClaim(queue, c.retention);
    const std::string& id = job.job().id();
    EXPECT_EQ(JobField(queue, id, "completed_retention"), std::to_string(c.want_ms));
    auto acked = Ack(job);
    ASSERT_TRUE(acked.ok() && acked->status.ok());
    EXPECT_EQ(Integer({"PTTL", KeysOf(queue).Jobs()}), -1);  // no key TTL: the index decides
    const int64_t finished = std::stoll(JobField(queue, id, "finished_at"));
    EXPECT_EQ(String({"ZSCORE", KeysOf(queue).Completed(), job.job().id()}),
              std::to_string(finished + c.want_ms));
    EXPECT_EQ(CompletedCount(queue), 1);
  }
}

// Retention 0: the Ack deletes the job and indexes nothing; a tombstone
// keeps the token until the lease would have ended plus the grace, so a
// repeat answers OK (repeat) and another token FAILED_PRECONDITION.
TEST_F(CompletedRetentionStoreTest, RetentionZeroDeletesOnAckAndARepeatStillAnswersOk) {
  const std::string queue = "zero";
  v1::ClaimedJob job = EnqueueAndClaim(queue, 0, /*lease_ms=*/30000);
  const Keys keys = KeysOf(queue);
  auto first = Ack(job);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->status.ok()) << first->status;
  EXPECT_FALSE(first->repeat);
  EXPECT_FALSE(HasJobRecord(queue, job.job().id()));
  EXPECT_EQ(Integer({"ZCARD", keys.Completed()}), 0);
  EXPECT_EQ(Integer({"ZCARD", keys.Active()}), 0);
  EXPECT_EQ(String({"HGET", keys.Acked(), job.job().id()}), job.lease_token());
  const int64_t pttl = TombstoneTtlMs(queue, job.job().id());
  EXPECT_GT(pttl, 30000 + kAckTombstoneGraceMs - 2000);
  EXPECT_LE(pttl, 30000 + kAckTombstoneGraceMs);

  auto repeat = Ack(job);
  ASSERT_TRUE(repeat.ok());
  EXPECT_TRUE(repeat->status.ok()) << repeat->status;
  EXPECT_TRUE(repeat->repeat);
  v1::ClaimedJob other = job;
  other.set_lease_token("another-token");
  auto stale = Ack(other);
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(stale->status.code(), absl::StatusCode::kFailedPrecondition) << stale->status;
  auto read = Sync<v1::Job>([&](auto cb) { store_->GetJob(queue, job.job().id(), cb); });
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound) << read.status();
  EXPECT_EQ(CompletedCount(queue), 0);

  // Once the tombstone has expired, the Ack is NOT_FOUND like any unknown
  // job, trimmed or not.
  ASSERT_EQ(Integer({"ZADD", keys.AckedExpiry(), "1", job.job().id()}), 0);
  auto late = Ack(job);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->status.code(), absl::StatusCode::kNotFound) << late->status;
}

// An Ack after the lease ran out (not yet reaped) still leaves a tombstone
// for the grace.
TEST_F(CompletedRetentionStoreTest, TombstoneOfAnExpiredLeaseLastsTheGrace) {
  const std::string queue = "late";
  v1::ClaimedJob job = EnqueueAndClaim(queue, 0, /*lease_ms=*/1);
  absl::SleepFor(absl::Milliseconds(20));
  auto acked = Ack(job);
  ASSERT_TRUE(acked.ok() && acked->status.ok());
  const int64_t pttl = TombstoneTtlMs(queue, job.job().id());
  EXPECT_GT(pttl, kAckTombstoneGraceMs - 2000);
  EXPECT_LE(pttl, kAckTombstoneGraceMs);
}

// Entries expire by their own retention: a short one leaves the stats and
// GetJob at once (before any trim) and the index and the store at the next
// reaper pass, a long one stays.
TEST_F(CompletedRetentionStoreTest, TheIndexIsCountedAndTrimmedByExpiry) {
  const std::string queue = "mixed";
  v1::ClaimedJob short_job = EnqueueAndClaim(queue, 200);
  v1::ClaimedJob long_job = EnqueueAndClaim(queue, 60000);
  ASSERT_TRUE(Ack(long_job).ok());
  ASSERT_TRUE(Ack(short_job).ok());
  EXPECT_EQ(CompletedCount(queue), 2);
  absl::SleepFor(absl::Milliseconds(400));
  auto read = Sync<v1::Job>([&](auto cb) { store_->GetJob(queue, short_job.job().id(), cb); });
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound) << read.status();
  EXPECT_EQ(Integer({"ZCARD", KeysOf(queue).Completed()}), 2);  // not trimmed yet
  EXPECT_EQ(CompletedCount(queue), 1);
  ASSERT_TRUE(Sync<ReapOutcome>([&](auto cb) { store_->Reap(queue, 100, cb); }).ok());
  EXPECT_EQ(Integer({"ZCARD", KeysOf(queue).Completed()}), 1);
  EXPECT_FALSE(String({"ZSCORE", KeysOf(queue).Completed(), long_job.job().id()}).empty());
  EXPECT_FALSE(HasJobRecord(queue, short_job.job().id()));
  EXPECT_TRUE(HasJobRecord(queue, long_job.job().id()));
}

// A job record without the completed_retention field (a hand edit): the
// Ack gives it the store's retention.
TEST_F(CompletedRetentionStoreTest, ARecordWithoutTheFieldGetsTheStoreRetention) {
  const std::string queue = "old";
  v1::ClaimedJob job = EnqueueAndClaim(queue, 0);
  const std::string& id = job.job().id();
  WriteJobField(queue, id, "completed_retention", std::nullopt);
  ASSERT_EQ(JobField(queue, id, "completed_retention"), "");
  auto acked = Ack(job);
  ASSERT_TRUE(acked.ok() && acked->status.ok());
  EXPECT_EQ(JobField(queue, id, "state"), "completed");
  const int64_t finished = std::stoll(JobField(queue, id, "finished_at"));
  EXPECT_EQ(String({"ZSCORE", KeysOf(queue).Completed(), id}),
            std::to_string(finished + kDefaultRetentionMs));
}

}  // namespace
}  // namespace jobwire::store
