// Layout 3 keeps no key TTLs (docs/redis-layout.md, "Expiry without key
// TTLs"): completed jobs past their retention and idempotency keys past
// their window are deleted by bounded trims through their expiry indexes,
// against a real redis-server; and the reaper pass's idle check, which
// runs only when asked.
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "broker/store/job_store_test_util.h"
#include "gtest/gtest.h"

namespace jobwire::store {
namespace {

class CompletedRetentionTest : public JobStoreTest {
 protected:
  CompletedRetentionTest() { options_.completed_retention_ms = 200; }
};

// With no later Ack to trim it, the reaper's pass deletes the completed jobs
// past their retention: their index entries, records and results.
TEST_F(CompletedRetentionTest, ReapTrimsTheCompletedJobsOfAQuietQueue) {
  const std::string queue = "quiet";
  Enqueue(queue, "t", 0, 0);
  auto claimed = Claim(queue, 1);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->jobs.size(), 1u);
  ASSERT_TRUE(Ack(claimed->jobs[0]).ok());
  const std::string id = claimed->jobs[0].job().id();
  ASSERT_EQ(redis_.Command("ZCARD", KeysOf(queue).Completed())->integer, 1);
  ASSERT_TRUE(HasJobRecord(queue, id));
  absl::SleepFor(absl::Milliseconds(400));
  ASSERT_TRUE(Sync<ReapOutcome>([&](auto cb) { store_->Reap(queue, 100, cb); }).ok());
  EXPECT_EQ(redis_.Command("ZCARD", KeysOf(queue).Completed())->integer, 0);
  EXPECT_FALSE(HasJobRecord(queue, id));
  EXPECT_EQ(redis_.Command("HLEN", KeysOf(queue).Results())->integer, 0);
}

// A backlog of expired completed jobs is worked off over passes: one reaper
// pass deletes at most 1000 (TRIM_PER_REAP in lua/_lib.lua), so one call
// stays short however many there are.
TEST_F(CompletedRetentionTest, OneReapPassDeletesAtMost1000CompletedJobs) {
  const std::string queue = "backlog";
  constexpr int kJobs = 1500;
  std::vector<v1::EnqueueRequest> batch(kJobs);
  for (auto& r : batch) {
    r.set_queue(queue);
    r.set_type("t");
    r.set_max_attempts(3);
    r.set_backoff_base_ms(1000);
    r.set_backoff_max_ms(1000);
  }
  ASSERT_TRUE(Sync<std::vector<EnqueueOutcome>>([&](auto cb) { store_->Enqueue(queue, batch, cb); }).ok());
  // Acked in one call, so that the ack's own trim (up to 100) finds nothing
  // expired yet.
  auto claimed = Claim(queue, kJobs);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->jobs.size(), static_cast<size_t>(kJobs));
  std::vector<v1::AckRequest> acks(kJobs);
  std::vector<const v1::AckRequest*> refs;
  for (int i = 0; i < kJobs; ++i) {
    acks[i].set_queue(queue);
    acks[i].set_job_id(claimed->jobs[i].job().id());
    acks[i].set_lease_token(claimed->jobs[i].lease_token());
    refs.push_back(&acks[i]);
  }
  ASSERT_TRUE(Sync<std::vector<AckOutcome>>([&](auto cb) { store_->Ack(queue, refs, cb); }).ok());
  absl::SleepFor(absl::Milliseconds(400));
  ASSERT_TRUE(Sync<ReapOutcome>([&](auto cb) { store_->Reap(queue, 100, cb); }).ok());
  EXPECT_EQ(redis_.Command("ZCARD", KeysOf(queue).Completed())->integer, kJobs - 1000);
  EXPECT_EQ(redis_.Command("HLEN", KeysOf(queue).Jobs())->integer, kJobs - 1000);
  ASSERT_TRUE(Sync<ReapOutcome>([&](auto cb) { store_->Reap(queue, 100, cb); }).ok());
  EXPECT_EQ(redis_.Command("ZCARD", KeysOf(queue).Completed())->integer, 0);
  EXPECT_EQ(redis_.Command("EXISTS", KeysOf(queue).Jobs())->integer, 0);
}

