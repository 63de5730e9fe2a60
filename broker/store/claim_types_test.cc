// Claims filtered by job type (claim.lua, the ready set's index by type in
// lua/_lib.lua) against a real redis-server: a filtered claim finds its
// types' jobs wherever they sit in the ready set, in priority order across
// its types, reports the other types that are due, and every script that
// moves jobs in or out of the ready set keeps the index equal to it.
#include <future>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/store/job_store_test_util.h"

namespace jobwire::store {
namespace {

class ClaimTypesTest : public JobStoreTest {
 protected:
  // Stores `count` due jobs of `type` with `priority`, 1000 per enqueue.lua.
  void EnqueueMany(const std::string& queue, const std::string& type, int count, int priority = 0) {
    for (int done = 0; done < count;) {
      std::vector<v1::EnqueueRequest> jobs;
      for (; done < count && jobs.size() < 1000; ++done) {
        v1::EnqueueRequest r;
        r.set_queue(queue);
        r.set_type(type);
        r.set_priority(priority);
        r.set_max_attempts(3);
        r.set_backoff_base_ms(1000);
        r.set_backoff_max_ms(3600000);
        jobs.push_back(r);
      }
      auto out = Sync<std::vector<EnqueueOutcome>>(
          [&](auto cb) { store_->Enqueue(queue, jobs, cb); });
      ASSERT_TRUE(out.ok()) << out.status();
    }
  }

  static std::vector<std::string> Types(const ClaimOutcome& out) {
    std::vector<std::string> types;
    for (const auto& job : out.jobs) types.push_back(job.job().type());
    return types;
  }

  // The ready set and its index hold the same jobs: each ready id has the
  // member its record's type and its score give, and nothing else is there.
  void ExpectIndexMatchesReady(const std::string& queue, const std::string& step) {
    auto ready = redis_.Command("ZRANGE", KeysOf(queue).Ready(), "0", "-1", "WITHSCORES");
    auto index = redis_.Command("ZRANGE", KeysOf(queue).ReadyByType(), "0", "-1");
    ASSERT_TRUE(ready.ok() && index.ok());
    std::set<std::string> want;
    for (size_t i = 0; i + 1 < ready->elements.size(); i += 2) {
      const std::string& id = ready->elements[i].str;
      const std::string type = JobField(queue, id, "type");
      want.insert(absl::StrCat(absl::StrFormat("%03d", type.size()), type,
                               absl::StrFormat("%016d", std::stoll(ready->elements[i + 1].str)),
                               id));
    }
    std::set<std::string> have;
    for (const auto& member : index->elements) have.insert(member.str);
    EXPECT_EQ(have, want) << "after " << step;
  }
};

TEST_F(ClaimTypesTest, FindsItsTypeBehindAPileOfOtherJobs) {
  const std::string queue = "pile";
  EnqueueMany(queue, "a", 3000, /*priority=*/10);
  Enqueue(queue, "b", 0, 0);
  Enqueue(queue, "b", 5, 0);
  auto out = Claim(queue, 10, 30000, {"b"});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(Types(*out), (std::vector<std::string>{"b", "b"}));
  EXPECT_EQ(out->jobs[0].job().priority(), 5);
  EXPECT_FALSE(out->more);
  EXPECT_EQ(out->other_types, std::vector<std::string>{"a"});
  // The "a" jobs are untouched: an unfiltered claim takes them, and reports
  // no other types.
  auto rest = Claim(queue, 1);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(Types(*rest), std::vector<std::string>{"a"});
  EXPECT_TRUE(rest->more);
  EXPECT_TRUE(rest->other_types.empty());
  ExpectIndexMatchesReady(queue, "claims");
}

TEST_F(ClaimTypesTest, TakesPriorityOrderAcrossItsTypes) {
  const std::string queue = "order";
  Enqueue(queue, "a", 0, 0);
  Enqueue(queue, "b", 10, 0);
  Enqueue(queue, "c", 50, 0);
  Enqueue(queue, "a", 20, 0);
  Enqueue(queue, "b", 10, 0);  // same priority as the first "b": due later
  auto out = Claim(queue, 3, 30000, {"a", "b"});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<int> priorities;
  for (const auto& job : out->jobs) priorities.push_back(job.job().priority());
  EXPECT_EQ(priorities, (std::vector<int>{20, 10, 10}));
  EXPECT_LT(out->jobs[1].job().id(), out->jobs[2].job().id());
  EXPECT_TRUE(out->more);  // the "a" of priority 0
  EXPECT_EQ(out->other_types, std::vector<std::string>{"c"});
}

TEST_F(ClaimTypesTest, ATypeNamedTwiceYieldsEachJobOnce) {
  const std::string queue = "twice";
  Enqueue(queue, "a", 0, 0);
  Enqueue(queue, "a", 0, 0);
  auto out = Claim(queue, 10, 30000, {"a", "a"});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->jobs.size(), 2u);
  EXPECT_NE(out->jobs[0].job().id(), out->jobs[1].job().id());
}

// A layout-3 broker (during a rolling upgrade) pops `ready` without touching
// the index: the members it leaves behind never lease their jobs again, and
// a filtered claim drops them (its ZSCORE check).
TEST_F(ClaimTypesTest, MembersLeftBehindByAnOlderBrokerLeaseNothing) {
  const std::string queue = "stale";
  EnqueueMany(queue, "a", 5);
  // Jobs 1..3 leave `ready` the old way, their members stay behind.
  auto popped = redis_.Command("ZPOPMIN", KeysOf(queue).Ready(), "3");
  ASSERT_TRUE(popped.ok());
  ASSERT_EQ(popped->elements.size(), 6u);
  std::set<std::string> taken;
  for (size_t i = 0; i < popped->elements.size(); i += 2) taken.insert(popped->elements[i].str);

  // Claims of 1 and 2 jobs, taking turns, meet the stale members alone and
  // next to a ready job. A claim that meets only stale members leases
  // nothing and says more is due.
  std::set<std::string> leased;
  for (int i = 0; i < 10; ++i) {
    auto out = Claim(queue, 1 + i % 2, 30000, {"a"});
    ASSERT_TRUE(out.ok()) << out.status();
    for (const auto& job : out->jobs) {
      EXPECT_EQ(taken.count(job.job().id()), 0u) << job.job().id() << " was leased twice";
      leased.insert(job.job().id());
    }
    if (out->jobs.empty() && !out->more) break;
  }
  EXPECT_EQ(leased.size(), 2u);
  ExpectIndexMatchesReady(queue, "the claims");
}

TEST_F(ClaimTypesTest, TypesThatShareAPrefixStayApart) {
  const std::string queue = "prefix";
  const std::string long_type(256, 'x');
  const std::vector<std::string> types = {"a", "ab", "a:", std::string("a\x01", 2), "a b",
                                          long_type, "\xc3\xa9t\xc3\xa9"};
  for (const std::string& type : types) Enqueue(queue, type, 0, 0);
  for (const std::string& type : types) {
    auto out = Claim(queue, 10, 30000, {type});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Types(*out), std::vector<std::string>{type}) << type;
  }
  auto none = Claim(queue, 10);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->jobs.empty());
}

