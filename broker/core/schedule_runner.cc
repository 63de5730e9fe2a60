#include "broker/core/schedule_runner.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/base/logging.h"
#include "broker/core/schedule_timing.h"

namespace jobwire::core {

void ScheduleRunner::Start() {
  params_.subscriptions->Subscribe(params_.store->channel(),
                                   [this](const std::string&, const std::string&) {
                                     // A schedule was put, or the subscription
                                     // was (re)made after a reconnect.
                                     if (!stopped_) Wake();
                                   });
  params_.loop->Post([this] { Wake(); });
}

void ScheduleRunner::Wake() {
  if (running_) {
    again_ = true;
    return;
  }
  params_.loop->Cancel(timer_);
  timer_ = 0;
  Exec();
}

void ScheduleRunner::SleepUntil(absl::Duration delay) {
  params_.loop->Cancel(timer_);
  timer_ = params_.loop->RunAfter(delay, [this] {
    timer_ = 0;
    if (!stopped_) Wake();
  });
}

void ScheduleRunner::Exec() {
  running_ = true;
  again_ = false;
  params_.store->Due(params_.batch, [this](absl::StatusOr<store::ScheduleRead> read) {
    if (!read.ok()) {
      // Redis is unreachable (the reconnect's resubscription wakes us too),
      // or refused the read: try again shortly.
      running_ = false;
      SleepUntil(absl::Seconds(1));
      return;
    }
    const int64_t now_ms = read->now_ms;
    std::optional<int64_t> earliest = read->earliest_next_ms;
    const bool any = !read->schedules.empty();
    progress_ = 0;
    RunFrom(std::move(read->schedules), 0, now_ms, [this, now_ms, earliest, any] {
      running_ = false;
      if (stopped_) return;
      if (progress_ > 0 || again_) return Wake();  // read again: more may be due
      // Due schedules none of which moved on (Redis refused an enqueue, or a
      // definition cannot be read): try again in a second, not in a loop.
      if (any) return SleepUntil(absl::Seconds(1));
      absl::Duration sleep = params_.max_sleep;
      if (earliest.has_value()) {
        sleep = std::min(sleep, absl::Milliseconds(std::max<int64_t>(*earliest - now_ms, 0) + 1));
      }
      SleepUntil(sleep);
    });
  });
}

void ScheduleRunner::RunFrom(std::vector<store::StoredSchedule> due, size_t i, int64_t now_ms,
                             std::function<void()> done) {
  if (i >= due.size() || stopped_) return done();
  const store::StoredSchedule& one = due[i];
  RunOne(one, now_ms, [this, due = std::move(due), i, now_ms, done = std::move(done)]() mutable {
    RunFrom(std::move(due), i + 1, now_ms, std::move(done));
  });
}

void ScheduleRunner::RunOne(const store::StoredSchedule& due, int64_t now_ms,
                            std::function<void()> done) {
  v1::Schedule schedule;
  absl::StatusOr<ScheduleTiming> timing = absl::InternalError("unparsed");
  if (schedule.ParseFromString(due.definition)) timing = ScheduleTiming::From(schedule);
  if (!due.next_ms.has_value() || !timing.ok()) {
    // Not written by PutSchedule (which validates): leave it, loudly.
    base::Log(base::LogLevel::kError, "schedule cannot be read; left as it is",
              {{"schedule", due.name},
               {"error", timing.ok() ? "no next instant" : timing.status().ToString()}});
    return done();
  }
  const int64_t read_next = *due.next_ms;
  std::optional<int64_t> run_ms = read_next;
  std::optional<int64_t> next_ms = timing->Next(read_next);
  if (now_ms - read_next > kScheduleMissedAfterMs) {
    // Missed: no replica ran it in time. The next run is the first after now.
    if (schedule.catch_up() != v1::Schedule::CATCH_UP_ONCE) run_ms.reset();
    next_ms = timing->Next(now_ms);
    base::Log(base::LogLevel::kWarning,
              run_ms ? "schedule missed runs; enqueued once" : "schedule missed runs; skipped",
              {{"schedule", due.name}, {"missed_since_ms", read_next}, {"now_ms", now_ms}});
  }
  const std::string name = due.name;
  auto advance = [this, name, read_next, next_ms, run_ms, done](const std::string& job_id) {
    params_.store->Advance(name, read_next, next_ms, run_ms, job_id,
                           [this, done](absl::StatusOr<bool> advanced) {
                             if (advanced.ok()) ++progress_;
                             if (!advanced.ok()) {
                               base::Log(base::LogLevel::kWarning, "schedule not advanced",
                                         {{"error", advanced.status().ToString()}});
                             }
                             done();
                           });
  };
  if (!run_ms.has_value()) return advance("");

  v1::EnqueueRequest job = schedule.job();
  job.set_idempotency_key(absl::StrCat("schedule:", name, ":", *run_ms));
  if (schedule.jitter_ms() > 0) {
    job.set_run_at_ms(*run_ms + absl::Uniform<int64_t>(random_, 0, schedule.jitter_ms() + 1));
  }
  const std::string queue = job.queue();
  std::vector<v1::EnqueueRequest> jobs;
  jobs.push_back(std::move(job));
  params_.lifecycle->Enqueue(
      queue, std::move(jobs),
      [name, advance, done](absl::StatusOr<std::vector<store::EnqueueOutcome>> outcome) {
        if (!outcome.ok() || outcome->empty()) {
          // Left due: the next pass tries again (a missed run after a minute).
          base::Log(base::LogLevel::kWarning, "schedule run not enqueued; will retry",
                    {{"schedule", name},
                     {"error", outcome.ok() ? "no outcome" : outcome.status().ToString()}});
          return done();
        }
        advance((*outcome)[0].job_id);
      });
}

}  // namespace jobwire::core
