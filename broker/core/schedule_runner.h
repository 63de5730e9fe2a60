// ScheduleRunner: background loop that enqueues the runs of the schedules
// (Admin.PutSchedule; docs/semantics.md "Schedules"). Every broker replica
// runs one; each run is enqueued once whatever they do:
//   1. read the due schedules and Redis time (ScheduleStore::Due);
//   2. for each, enqueue its job with the idempotency key
//      "schedule:<name>:<scheduled instant ms>" (replicas that race store
//      one job; the others get a duplicate);
//   3. advance the schedule to its next instant only if no other replica
//      did (ScheduleStore::Advance compares the instant it read).
// A replica that stops between 2 and 3 leaves the schedule due: the next
// pass of any replica enqueues the same key (a duplicate) and advances it.
// This holds while the key is deduplicated: within the broker's
// --dedup_window_ms (a day by default) of the run.
//
// A run more than kMissedAfter late (no replica ran the schedule: all
// down, or Redis unreachable) is missed: skipped, or with CATCH_UP_ONCE
// enqueued once for all missed runs (as the first missed instant); the
// schedule then goes on from the first instant after now.
//
// Passes run at the earliest next instant of any schedule (Redis reports it
// with each read), at once when a schedule is put through any replica (the
// schedules' channel), after Redis reconnects, and at least every
// `max_sleep`; a read that fails is tried again a second later. Idle (no
// schedule due), a pass is one read (4 Redis commands) per `max_sleep`.
//
// Thread safety: Start and Stop from one thread; passes run on `loop`.
#ifndef JOBWIRE_BROKER_CORE_SCHEDULE_RUNNER_H_
#define JOBWIRE_BROKER_CORE_SCHEDULE_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/core/job_lifecycle.h"
#include "broker/store/redis_subscriptions.h"
#include "broker/store/schedule_store.h"

namespace jobwire::core {

// A run later than this is missed (Schedule.catch_up).
inline constexpr int64_t kScheduleMissedAfterMs = 60 * 1000;

struct ScheduleRunnerParams {
  base::EventLoop* loop = nullptr;
  const store::ScheduleStore* store = nullptr;
  store::RedisSubscriptions* subscriptions = nullptr;
  JobLifecycle* lifecycle = nullptr;
  // Only a safety net: a put wakes every runner through the channel.
  absl::Duration max_sleep = absl::Minutes(5);
  int batch = 100;  // schedules handled per read
};

class ScheduleRunner {
 public:
  // Every pointer in `params` must outlive the runner.
  explicit ScheduleRunner(ScheduleRunnerParams params) : params_(params) {}

  // Subscribes to the schedules' channel; the first pass runs at once.
  void Start();
  // After Stop no new pass begins. REQUIRES: the loop is stopped before this
  // object is destroyed.
  void Stop() { stopped_ = true; }

 private:
  // A pass now (or right after the one running).
  void Wake();
  void SleepUntil(absl::Duration delay);
  void Exec();
  // Handles due[i..] one after the other, then `done`.
  void RunFrom(std::vector<store::StoredSchedule> due, size_t i, int64_t now_ms,
               std::function<void()> done);
  // One due schedule: enqueue (or skip), then advance; `done` after.
  void RunOne(const store::StoredSchedule& due, int64_t now_ms, std::function<void()> done);

  const ScheduleRunnerParams params_;
  std::atomic<bool> stopped_{false};
  // Loop thread only.
  bool running_ = false;
  bool again_ = false;
  int progress_ = 0;  // schedules advanced (or found moved on) in this pass
  base::EventLoop::TimerId timer_ = 0;
  absl::BitGen random_;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_SCHEDULE_RUNNER_H_
