// ScheduleAdmin: the Admin API's schedule operations (PutSchedule,
// DeleteSchedule, ListSchedules) over ScheduleStore; ScheduleRunner runs
// what they store.
//
// Thread safety: every method may be called from any thread; callbacks run
// on the Redis event loop thread.
#ifndef JOBWIRE_BROKER_CORE_SCHEDULE_ADMIN_H_
#define JOBWIRE_BROKER_CORE_SCHEDULE_ADMIN_H_

#include <string>
#include <vector>

#include "broker/store/schedule_store.h"
#include "jobwire/v1/admin.pb.h"

namespace jobwire::core {

// The most schedules ListSchedules returns.
inline constexpr int kMaxListedSchedules = 10000;

class ScheduleAdmin {
 public:
  // `store` must outlive this object.
  explicit ScheduleAdmin(const store::ScheduleStore* store) : store_(store) {}

  // Stores `schedule` with its first run after Redis time now. REQUIRES:
  // service::ValidateSchedule passed. INVALID_ARGUMENT for a cron
  // expression or time zone that does not load (ScheduleTiming::From).
  void Put(const v1::Schedule& schedule, store::Callback<v1::PutScheduleResponse> done) const;
  // True when the schedule existed.
  void Delete(const std::string& name, store::Callback<bool> done) const;
  // Every schedule, by name (a definition that does not parse is listed
  // with its name only).
  void List(store::Callback<std::vector<v1::ScheduleInfo>> done) const;

 private:
  const store::ScheduleStore* const store_;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_SCHEDULE_ADMIN_H_
