// The scripts against a real redis-server where the state is not the happy
// path: a job hash that is missing or lacks fields, a reply that would be
// huge, a quiet queue whose completed index outlives its jobs, a Fail
// repeated after the job moved on, a RetryDead scan racing jobs that die
// again. Each case states the state before and what must hold after.
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "broker/store/job_store_test_util.h"
#include "broker/store/script_sources.h"
#include "gtest/gtest.h"

namespace jobwire::store {
namespace {

class ScriptSafetyTest : public JobStoreTest {
 public:
  // A field of a job record ("" when missing), read straight from Redis.
  std::string Field(const std::string& queue, const std::string& id, const std::string& field) {
    return JobField(queue, id, field);
  }
  bool InSet(const std::string& key, const std::string& id) {
    auto r = redis_.Command("ZSCORE", key, id);
    return r.ok() && !r->str.empty();
  }
  bool Exists(const std::string& key) {
    auto r = redis_.Command("EXISTS", key);
    return r.ok() && r->integer == 1;
  }
  void Damage(const std::vector<std::string>& argv) { ASSERT_TRUE(redis_.CommandArgv(argv).ok()); }
};

// One damaged job next to a sound one: the script must not fail, must not
// write a hash that is missing, must leave the damaged job in a set where an
// operator sees it (or in none when its hash is gone), and must still settle
// the sound job.
struct DamageCase {
  std::string name;
  // Given the queue and the two job ids (damaged first), damages the first
  // job and runs the script; returns what the script answered.
  std::function<absl::Status(ScriptSafetyTest&, const std::string&, const std::string&,
                             const std::string&)>
      run;
  std::function<void(ScriptSafetyTest&, const std::string&, const std::string&,
                     const std::string&)>
      check;
};

TEST_F(ScriptSafetyTest, DamagedJobHashesAreSkippedAndTheRestIsSettled) {
  const std::vector<DamageCase> cases = {
      {"reap_missing_hash",
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad, const std::string&) {
         auto claimed = t.Claim(q, 2, /*lease_ms=*/1);
         if (!claimed.ok() || claimed->jobs.size() != 2) return absl::InternalError("claim");
         t.Damage({"HDEL", t.KeysOf(q).Jobs(), bad});
         absl::SleepFor(absl::Milliseconds(10));
         return Sync<ReapOutcome>([&](auto cb) { t.store_->Reap(q, 100, cb); }).status();
       },
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad,
          const std::string& good) {
         EXPECT_FALSE(t.HasJobRecord(q, bad));
         EXPECT_FALSE(t.InSet(t.KeysOf(q).Active(), bad));
         EXPECT_EQ(t.Field(q, good, "state"), "pending");
         EXPECT_TRUE(t.InSet(t.KeysOf(q).Scheduled(), good));
       }},
      {"reap_partial_hash",
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad, const std::string&) {
         auto claimed = t.Claim(q, 2, /*lease_ms=*/1);
         if (!claimed.ok() || claimed->jobs.size() != 2) return absl::InternalError("claim");
         t.WriteJobField(q, bad, "max_attempts", std::nullopt);
         absl::SleepFor(absl::Milliseconds(10));
         return Sync<ReapOutcome>([&](auto cb) { t.store_->Reap(q, 100, cb); }).status();
       },
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad,
          const std::string& good) {
         EXPECT_EQ(t.Field(q, bad, "state"), "dead");
         EXPECT_TRUE(t.InSet(t.KeysOf(q).Dead(), bad));
         EXPECT_TRUE(absl::StrContains(t.Field(q, bad, "error"), "max_attempts"));
         EXPECT_FALSE(t.InSet(t.KeysOf(q).Active(), bad));
         EXPECT_EQ(t.Field(q, good, "state"), "pending");
       }},
      {"claim_missing_hash",
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad, const std::string&) {
         t.Damage({"HDEL", t.KeysOf(q).Jobs(), bad});
         auto claimed = t.Claim(q, 2);
         if (!claimed.ok()) return claimed.status();
         if (claimed->jobs.size() != 1) return absl::InternalError("claimed not 1 job");
         return absl::OkStatus();
       },
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad,
          const std::string& good) {
         EXPECT_FALSE(t.HasJobRecord(q, bad));  // not created by the claim
         EXPECT_FALSE(t.InSet(t.KeysOf(q).Ready(), bad));
         EXPECT_FALSE(t.InSet(t.KeysOf(q).Active(), bad));
         EXPECT_EQ(t.Field(q, good, "state"), "active");
       }},
      {"claim_promotes_partial_scheduled_hash",
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad, const std::string&) {
         // Both due later; the damaged one is made due at once by hand.
         t.Damage({"ZREM", t.KeysOf(q).Ready(), bad});
         t.Damage({"ZADD", t.KeysOf(q).Scheduled(), "0", bad});
         t.WriteJobField(q, bad, "priority", std::nullopt);
         auto claimed = t.Claim(q, 2);
         if (!claimed.ok()) return claimed.status();
         if (claimed->jobs.size() != 1) return absl::InternalError("claimed not 1 job");
         return absl::OkStatus();
       },
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad,
          const std::string& good) {
         EXPECT_EQ(t.Field(q, bad, "state"), "dead");
         EXPECT_TRUE(t.InSet(t.KeysOf(q).Dead(), bad));
         EXPECT_FALSE(t.InSet(t.KeysOf(q).Scheduled(), bad));
         EXPECT_EQ(t.Field(q, good, "state"), "active");
       }},
      {"release_partial_hash",
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad, const std::string&) {
         auto claimed = t.Claim(q, 2);
         if (!claimed.ok() || claimed->jobs.size() != 2) return absl::InternalError("claim");
         t.WriteJobField(q, bad, "priority", std::nullopt);
         for (const auto& job : claimed->jobs) {
           auto released = Sync<bool>([&](auto cb) {
             t.store_->Release(q, job.job().id(), job.lease_token(), cb);
           });
           if (job.job().id() == bad &&
               released.status().code() != absl::StatusCode::kDataLoss) {
             return absl::InternalError(absl::StrCat("damaged release: ", released.status().ToString()));
           }
           if (job.job().id() != bad && !released.ok()) return released.status();
         }
         return absl::OkStatus();
       },
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad,
          const std::string& good) {
         // Nothing written to the damaged job: its lease expires instead.
         EXPECT_EQ(t.Field(q, bad, "state"), "active");
         EXPECT_EQ(t.Field(q, bad, "attempts"), "1");
         EXPECT_TRUE(t.InSet(t.KeysOf(q).Active(), bad));
         EXPECT_EQ(t.Field(q, good, "state"), "pending");
         EXPECT_EQ(t.Field(q, good, "attempts"), "0");
       }},
      {"fail_partial_hash",
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad, const std::string&) {
         auto claimed = t.Claim(q, 2);
         if (!claimed.ok() || claimed->jobs.size() != 2) return absl::InternalError("claim");
         t.WriteJobField(q, bad, "backoff_base", std::nullopt);
         for (const auto& job : claimed->jobs) {
           auto failed = t.Fail(job);
           if (!failed.ok()) return failed.status();
         }
         return absl::OkStatus();
       },
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad,
          const std::string& good) {
         EXPECT_EQ(t.Field(q, bad, "state"), "dead");
         EXPECT_TRUE(t.InSet(t.KeysOf(q).Dead(), bad));
         EXPECT_FALSE(t.InSet(t.KeysOf(q).Active(), bad));
         EXPECT_EQ(t.Field(q, good, "state"), "pending");
       }},
      {"retry_dead_partial_hash",
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad, const std::string&) {
         auto claimed = t.Claim(q, 2);
         if (!claimed.ok() || claimed->jobs.size() != 2) return absl::InternalError("claim");
         for (const auto& job : claimed->jobs) {
           if (!t.Fail(job, /*non_retryable=*/true).ok()) return absl::InternalError("fail");
         }
         t.WriteJobField(q, bad, "priority", std::nullopt);
         auto batch = Sync<RetryBatch>([&](auto cb) { t.admin_->RetryDeadScan(q, "", 0, 10, "", cb); });
         if (!batch.ok()) return batch.status();
         while (batch.ok() && batch->next_offset >= 0) {
           const std::string bound = batch->bound;
           const int64_t offset = batch->next_offset;
           batch = Sync<RetryBatch>(
               [&](auto cb) { t.admin_->RetryDeadScan(q, "", offset, 10, bound, cb); });
         }
         return batch.status();
       },
       [](ScriptSafetyTest& t, const std::string& q, const std::string& bad,
          const std::string& good) {
         EXPECT_EQ(t.Field(q, bad, "state"), "dead");
         EXPECT_TRUE(t.InSet(t.KeysOf(q).Dead(), bad));
         EXPECT_EQ(t.Field(q, good, "state"), "pending");
         EXPECT_TRUE(t.InSet(t.KeysOf(q).Ready(), good));
       }},
  };
  for (const DamageCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string queue = "damage_" + c.name;
    // The damaged job is claimed first: a higher priority.
    const std::string bad = Enqueue(queue, "t", 5, 0);
    const std::string good = Enqueue(queue, "t", 0, 0);
    absl::Status ran = c.run(*this, queue, bad, good);
    EXPECT_TRUE(ran.ok()) << ran;
    c.check(*this, queue, bad, good);
  }
}