TEST_F(ClaimTypesTest, ScriptsThatMoveReadyJobsKeepTheIndex) {
  const std::string queue = "index";
  Enqueue(queue, "a", 0, 0);
  Enqueue(queue, "b", 3, 0);
  const std::string later = Enqueue(queue, "c", 0, /*delay_ms=*/150);
  const std::string cancelled = Enqueue(queue, "d", 0, 0);
  const std::string deleted = Enqueue(queue, "e", 0, 0);
  ExpectIndexMatchesReady(queue, "enqueue");

  ASSERT_TRUE(Sync<bool>([&](auto cb) { store_->Cancel(queue, cancelled, cb); }).ok());
  ExpectIndexMatchesReady(queue, "cancel");
  ASSERT_TRUE(Sync<bool>([&](auto cb) { admin_->DeleteJob(queue, deleted, cb); }).ok());
  ExpectIndexMatchesReady(queue, "delete_job");

  // An unfiltered claim takes "b" (priority 3) and gives it back.
  auto b = Claim(queue, 1);
  ASSERT_TRUE(b.ok() && b->jobs.size() == 1);
  ExpectIndexMatchesReady(queue, "unfiltered claim");
  ASSERT_TRUE(Sync<bool>([&](auto cb) {
                store_->Release(queue, b->jobs[0].job().id(), b->jobs[0].lease_token(), cb);
              }).ok());
  ExpectIndexMatchesReady(queue, "release");

  // A claim whose reply is lost, given back by its claim id.
  const std::string claim_id = JobStore::NewClaimId();
  ASSERT_TRUE(Sync<ClaimOutcome>([&](auto cb) {
                store_->Claim(queue, 10, 30000, "w", claim_id, {"a", "b"}, cb);
              }).ok());
  ExpectIndexMatchesReady(queue, "filtered claim");
  auto released = Sync<int64_t>([&](auto cb) { store_->ReleaseClaim(queue, claim_id, cb); });
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, 2);
  ExpectIndexMatchesReady(queue, "release_claim");

  // The scheduled "c" becomes ready inside a claim of another type.
  absl::SleepFor(absl::Milliseconds(200));
  auto a = Claim(queue, 1, 30000, {"a"});
  ASSERT_TRUE(a.ok() && a->jobs.size() == 1);
  EXPECT_EQ(a->other_types, (std::vector<std::string>{"b", "c"}));
  ExpectIndexMatchesReady(queue, "promotion");
  auto c = Claim(queue, 1, 30000, {"c"});
  ASSERT_TRUE(c.ok() && c->jobs.size() == 1);
  EXPECT_EQ(c->jobs[0].job().id(), later);

  // Dead, then retried.
  auto failed = Fail(c->jobs[0], /*non_retryable=*/true);
  ASSERT_TRUE(failed.ok() && failed->dead);
  ASSERT_TRUE(Sync<RetryBatch>([&](auto cb) { admin_->RetryDeadIds(queue, {later}, "", cb); }).ok());
  ExpectIndexMatchesReady(queue, "retry_dead");
  auto again = Claim(queue, 10, 30000, {"c"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Types(*again), std::vector<std::string>{"c"});

  auto gone = Sync<std::pair<int64_t, bool>>(
      [&](auto cb) { admin_->DeleteQueue(queue, /*force=*/true, 100, cb); });
  ASSERT_TRUE(gone.ok()) << gone.status();
  auto exists = redis_.Command("EXISTS", KeysOf(queue).ReadyByType());
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(exists->integer, 0);
}

