// Schedules (Admin.PutSchedule / DeleteSchedule / ListSchedules) on real
// brokers: bad definitions are refused naming the field and change
// nothing; an interval schedule run by two replicas enqueues each instant
// once (the checker counts the jobs in the queue, one per idempotency key
// "schedule:<name>:<instant>"), and goes on when one replica stops; cron
// runs follow their expression; missed runs are skipped or enqueued once;
// jitter delays a run's job; a deleted schedule stops.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "tests/lifecycle_test_util.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  return context;
}

v1::Schedule Every(const std::string& name, const std::string& queue, int64_t interval_ms) {
  v1::Schedule s;
  s.set_name(name);
  s.set_interval_ms(interval_ms);
  *s.mutable_job() = MakeJob(queue, "{\"from\":\"schedule\"}");
  return s;
}

class ScheduleTest : public BrokerTest {
 protected:
  void SetUp() override {
    BrokerTest::SetUp();
    admin_ = v1::AdminService::NewStub(broker_->channel());
  }

  grpc::Status Put(const v1::Schedule& schedule, v1::PutScheduleResponse* response = nullptr) {
    v1::PutScheduleRequest request;
    *request.mutable_schedule() = schedule;
    v1::PutScheduleResponse ignored;
    return admin_->PutSchedule(Context().get(), request, response ? response : &ignored);
  }

  std::vector<v1::ScheduleInfo> List() {
    v1::ListSchedulesResponse response;
    grpc::Status status = admin_->ListSchedules(Context().get(), {}, &response);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    return {response.schedules().begin(), response.schedules().end()};
  }

  // The pending jobs of `queue` by the instant their idempotency key names.
  std::map<int64_t, v1::Job> RunsIn(const std::string& queue, const std::string& name) {
    v1::ListJobsRequest request;
    request.set_queue(queue);
    request.set_state(v1::JOB_STATE_PENDING);
    request.set_page_size(1000);
    v1::ListJobsResponse response;
    grpc::Status status = admin_->ListJobs(Context().get(), request, &response);
    EXPECT_TRUE(status.ok()) << StatusText(status);
    std::map<int64_t, v1::Job> runs;
    const std::string prefix = absl::StrCat("schedule:", name, ":");
    for (const v1::Job& job : response.jobs()) {
      int64_t instant = 0;
      EXPECT_TRUE(absl::StartsWith(job.idempotency_key(), prefix)) << job.idempotency_key();
      EXPECT_TRUE(absl::SimpleAtoi(job.idempotency_key().substr(prefix.size()), &instant))
          << job.idempotency_key();
      EXPECT_TRUE(runs.emplace(instant, job).second) << "two jobs for " << instant;
    }
    EXPECT_EQ(runs.size(), static_cast<size_t>(response.jobs_size()));
    return runs;
  }

