// ScheduleTiming: when a schedule (jobwire.v1.Schedule) runs: its cron
// expression read in its time zone (base::CronExpression), or its fixed
// interval (runs at start_at_ms + k * interval_ms; start_at_ms 0 means the
// Unix epoch, so that an hourly interval runs on the hour, UTC), bounded by
// start_at_ms and end_at_ms. Instants are ms since the epoch (Redis time).
//
// Thread safety: immutable after From; safe to share.
#ifndef JOBWIRE_BROKER_CORE_SCHEDULE_TIMING_H_
#define JOBWIRE_BROKER_CORE_SCHEDULE_TIMING_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/base/cron_expression.h"
#include "jobwire/v1/admin.pb.h"

namespace jobwire::core {

class ScheduleTiming {
 public:
  // INVALID_ARGUMENT naming the field ("schedule.cron", "schedule.time_zone")
  // when the cron expression does not parse or the zone is unknown (the
  // service has checked the rest: service::ValidateSchedule).
  static absl::StatusOr<ScheduleTiming> From(const v1::Schedule& schedule);

  // The first run strictly after `after_ms`, not before start_at_ms; none
  // when it would be after end_at_ms or the expression never fires.
  std::optional<int64_t> Next(int64_t after_ms) const;

 private:
  ScheduleTiming() = default;

  std::optional<base::CronExpression> cron_;
  absl::TimeZone zone_;
  int64_t interval_ms_ = 0;
  int64_t start_ms_ = 0;  // 0: unbounded
  int64_t end_ms_ = 0;    // 0: unbounded
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_SCHEDULE_TIMING_H_