// A claim stops at about kMaxClaimBytes of payload (at least one job,
// whatever its size), and says that due jobs are left.
TEST_F(ScriptSafetyTest, ClaimIsBoundedByBytes) {
  const std::string queue = "big";
  const std::string mib(1 << 20, 'x');
  for (int i = 0; i < 10; ++i) Enqueue(queue, "t", 0, 0, 3, 1000, 3600000, mib);
  auto first = Claim(queue, 10);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->jobs.size(), static_cast<size_t>(kMaxClaimBytes / (1 << 20)));
  EXPECT_TRUE(first->more);

  const std::string queue2 = "huge";
  Enqueue(queue2, "t", 0, 0, 3, 1000, 3600000, std::string(kMaxClaimBytes + 1, 'y'));
  Enqueue(queue2, "t", 0, 0);
  auto huge = Claim(queue2, 10);
  ASSERT_TRUE(huge.ok()) << huge.status();
  EXPECT_EQ(huge->jobs.size(), 1u);
  EXPECT_TRUE(huge->more);
  auto rest = Claim(queue2, 10);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->jobs.size(), 1u);
  EXPECT_FALSE(rest->more);
}

// An admin page stops at its byte bound too, and the next page goes on from
// there.
TEST_F(ScriptSafetyTest, ListPageIsBoundedByBytes) {
  const std::string queue = "listed";
  const std::string mib(1 << 20, 'x');
  for (int i = 0; i < 5; ++i) Enqueue(queue, "t", 0, 0, 3, 1000, 3600000, mib);
  JobPageRequest request;
  request.state = v1::PENDING;
  request.page_size = 50;
  request.scan_limit = 50;
  request.newest_first = false;
  request.max_bytes = 2 << 20;
  auto page = Sync<JobPage>([&](auto cb) { admin_->ListJobs(queue, request, cb); });
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->jobs.size(), 2u);
  EXPECT_EQ(page->next_offset, 2);
}