  // Waits up to `timeout` for at least `n` runs of `name` in `queue`.
  std::map<int64_t, v1::Job> AwaitRuns(const std::string& queue, const std::string& name, size_t n,
                                       absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time end = absl::Now() + timeout;
    std::map<int64_t, v1::Job> runs;
    do {
      runs = RunsIn(queue, name);
      if (runs.size() >= n) return runs;
      absl::SleepFor(absl::Milliseconds(100));
    } while (absl::Now() < end);
    ADD_FAILURE() << "only " << runs.size() << " runs of " << name << ", wanted " << n;
    return runs;
  }

  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(ScheduleTest, BadDefinitionsAreRefusedNamingTheFieldAndChangeNothing) {
  struct Case {
    const char* field;
    std::function<void(v1::Schedule*)> change;
  };
  const std::vector<Case> cases = {
      {"schedule.name", [](v1::Schedule* s) { s->set_name(""); }},
      {"schedule.name", [](v1::Schedule* s) { s->set_name("has space"); }},
      {"schedule.cron", [](v1::Schedule* s) { s->clear_interval_ms(); }},
      {"schedule.cron", [](v1::Schedule* s) { s->set_cron("61 * * * *"); }},
      {"schedule.cron", [](v1::Schedule* s) { s->set_cron("* * *"); }},
      {"schedule.cron", [](v1::Schedule* s) { s->set_cron(std::string(300, '*')); }},
      {"schedule.time_zone",
       [](v1::Schedule* s) {
         s->set_cron("0 * * * *");
         s->set_time_zone("Mars/Olympus_Mons");
       }},
      {"schedule.time_zone", [](v1::Schedule* s) { s->set_time_zone("Europe/Berlin"); }},
      {"schedule.interval_ms", [](v1::Schedule* s) { s->set_interval_ms(999); }},
      {"schedule.interval_ms", [](v1::Schedule* s) { s->set_interval_ms(-5); }},
      {"schedule.job", [](v1::Schedule* s) { s->clear_job(); }},
      {"schedule.job.queue", [](v1::Schedule* s) { s->mutable_job()->set_queue(""); }},
      {"schedule.job.priority", [](v1::Schedule* s) { s->mutable_job()->set_priority(5000); }},
      {"schedule.job.idempotency_key",
       [](v1::Schedule* s) { s->mutable_job()->set_idempotency_key("k"); }},
      {"schedule.job.delay_ms", [](v1::Schedule* s) { s->mutable_job()->set_delay_ms(10); }},
      {"schedule.job.run_at_ms", [](v1::Schedule* s) { s->mutable_job()->set_run_at_ms(10); }},
      {"schedule.jitter_ms", [](v1::Schedule* s) { s->set_jitter_ms(3600001); }},
      {"schedule.start_at_ms", [](v1::Schedule* s) { s->set_start_at_ms(-1); }},
      {"schedule.end_at_ms",
       [](v1::Schedule* s) {
         s->set_start_at_ms(2000);
         s->set_end_at_ms(1000);
       }},
      {"schedule.catch_up",
       [](v1::Schedule* s) { s->set_catch_up(static_cast<v1::Schedule::CatchUp>(7)); }},
  };
  for (const Case& c : cases) {
    v1::Schedule s = Every("bad", "sched.bad", 1000);
    c.change(&s);
    grpc::Status status = Put(s);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_TRUE(absl::StartsWith(status.error_message(), absl::StrCat(c.field, ":")))
        << c.field << " -> " << status.error_message();
  }
  EXPECT_TRUE(List().empty());
  v1::DeleteScheduleRequest bad_name;
  v1::DeleteScheduleResponse deleted;
  EXPECT_EQ(admin_->DeleteSchedule(Context().get(), bad_name, &deleted).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ScheduleTest, TwoReplicasEnqueueEachIntervalRunOnceAndOneGoesOnAlone) {
  std::unique_ptr<BrokerProcess> second = AnotherBroker();
  JW_ASSERT_OK(second->Start());
  v1::PutScheduleResponse put;
  ASSERT_TRUE(Put(Every("tick", "sched.tick", 1000), &put).ok());
  EXPECT_FALSE(put.replaced());
  EXPECT_EQ(put.next_run_at_ms() % 1000, 0) << "interval runs are aligned to the epoch";
  EXPECT_GT(put.next_run_at_ms(), NowMs() - 1000);

  std::map<int64_t, v1::Job> runs = AwaitRuns("sched.tick", "tick", 3);
  // Consecutive instants, each once (RunsIn fails on a second job of one).
  for (auto it = std::next(runs.begin()); it != runs.end(); ++it) {
    EXPECT_EQ(it->first - std::prev(it)->first, 1000) << it->first;
  }
  EXPECT_EQ(runs.begin()->first, put.next_run_at_ms());
  const v1::Job& first = runs.begin()->second;
  EXPECT_EQ(first.type(), "test");
  EXPECT_EQ(first.payload(), "{\"from\":\"schedule\"}");

  // The first replica stops; the second goes on.
  stub_.reset();
  admin_ = v1::AdminService::NewStub(second->channel());
  broker_->Stop();
  const size_t before = RunsIn("sched.tick", "tick").size();
  runs = AwaitRuns("sched.tick", "tick", before + 2);
  int64_t previous = 0;
  for (const auto& [instant, job] : runs) {
    if (previous != 0) {
      EXPECT_EQ(instant - previous, 1000);
    }
    previous = instant;
  }
  std::vector<v1::ScheduleInfo> listed = List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].schedule().name(), "tick");
  EXPECT_GE(listed[0].last_run_at_ms(), runs.rbegin()->first);
  EXPECT_GT(listed[0].next_run_at_ms(), listed[0].last_run_at_ms());
  EXPECT_FALSE(listed[0].last_job_id().empty());

  // Deleted: no more runs.
  v1::DeleteScheduleRequest request;
  request.set_name("tick");
  v1::DeleteScheduleResponse deleted;
  ASSERT_TRUE(admin_->DeleteSchedule(Context().get(), request, &deleted).ok());
  EXPECT_TRUE(deleted.deleted());
  ASSERT_TRUE(admin_->DeleteSchedule(Context().get(), request, &deleted).ok());
  EXPECT_FALSE(deleted.deleted());
  const size_t after_delete = RunsIn("sched.tick", "tick").size();
  absl::SleepFor(absl::Milliseconds(2500));
  EXPECT_LE(RunsIn("sched.tick", "tick").size(), after_delete + 1)  // one in flight at most
      << "runs went on after DeleteSchedule";
  EXPECT_TRUE(List().empty());
}

