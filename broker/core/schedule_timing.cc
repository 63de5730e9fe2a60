#include "broker/core/schedule_timing.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"

namespace jobwire::core {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return base::WithField(absl::InvalidArgumentError(absl::StrCat(field, ": ", what)), field);
}

}  // namespace

absl::StatusOr<ScheduleTiming> ScheduleTiming::From(const v1::Schedule& schedule) {
  ScheduleTiming t;
  t.start_ms_ = schedule.start_at_ms();
  t.end_ms_ = schedule.end_at_ms();
  if (schedule.timing_case() == v1::Schedule::kCron) {
    absl::StatusOr<base::CronExpression> cron = base::CronExpression::Parse(schedule.cron());
    if (!cron.ok()) return Invalid("schedule.cron", cron.status().message());
    t.cron_ = *std::move(cron);
    t.zone_ = absl::UTCTimeZone();
    if (!schedule.time_zone().empty() && !absl::LoadTimeZone(schedule.time_zone(), &t.zone_)) {
      return Invalid("schedule.time_zone",
                     absl::StrCat("unknown time zone \"", schedule.time_zone(),
                                  "\" (an IANA name such as Europe/Berlin)"));
    }
  } else {
    t.interval_ms_ = schedule.interval_ms();
    if (t.interval_ms_ <= 0) return Invalid("schedule.interval_ms", "must be positive");
  }
  return t;
}

std::optional<int64_t> ScheduleTiming::Next(int64_t after_ms) const {
  // Not before start: the first run is at or after start_ms_.
  if (start_ms_ > 0) after_ms = std::max(after_ms, start_ms_ - 1);
  int64_t next = 0;
  if (cron_.has_value()) {
    const absl::Time t = cron_->Next(absl::FromUnixMillis(after_ms), zone_);
    if (t == absl::InfiniteFuture()) return std::nullopt;
    next = absl::ToUnixMillis(t);
  } else {
    // The runs are anchor + k * interval; the first one after `after_ms`.
    const int64_t anchor = start_ms_;
    const int64_t since = after_ms - anchor;
    const int64_t k = since < 0 ? 0 : since / interval_ms_ + 1;
    next = anchor + k * interval_ms_;
  }
  if (end_ms_ > 0 && next > end_ms_) return std::nullopt;
  return next;
}

}  // namespace jobwire::core