TEST_F(ClaimTypesTest, HandOffTakesOnlyTheWaitingStreamsTypes) {
  const std::string queue = "handoff";
  std::vector<v1::EnqueueRequest> jobs(3);
  const std::vector<std::string> types = {"a", "b", "a"};
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].set_queue(queue);
    jobs[i].set_type(types[i]);
    jobs[i].set_max_attempts(3);
    jobs[i].set_backoff_base_ms(1000);
    jobs[i].set_backoff_max_ms(3600000);
  }
  std::promise<absl::StatusOr<ClaimOutcome>> claimed;
  HandOff hand_off;
  hand_off.max_jobs = 10;
  hand_off.types = {"b"};
  hand_off.lease_ms = 30000;
  hand_off.worker_id = "w";
  hand_off.claim_id = JobStore::NewClaimId();
  hand_off.claimed = [&](absl::StatusOr<ClaimOutcome> out) { claimed.set_value(std::move(out)); };
  auto stored = Sync<std::vector<EnqueueOutcome>>(
      [&](auto cb) { store_->Enqueue(queue, jobs, cb, std::move(hand_off)); });
  ASSERT_TRUE(stored.ok()) << stored.status();
  auto out = claimed.get_future().get();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Types(*out), std::vector<std::string>{"b"});
  EXPECT_EQ(out->other_types, std::vector<std::string>{"a"});
  ExpectIndexMatchesReady(queue, "hand-off");
}

TEST_F(ClaimTypesTest, LayoutThreeDataIsIndexedOnConnect) {
  const std::string queue = "upgrade";
  Enqueue(queue, "a", 0, 0);
  Enqueue(queue, "b", 0, 0);
  // Data as a layout 3 broker left it: no index, marker 3.
  ASSERT_TRUE(redis_.Command("DEL", KeysOf(queue).ReadyByType()).ok());
  ASSERT_TRUE(redis_.Command("SET", Keys::Layout(options_.key_prefix), "3").ok());
  auto before = Claim(queue, 10, 30000, {"b"});
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->jobs.empty());

  store_->CheckRedisSettings();
  for (int i = 0; i < 100; ++i) {
    auto marker = redis_.Command("GET", Keys::Layout(options_.key_prefix));
    if (marker.ok() && marker->str == "4") break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  auto marker = redis_.Command("GET", Keys::Layout(options_.key_prefix));
  ASSERT_TRUE(marker.ok());
  EXPECT_EQ(marker->str, "4");
  ExpectIndexMatchesReady(queue, "upgrade");
  auto after = Claim(queue, 10, 30000, {"b"});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(Types(*after), std::vector<std::string>{"b"});
}

}  // namespace
}  // namespace jobwire::store
