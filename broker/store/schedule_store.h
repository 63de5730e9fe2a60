// ScheduleStore: the schedules in Redis (Keys::ScheduleDefs / ScheduleNext /
// ScheduleLast; docs/redis-layout.md), through lua/put_schedule.lua,
// delete_schedule.lua, advance_schedule.lua and read_schedules.lua. It keeps
// definitions as the bytes it is given (core parses them) and instants as
// ms since the epoch by Redis time.
//
// Thread safety: as the RedisCommands it runs on; callbacks run on that
// client's thread.
#ifndef JOBWIRE_BROKER_STORE_SCHEDULE_STORE_H_
#define JOBWIRE_BROKER_STORE_SCHEDULE_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_store.h"
#include "broker/store/script_runner.h"

namespace jobwire::store {

// One schedule as stored.
struct StoredSchedule {
  std::string name;
  std::string definition;
  std::optional<int64_t> next_ms;  // none: no more runs
  int64_t last_run_ms = 0;         // 0 before the first run
  std::string last_job_id;
};

// What read_schedules.lua answered: Redis time, and the schedules.
struct ScheduleRead {
  int64_t now_ms = 0;
  std::optional<int64_t> earliest_next_ms;  // of every schedule; none: none has one
  std::vector<StoredSchedule> schedules;
};

class ScheduleStore {
 public:
  // `scripts` runs every call; it must outlive the store.
  ScheduleStore(const ScriptRunner* scripts, std::string key_prefix);

  // Creates or replaces schedule `name`; `next_ms` none: no next run. The
  // last run is kept. Publishes the name on channel() so that every
  // broker's runner looks again. Returns true when one was replaced.
  // RESOURCE_EXHAUSTED over Redis' maxmemory.
  void Put(const std::string& name, const std::string& definition,
           std::optional<int64_t> next_ms, Callback<bool> done) const;

  // Removes schedule `name`; true when it existed.
  void Delete(const std::string& name, Callback<bool> done) const;

  // The channel Put publishes on.
  const std::string& channel() const { return channel_; }

  // Redis time now, in ms since the epoch, with the earliest next instant.
  void Now(Callback<ScheduleRead> done) const { Due(0, std::move(done)); }
  // Every schedule (at most `limit`), by Redis time now.
  void List(int limit, Callback<ScheduleRead> done) const;
  // The schedules due by Redis time now (at most `limit`), earliest first.
  void Due(int limit, Callback<ScheduleRead> done) const;

  // Moves schedule `name` from the instant `read_next_ms` (as Due read it)
  // to `next_ms` (none: no more runs) and records the run at `run_ms` with
  // `job_id` (run_ms none: no job enqueued). False when the schedule had
  // moved on (another replica advanced it, or it was replaced or deleted).
  void Advance(const std::string& name, int64_t read_next_ms, std::optional<int64_t> next_ms,
               std::optional<int64_t> run_ms, const std::string& job_id,
               Callback<bool> done) const;

 private:
  void Read(const char* mode, int limit, Callback<ScheduleRead> done) const;

  const ScriptRunner* const scripts_;
  const std::string defs_;
  const std::string next_;
  const std::string last_;
  const std::string channel_;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_SCHEDULE_STORE_H_
