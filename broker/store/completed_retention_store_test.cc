// Per-job completed retention against a real redis-server (enqueue.lua
// stores it, ack.lua applies it): the hash's TTL and the completed index's
// score (expiry), deletion on ack for retention 0 with its tombstone, the
// index trimmed by expiry (ack.lua, reap.lua) and counted by expiry
// (queue_stats.lua), and a job hash of layout 1 without the field.
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
  int64_t CompletedCount(const std::string& queue) {
    auto stats = Sync<v1::QueueStats>([&](auto cb) { admin_->Stats(queue, cb); });
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? stats->completed() : -1;
  }
};

// The retention a job gets (its own, else the store's) is its hash's TTL
// after the Ack, and its completed-index score is finish time + retention.
TEST_F(CompletedRetentionStoreTest, RetentionIsTheHashTtlAndTheIndexScoreIsTheExpiry) {
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
    const std::string key = KeysOf(queue).Job(job.job().id());
    EXPECT_EQ(String({"HGET", key, "completed_retention"}), std::to_string(c.want_ms));
    auto acked = Ack(job);
    ASSERT_TRUE(acked.ok() && acked->status.ok());
    const int64_t pttl = Integer({"PTTL", key});
    EXPECT_GT(pttl, c.want_ms - 2000);
    EXPECT_LE(pttl, c.want_ms);
    const int64_t finished = std::stoll(String({"HGET", key, "finished_at"}));
    EXPECT_EQ(String({"ZSCORE", KeysOf(queue).Completed(), job.job().id()}),
              std::to_string(finished + c.want_ms));
    EXPECT_EQ(CompletedCount(queue), 1);
  }
}

// Retention 0: the Ack deletes the hash and indexes nothing; a tombstone
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
  EXPECT_EQ(Integer({"EXISTS", keys.Job(job.job().id())}), 0);
  EXPECT_EQ(Integer({"ZCARD", keys.Completed()}), 0);
  EXPECT_EQ(Integer({"ZCARD", keys.Active()}), 0);
  EXPECT_EQ(String({"GET", keys.Acked(job.job().id())}), job.lease_token());
  const int64_t pttl = Integer({"PTTL", keys.Acked(job.job().id())});
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

  // Once the tombstone is gone, the Ack is NOT_FOUND like any unknown job.
  ASSERT_EQ(Integer({"DEL", keys.Acked(job.job().id())}), 1);
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
  const int64_t pttl = Integer({"PTTL", KeysOf(queue).Acked(job.job().id())});
  EXPECT_GT(pttl, kAckTombstoneGraceMs - 2000);
  EXPECT_LE(pttl, kAckTombstoneGraceMs);
}

// Entries expire by their own retention: a short one leaves the stats at
// once (before any trim) and the index at the next reaper pass, a long one
// stays.
TEST_F(CompletedRetentionStoreTest, TheIndexIsCountedAndTrimmedByExpiry) {
  const std::string queue = "mixed";
  v1::ClaimedJob short_job = EnqueueAndClaim(queue, 200);
  v1::ClaimedJob long_job = EnqueueAndClaim(queue, 60000);
  ASSERT_TRUE(Ack(long_job).ok());
  ASSERT_TRUE(Ack(short_job).ok());
  EXPECT_EQ(CompletedCount(queue), 2);
  absl::SleepFor(absl::Milliseconds(400));
  EXPECT_EQ(Integer({"EXISTS", KeysOf(queue).Job(short_job.job().id())}), 0);
  EXPECT_EQ(Integer({"ZCARD", KeysOf(queue).Completed()}), 2);  // not trimmed yet
  EXPECT_EQ(CompletedCount(queue), 1);
  ASSERT_TRUE(Sync<ReapOutcome>([&](auto cb) { store_->Reap(queue, 100, cb); }).ok());
  EXPECT_EQ(Integer({"ZCARD", KeysOf(queue).Completed()}), 1);
  EXPECT_FALSE(String({"ZSCORE", KeysOf(queue).Completed(), long_job.job().id()}).empty());
}

// A job hash of layout 1 has no completed_retention field: the Ack gives it
// the store's retention.
TEST_F(CompletedRetentionStoreTest, AHashWithoutTheFieldGetsTheStoreRetention) {
  const std::string queue = "old";
  v1::ClaimedJob job = EnqueueAndClaim(queue, 0);
  const std::string key = KeysOf(queue).Job(job.job().id());
  ASSERT_EQ(Integer({"HDEL", key, "completed_retention"}), 1);
  auto acked = Ack(job);
  ASSERT_TRUE(acked.ok() && acked->status.ok());
  EXPECT_EQ(String({"HGET", key, "state"}), "completed");
  EXPECT_GT(Integer({"PTTL", key}), kDefaultRetentionMs - 2000);
}

}  // namespace
}  // namespace jobwire::store