class ShortDedupWindowTest : public JobStoreTest {
 protected:
  ShortDedupWindowTest() { options_.dedup_window_ms = 200; }

  EnqueueOutcome EnqueueWithKey(const std::string& queue, const std::string& key) {
    v1::EnqueueRequest r;
    r.set_queue(queue);
    r.set_type("t");
    r.set_idempotency_key(key);
    r.set_max_attempts(3);
    r.set_backoff_base_ms(1000);
    r.set_backoff_max_ms(1000);
    auto out = Sync<std::vector<EnqueueOutcome>>([&](auto cb) { store_->Enqueue(queue, {r}, cb); });
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? out->at(0) : EnqueueOutcome{};
  }
};

// An idempotency key holds its job id for the dedup window, then is free,
// whether or not a trim has removed it yet; the reaper's pass trims it.
TEST_F(ShortDedupWindowTest, AnIdempotencyKeyIsFreeOnceItsWindowEnds) {
  const std::string queue = "dedup";
  const EnqueueOutcome first = EnqueueWithKey(queue, "k");
  EXPECT_FALSE(first.duplicate);
  const EnqueueOutcome repeat = EnqueueWithKey(queue, "k");
  EXPECT_TRUE(repeat.duplicate);
  EXPECT_EQ(repeat.job_id, first.job_id);
  EnqueueWithKey(queue, "other");
  absl::SleepFor(absl::Milliseconds(400));
  // Both expired; the reaper's pass trims them.
  ASSERT_TRUE(Sync<ReapOutcome>([&](auto cb) { store_->Reap(queue, 100, cb); }).ok());
  EXPECT_EQ(redis_.Command("HLEN", KeysOf(queue).Idempotency())->integer, 0);
  EXPECT_EQ(redis_.Command("ZCARD", KeysOf(queue).IdempotencyExpiry())->integer, 0);
  const EnqueueOutcome later = EnqueueWithKey(queue, "k");
  EXPECT_FALSE(later.duplicate);
  EXPECT_NE(later.job_id, first.job_id);
  // Expired but not trimmed yet (no pass since): free all the same.
  absl::SleepFor(absl::Milliseconds(400));
  ASSERT_EQ(redis_.Command("HGET", KeysOf(queue).Idempotency(), "k")->str, later.job_id);
  const EnqueueOutcome again = EnqueueWithKey(queue, "k");
  EXPECT_FALSE(again.duplicate);
  EXPECT_NE(again.job_id, later.job_id);
}

class IdleCheckTest : public JobStoreTest {
 protected:
  IdleCheckTest() { options_.idle_queue_ttl_ms = 200; }
};

// The idle check runs only in the passes that ask for it (the LeaseReaper
// asks once a minute): without it a pass neither reads nor moves the
// queue's empty-since mark, and reports no queue idle however long it has
// been empty.
TEST_F(IdleCheckTest, OnlyAPassThatAsksChecksWhetherTheQueueIsIdle) {
  const std::string queue = "quiet";
  const std::string mark = KeysOf(queue).Registered();
  ASSERT_TRUE(redis_.Command("SET", mark, "1").ok());
  auto reap = [&](bool check_idle) {
    return Sync<ReapOutcome>([&](auto cb) { store_->Reap(queue, 100, cb, check_idle); });
  };
  auto without = reap(false);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE(without->idle);
  EXPECT_EQ(redis_.Command("GET", mark)->str, "1");  // not marked empty
  auto first = reap(true);  // finds it empty: the mark becomes the time
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->idle);
  const std::string since = redis_.Command("GET", mark)->str;
  EXPECT_NE(since, "1");
  absl::SleepFor(absl::Milliseconds(300));  // past the TTL
  auto unchecked = reap(false);
  ASSERT_TRUE(unchecked.ok());
  EXPECT_FALSE(unchecked->idle);
  EXPECT_EQ(redis_.Command("GET", mark)->str, since);
  auto checked = reap(true);
  ASSERT_TRUE(checked.ok());
  EXPECT_TRUE(checked->idle);
}

}  // namespace
}  // namespace jobwire::store