TEST_F(ScheduleTest, CronRunsFollowTheExpressionInItsZone) {
  v1::Schedule s = Every("even", "sched.cron", 0);
  s.set_cron("*/2 * * * * *");  // every even second
  s.set_time_zone("America/New_York");
  v1::PutScheduleResponse put;
  ASSERT_TRUE(Put(s, &put).ok());
  EXPECT_EQ(put.next_run_at_ms() % 2000, 0);
  std::map<int64_t, v1::Job> runs = AwaitRuns("sched.cron", "even", 2);
  for (const auto& [instant, job] : runs) EXPECT_EQ(instant % 2000, 0) << instant;
  EXPECT_EQ(std::next(runs.begin())->first - runs.begin()->first, 2000);
  // Replacing it re-plans from now.
  s.set_cron("0 0 1 1 *");  // New Year's Day, midnight in New York
  ASSERT_TRUE(Put(s, &put).ok());
  EXPECT_TRUE(put.replaced());
  absl::CivilSecond next = absl::ToCivilSecond(absl::FromUnixMillis(put.next_run_at_ms()),
                                               absl::FixedTimeZone(-5 * 3600));
  EXPECT_EQ(next, absl::CivilSecond(next.year(), 1, 1, 0, 0, 0));
}

// Runs missed while no broker ran the schedule: seeded by moving its next
// instant five minutes into the past, then waking the runners.
class ScheduleCatchUpTest : public ScheduleTest {
 protected:
  size_t RunsAfterMissing(v1::Schedule::CatchUp catch_up, int64_t* missed_instant) {
    v1::Schedule s = Every(catch_up == v1::Schedule::CATCH_UP_ONCE ? "once" : "skip",
                           "sched.missed", 3600 * 1000);
    s.set_catch_up(catch_up);
    v1::PutScheduleResponse put;
    EXPECT_TRUE(Put(s, &put).ok());
    *missed_instant = (NowMs() / 60000 - 5) * 60000;
    EXPECT_TRUE(RedisCommandFor("jw:{schedules}:next", {"ZADD", "jw:{schedules}:next",
                                                        absl::StrCat(*missed_instant), s.name()})
                    .ok());
    EXPECT_TRUE(
        RedisCommandFor("jw:{schedules}:changed", {"SPUBLISH", "jw:{schedules}:changed", "x"}).ok());
    // The runner handles it: its next instant moves past now.
    const absl::Time end = absl::Now() + absl::Seconds(10);
    while (absl::Now() < end) {
      for (const v1::ScheduleInfo& info : List()) {
        if (info.schedule().name() == s.name() && info.next_run_at_ms() > NowMs()) {
          EXPECT_EQ(info.next_run_at_ms(), put.next_run_at_ms());
          return RunsIn("sched.missed", s.name()).size();
        }
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
    ADD_FAILURE() << "the missed schedule was not advanced";
    return 0;
  }
};

TEST_F(ScheduleCatchUpTest, SkipDropsMissedRuns) {
  int64_t missed = 0;
  EXPECT_EQ(RunsAfterMissing(v1::Schedule::CATCH_UP_SKIP, &missed), 0u);
}

TEST_F(ScheduleCatchUpTest, OnceEnqueuesOneRunForAllMissed) {
  int64_t missed = 0;
  EXPECT_EQ(RunsAfterMissing(v1::Schedule::CATCH_UP_ONCE, &missed), 1u);
  EXPECT_EQ(RunsIn("sched.missed", "once").begin()->first, missed);
}

TEST_F(ScheduleTest, JitterDelaysEachRunsJobWithinItsBound) {
  v1::Schedule s = Every("jittery", "sched.jitter", 1000);
  s.set_jitter_ms(60000);
  ASSERT_TRUE(Put(s).ok());
  std::map<int64_t, v1::Job> runs = AwaitRuns("sched.jitter", "jittery", 3);
  int later = 0;
  for (const auto& [instant, job] : runs) {
    EXPECT_GE(job.available_at_ms(), instant);
    EXPECT_LE(job.available_at_ms(), instant + 60000);
    if (job.available_at_ms() > instant + 1000) ++later;
  }
  EXPECT_GE(later, 1) << "jitter never moved a run (chance about 1 in 200,000)";
}

}  // namespace
}  // namespace jobwire::testing
