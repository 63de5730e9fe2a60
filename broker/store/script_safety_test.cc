// The scripts against a real redis-server where the state is not the happy
// path: a job hash that is missing or lacks fields, a reply that would be
// huge, a Fail repeated after the job moved on, a RetryDead scan racing
// jobs that die again. Each case states the state before and what must hold after.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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
// whatever its size), says that due jobs are left, and answers each job with
// its own payload: for records with payload_bytes (the claim reads the
// payloads it takes at the end, with one HMGET) and for records without it
// (enqueued by a broker before the field: the claim reads each payload to
// learn its size).
TEST_F(ScriptSafetyTest, ClaimIsBoundedByBytes) {
  for (bool legacy : {false, true}) {
    SCOPED_TRACE(legacy ? "records without payload_bytes" : "records with payload_bytes");
    const std::string prefix = legacy ? "old-" : "new-";
    // Enqueues `payload` on `queue`; a legacy record loses payload_bytes.
    auto enqueue = [&](const std::string& queue, const std::string& payload) {
      std::string id = Enqueue(queue, "t", 0, 0, 3, 1000, 3600000, payload);
      EXPECT_EQ(JobField(queue, id, "payload_bytes"), absl::StrCat(payload.size()));
      if (legacy) WriteJobField(queue, id, "payload_bytes", std::nullopt);
      return id;
    };

    const std::string queue = prefix + "big";
    std::map<std::string, std::string> payloads;
    for (int i = 0; i < 10; ++i) {
      std::string payload = std::string(1 << 20, static_cast<char>('a' + i));
      payloads[enqueue(queue, payload)] = payload;
    }
    auto first = Claim(queue, 10);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->jobs.size(), static_cast<size_t>(kMaxClaimBytes / (1 << 20)));
    EXPECT_TRUE(first->more);
    for (const auto& job : first->jobs) {
      EXPECT_TRUE(job.job().payload() == payloads[job.job().id()]) << job.job().id();
    }

    const std::string queue2 = prefix + "huge";
    enqueue(queue2, std::string(kMaxClaimBytes + 1, 'y'));
    const std::string small_id = enqueue(queue2, "small");
    const std::string empty_id = enqueue(queue2, "");
    auto huge = Claim(queue2, 10);
    ASSERT_TRUE(huge.ok()) << huge.status();
    ASSERT_EQ(huge->jobs.size(), 1u);
    EXPECT_EQ(huge->jobs[0].job().payload().size(), static_cast<size_t>(kMaxClaimBytes + 1));
    EXPECT_TRUE(huge->more);
    auto rest = Claim(queue2, 10);
    ASSERT_TRUE(rest.ok());
    ASSERT_EQ(rest->jobs.size(), 2u);
    EXPECT_EQ(rest->jobs[0].job().id(), small_id);
    EXPECT_EQ(rest->jobs[0].job().payload(), "small");
    EXPECT_EQ(rest->jobs[1].job().id(), empty_id);
    EXPECT_EQ(rest->jobs[1].job().payload(), "");
    EXPECT_FALSE(rest->more);
  }
}

// An admin page stops at its byte bound too, and the next page goes on from
// there.
TEST_F(ScriptSafetyTest, ListPageIsBoundedByBytes) {
  const std::string queue = "listed";
  const std::string mib(1 << 20, 'x');
  for (int i = 0; i < 5; ++i) Enqueue(queue, "t", 0, 0, 3, 1000, 3600000, mib);
  JobPageRequest request;
  request.state = v1::JOB_STATE_PENDING;
  request.page_size = 50;
  request.scan_limit = 50;
  request.newest_first = false;
  request.max_bytes = 2 << 20;
  auto page = Sync<JobPage>([&](auto cb) { admin_->ListJobs(queue, request, cb); });
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->jobs.size(), 2u);
  EXPECT_EQ(page->next_offset, 2);
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
      {"unregister_queue", finish_work}, {"set_queue", finish_work},
      {"purge_dead", finish_work},     {"trim_dead", finish_work},
      {"index_by_type", finish_work},  {"report_progress", finish_work},
      {"queue_stats", read_only},      {"list_jobs", read_only},
      {"get_job", read_only},          {"put_schedule", create_work},
      {"delete_schedule", finish_work}, {"advance_schedule", finish_work},
      {"read_schedules", read_only},   {"listen_events", finish_work},
      {"deps_peek", read_only},        {"deps_link", finish_work},
      {"deps_resolve", finish_work},   {"deps_outbox", finish_work},
      {"deps_unlinked", finish_work},  {"held_runs", read_only},
  };
  // What Redis registered: function name -> its flags, joined by ','.
  auto load = redis_.CommandArgv({"FUNCTION", "LOAD", "REPLACE", scripts_->library()});
  ASSERT_TRUE(load.ok() && !load->is_error()) << (load.ok() ? load->str : load.status().ToString());
  auto list = redis_.CommandArgv({"FUNCTION", "LIST", "LIBRARYNAME", scripts_->library_name()});
  ASSERT_TRUE(list.ok());
  std::map<std::string, std::string> registered;
  for (const testing::RedisReply& library : list->elements) {
    for (size_t i = 0; i + 1 < library.elements.size(); i += 2) {
      if (library.elements[i].str != "functions") continue;
      for (const testing::RedisReply& function : library.elements[i + 1].elements) {
        std::string name, flags;
        for (size_t j = 0; j + 1 < function.elements.size(); j += 2) {
          const testing::RedisReply& value = function.elements[j + 1];
          if (function.elements[j].str == "name") name = value.str;
          if (function.elements[j].str != "flags") continue;
          for (const testing::RedisReply& flag : value.elements) {
            absl::StrAppend(&flags, flags.empty() ? "" : ",", flag.str);
          }
        }
        registered[name] = flags;
      }
    }
  }
  size_t scripts = 0;
  for (const LuaSource& source : LuaSources()) {
    if (absl::StartsWith(source.name, "_")) continue;  // helpers, not scripts
    ++scripts;
    auto it = policy.find(std::string(source.name));
    ASSERT_NE(it, policy.end()) << source.name << ".lua is missing from this table";
    const Script& script = scripts_->Get(source.name);
    EXPECT_EQ(script.flags, it->second) << source.name;
    // Its function carries the flags its first line names.
    auto found = registered.find(script.function);
    ASSERT_NE(found, registered.end()) << source.name << " is not in the library";
    const size_t at = it->second.find("flags=");
    EXPECT_EQ(found->second, at == std::string::npos ? "" : it->second.substr(at + 6))
        << source.name;
  }
  EXPECT_EQ(scripts, policy.size());
  EXPECT_EQ(registered.size(), policy.size());
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
