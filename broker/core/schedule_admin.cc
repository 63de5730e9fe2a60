#include "broker/core/schedule_admin.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "broker/core/schedule_timing.h"

namespace jobwire::core {

void ScheduleAdmin::Put(const v1::Schedule& schedule,
                        store::Callback<v1::PutScheduleResponse> done) const {
  absl::StatusOr<ScheduleTiming> timing = ScheduleTiming::From(schedule);
  if (!timing.ok()) return done(timing.status());
  store_->Now([this, schedule, timing = *timing,
               done = std::move(done)](absl::StatusOr<store::ScheduleRead> now) mutable {
    if (!now.ok()) return done(now.status());
    const std::optional<int64_t> next = timing.Next(now->now_ms);
    store_->Put(schedule.name(), schedule.SerializeAsString(), next,
                [next, done = std::move(done)](absl::StatusOr<bool> replaced) {
                  if (!replaced.ok()) return done(replaced.status());
                  v1::PutScheduleResponse response;
                  response.set_next_run_at_ms(next.value_or(0));
                  response.set_replaced(*replaced);
                  done(std::move(response));
                });
  });
}

void ScheduleAdmin::Delete(const std::string& name, store::Callback<bool> done) const {
  store_->Delete(name, std::move(done));
}

void ScheduleAdmin::List(store::Callback<std::vector<v1::ScheduleInfo>> done) const {
  store_->List(kMaxListedSchedules, [done = std::move(done)](
                                        absl::StatusOr<store::ScheduleRead> read) {
    if (!read.ok()) return done(read.status());
    std::vector<v1::ScheduleInfo> out;
    for (const store::StoredSchedule& s : read->schedules) {
      v1::ScheduleInfo info;
      if (!info.mutable_schedule()->ParseFromString(s.definition)) info.clear_schedule();
      info.mutable_schedule()->set_name(s.name);
      info.set_next_run_at_ms(s.next_ms.value_or(0));
      info.set_last_run_at_ms(s.last_run_ms);
      info.set_last_job_id(s.last_job_id);
      out.push_back(std::move(info));
    }
    std::sort(out.begin(), out.end(), [](const v1::ScheduleInfo& a, const v1::ScheduleInfo& b) {
      return a.schedule().name() < b.schedule().name();
    });
    done(std::move(out));
  });
}

}  // namespace jobwire::core