class CompletedRetentionTest : public ScriptSafetyTest {
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

class ShortDedupWindowTest : public ScriptSafetyTest {
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

// A lint next to the runtime check: in lua/*.lua, the key argument of a
// redis.call / redis.pcall is never built in place (no "..") nor taken from
// ARGV (PUBLISH's channel aside), and no expression appends to a declared
// key (KEYS[i] .. x). Keys passed through a local variable are left to the
// runtime check.
TEST_F(ScriptSafetyTest, NoScriptBuildsAKeyName) {
  for (const LuaSource& source : LuaSources()) {
    SCOPED_TRACE(std::string(source.name));
    const std::string text(source.text);
    std::vector<std::string> lines = absl::StrSplit(text, '\n');
    for (const std::string& raw : lines) {
      const std::string line = raw.substr(0, raw.find("--"));  // code only
      EXPECT_FALSE(line.find("KEYS[") != std::string::npos &&
                   (line.find("] ..") != std::string::npos))
          << "appends to a declared key: " << raw;
    }
    for (const char* call : {"redis.call(", "redis.pcall("}) {
      for (size_t at = text.find(call); at != std::string::npos; at = text.find(call, at + 1)) {
        // The argument after the command name, up to the next ',' or ')'.
        const size_t comma = text.find(',', at);
        const size_t close = text.find(')', at);
        if (comma == std::string::npos || (close != std::string::npos && close < comma)) continue;
        const std::string command = text.substr(at + strlen(call), comma - at - strlen(call));
        if (command == "'SPUBLISH'") continue;  // a shard channel, not a key
        size_t end = comma + 1;
        int depth = 0;
        for (; end < text.size(); ++end) {
          const char c = text[end];
          if (c == '(' || c == '[' || c == '{') ++depth;
          if (c == ')' || c == ']' || c == '}') {
            if (depth == 0) break;
            --depth;
          }
          if (c == ',' && depth == 0) break;
        }
        const std::string key = text.substr(comma + 1, end - comma - 1);
        EXPECT_EQ(key.find(".."), std::string::npos) << "a key built in place: " << key;
        EXPECT_EQ(key.find("ARGV"), std::string::npos) << "a key from ARGV: " << key;
      }
    }
  }
}

// Every store test runs its scripts with the declared-keys check
// (job_store_test_util.h); this shows that the check does fail a script on
// a key missing from KEYS, and passes one whose keys are all declared.
TEST_F(ScriptSafetyTest, TheDeclaredKeysCheckFailsAnUndeclaredKey) {
  std::string check;
  for (const LuaSource& source : LuaSources()) {
    if (source.name == "_check_keys") check = std::string(source.text);
  }
  ASSERT_FALSE(check.empty());
  auto declared = redis_.CommandArgv(
      {"EVAL", check + "\nreturn redis.call('HSET', KEYS[1], 'f', 'v')", "1", "jw:{q}:jobs"});
  ASSERT_TRUE(declared.ok());
  EXPECT_FALSE(declared->is_error()) << declared->str;
  auto undeclared = redis_.CommandArgv(
      {"EVAL", check + "\nreturn redis.call('HGET', KEYS[1] .. ':x', 'f')", "1", "jw:{q}:jobs"});
  ASSERT_TRUE(undeclared.ok());
  EXPECT_TRUE(undeclared->is_error());
  EXPECT_TRUE(absl::StrContains(undeclared->str, "undeclared key jw:{q}:jobs:x")) << undeclared->str;
  auto unknown = redis_.CommandArgv({"EVAL", check + "\nreturn redis.call('GETDEL', KEYS[1])", "1",
                                     "jw:{q}:jobs"});
  ASSERT_TRUE(unknown.ok());
  EXPECT_TRUE(unknown->is_error());
  EXPECT_TRUE(absl::StrContains(unknown->str, "no rule for command GETDEL")) << unknown->str;
}

// tests/job_record.h reads and damages records by field number: its field
// list is lua/_lib.lua's JOB_FIELDS.
TEST_F(ScriptSafetyTest, TheTestsJobRecordFieldsAreTheScriptsFields) {
  std::string lib;
  for (const LuaSource& source : LuaSources()) {
    if (source.name == "_lib") lib = std::string(source.text);
  }
  const size_t from = lib.find("local JOB_FIELDS = {");
  ASSERT_NE(from, std::string::npos);
  const std::string list = lib.substr(from, lib.find('}', from) - from);
  std::vector<std::string> fields;
  for (size_t at = list.find('\''); at != std::string::npos; at = list.find('\'', at + 1)) {
    const size_t end = list.find('\'', at + 1);
    fields.push_back(list.substr(at + 1, end - at - 1));
    at = end;
  }
  ASSERT_EQ(fields.size(), testing::kJobRecordFields.size());
  for (size_t i = 0; i < fields.size(); ++i) EXPECT_EQ(fields[i], testing::kJobRecordFields[i]);
}

// A Fail repeated with the same token answers what the first one answered,
// whatever happened to the job since, changes nothing, and says it is a
// repeat; so does a repeated Ack.
struct RepeatCase {
  std::string name;
  bool non_retryable;
  // What happens to the job between the Fail and its repeat.
  std::function<void(ScriptSafetyTest&, const std::string&, const std::string&)> meanwhile;
  std::string want_state;  // the job's state after the repeat
};

TEST_F(ScriptSafetyTest, ARepeatedFailAnswersItsFirstOutcome) {
  const std::vector<RepeatCase> cases = {
      {"nothing_happened", false, [](ScriptSafetyTest&, const std::string&, const std::string&) {},
       "pending"},
      {"retry_claimed_again", false,
       [](ScriptSafetyTest& t, const std::string& q, const std::string& id) {
         t.Damage({"ZADD", t.KeysOf(q).Scheduled(), "0", id});  // due now
         auto again = t.Claim(q, 1);
         ASSERT_TRUE(again.ok());
         ASSERT_EQ(again->jobs.size(), 1u);
       },
       "active"},
      {"retry_cancelled", false,
       [](ScriptSafetyTest& t, const std::string& q, const std::string& id) {
         ASSERT_TRUE(Sync<bool>([&](auto cb) { t.store_->Cancel(q, id, cb); }).ok());
       },
       "dead"},
      {"dead_then_redriven", true,
       [](ScriptSafetyTest& t, const std::string& q, const std::string& id) {
         auto moved = Sync<RetryBatch>([&](auto cb) { t.admin_->RetryDeadIds(q, {id}, "", cb); });
         ASSERT_TRUE(moved.ok());
         ASSERT_EQ(moved->moved, 1);
       },
       "pending"},
  };
  for (const RepeatCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string queue = "repeat_" + c.name;
    const std::string id = Enqueue(queue, "t", 0, 0);
    auto claimed = Claim(queue, 1);
    ASSERT_TRUE(claimed.ok());
    ASSERT_EQ(claimed->jobs.size(), 1u);
    auto first = Fail(claimed->jobs[0], c.non_retryable);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_FALSE(first->repeat);
    c.meanwhile(*this, queue, id);
    const std::string attempts = Field(queue, id, "attempts");
    auto repeated = Fail(claimed->jobs[0], c.non_retryable);
    ASSERT_TRUE(repeated.ok()) << repeated.status();
    EXPECT_TRUE(repeated->repeat);
    EXPECT_EQ(repeated->dead, first->dead);
    EXPECT_EQ(repeated->next_attempt_at_ms, first->next_attempt_at_ms);
    EXPECT_EQ(Field(queue, id, "state"), c.want_state);
    EXPECT_EQ(Field(queue, id, "attempts"), attempts);
  }

  const std::string queue = "repeat_ack";
  Enqueue(queue, "t", 0, 0);
  auto claimed = Claim(queue, 1);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->jobs.size(), 1u);
  auto acked = Ack(claimed->jobs[0]);
  ASSERT_TRUE(acked.ok() && acked->status.ok());
  EXPECT_FALSE(acked->repeat);
  auto again = Ack(claimed->jobs[0]);
  ASSERT_TRUE(again.ok() && again->status.ok());
  EXPECT_TRUE(again->repeat);
}

// RetryDead over the whole dead set, while every job it retries dies again
// at once (as a broken handler would make it): each job is retried once and
// the scan ends.
TEST_F(ScriptSafetyTest, RetryDeadScanCoversTheDeadSetAsItWasWhenItStarted) {
  const std::string queue = "redrive";
  constexpr int kJobs = 250;
  constexpr int kBatch = 40;
  for (int i = 0; i < kJobs; ++i) Enqueue(queue, "t", 0, 0);
  auto kill_all_pending = [&] {
    for (;;) {
      auto claimed = Claim(queue, 1000);
      ASSERT_TRUE(claimed.ok());
      if (claimed->jobs.empty()) return;
      for (const auto& job : claimed->jobs) ASSERT_TRUE(Fail(job, /*non_retryable=*/true).ok());
    }
  };
  kill_all_pending();
  ASSERT_EQ(redis_.Command("ZCARD", KeysOf(queue).Dead())->integer, kJobs);

  int64_t moved = 0, offset = 0;
  std::string bound;
  int calls = 0;
  for (; calls < 100; ++calls) {
    auto batch = Sync<RetryBatch>(
        [&](auto cb) { admin_->RetryDeadScan(queue, "", offset, kBatch, bound, cb); });
    ASSERT_TRUE(batch.ok()) << batch.status();
    moved += batch->moved;
    kill_all_pending();  // the retried jobs die again during the scan
    if (batch->next_offset < 0) break;
    offset = batch->next_offset;
    bound = batch->bound;
  }
  EXPECT_LT(calls, 100) << "the scan did not end";
  EXPECT_EQ(moved, kJobs);
}

// Each script's first line is its policy over Redis' maxmemory
// (docs/guarantees.md, "Redis memory limit"); this table is that policy.
TEST_F(ScriptSafetyTest, EveryScriptDeclaresItsMemoryPolicyOnItsFirstLine) {
  const std::string create_work = "#!lua";
  const std::string finish_work = "#!lua flags=allow-oom";
  const std::string read_only = "#!lua flags=no-writes";
  const std::map<std::string, std::string> policy = {
      {"enqueue", create_work},        {"claim", create_work},
      {"retry_dead", create_work},     {"register_queue", finish_work},
      {"ack", finish_work},            {"fail", finish_work},
      {"extend_lease", finish_work},   {"release", finish_work},
      {"release_claim", finish_work},  {"reap", finish_work},
      {"cancel", finish_work},         {"set_paused", finish_work},
      {"delete_job", finish_work},     {"delete_queue", finish_work},
      {"unregister_queue", finish_work},
      {"purge_dead", finish_work},     {"trim_dead", finish_work},
      {"queue_stats", read_only},      {"list_jobs", read_only},
      {"get_job", read_only},
  };
  size_t scripts = 0;
  for (const LuaSource& source : LuaSources()) {
    if (absl::StartsWith(source.name, "_")) continue;  // helpers, not scripts
    ++scripts;
    auto it = policy.find(std::string(source.name));
    ASSERT_NE(it, policy.end()) << source.name << ".lua is missing from this table";
    const Script& script = scripts_->Get(source.name);
    EXPECT_EQ(script.flags, it->second) << source.name;
    // Redis reads the flags only from the first line of what it is sent.
    EXPECT_TRUE(absl::StartsWith(script.text, it->second + "\n")) << source.name;
  }
  EXPECT_EQ(scripts, policy.size());
}

// Over a real maxmemory (noeviction): the scripts that create work are
// refused before they run (RESOURCE_EXHAUSTED naming the script; nothing
// written), the ones that finish work and the reads run.
TEST_F(ScriptSafetyTest, OverMaxmemoryOnlyScriptsThatCreateWorkAreRefused) {
  const std::string q = "mem";
  for (const char* type : {"a", "b", "c"}) Enqueue(q, type, 0, 0);
  const std::string left = Enqueue(q, "d", 0, 0);
  auto held = Claim(q, 2);
  auto expiring = Claim(q, 1, /*lease_ms=*/1);
  ASSERT_TRUE(held.ok() && held->jobs.size() == 2);
  ASSERT_TRUE(expiring.ok() && expiring->jobs.size() == 1);
  absl::SleepFor(absl::Milliseconds(10));  // the 1 ms lease ends

  const absl::Status filled = redis_.FillToMaxmemory();
  ASSERT_TRUE(filled.ok()) << filled;
  const int64_t keys = redis_.DbSize();

  v1::EnqueueRequest r;
  r.set_queue(q);
  r.set_type("refused");
  r.set_max_attempts(3);
  r.set_backoff_base_ms(1000);
  r.set_backoff_max_ms(1000);
  auto enqueued = Sync<std::vector<EnqueueOutcome>>([&](auto cb) { store_->Enqueue(q, {r}, cb); });
  EXPECT_EQ(enqueued.status().code(), absl::StatusCode::kResourceExhausted) << enqueued.status();
  EXPECT_TRUE(absl::StrContains(enqueued.status().message(),
                                "redis is over its maxmemory limit (noeviction): enqueue refused"))
      << enqueued.status();
  auto claimed = Claim(q, 1);
  EXPECT_EQ(claimed.status().code(), absl::StatusCode::kResourceExhausted) << claimed.status();
  EXPECT_EQ(redis_.DbSize(), keys);
  EXPECT_EQ(Field(q, left, "state"), "pending");

  auto acked = Ack(held->jobs[0]);
  ASSERT_TRUE(acked.ok()) << acked.status();
  EXPECT_TRUE(acked->status.ok()) << acked->status;
  auto failed = Fail(held->jobs[1]);
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_FALSE(failed->dead);
  auto reaped = Sync<ReapOutcome>([&](auto cb) { store_->Reap(q, 100, cb); });
  ASSERT_TRUE(reaped.ok()) << reaped.status();
  EXPECT_EQ(reaped->reaped, 1);
  auto stats = Sync<v1::QueueStats>([&](auto cb) { admin_->Stats(q, cb); });
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->completed(), 1);
}

}  // namespace
}  // namespace jobwire::store
