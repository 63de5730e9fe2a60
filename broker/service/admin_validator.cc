#include "broker/service/admin_validator.h"

#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "broker/base/status_macros.h"
#include "broker/service/request_validator.h"
#include "broker/store/keys.h"

namespace jobwire::service {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return base::WithField(absl::InvalidArgumentError(absl::StrCat(field, ": ", what)), field);
}

absl::Status CheckType(absl::string_view type) {
  if (static_cast<int>(type.size()) <= kMaxTypeLength) return absl::OkStatus();
  return Invalid("type", absl::StrCat("must be at most ", kMaxTypeLength, " bytes, got ",
                                      type.size()));
}

}  // namespace

absl::Status ValidateQueueRequest(absl::string_view queue) {
  return ValidateQueueName("queue", queue);
}

absl::StatusOr<PageToken> ParsePageToken(absl::string_view token) {
  if (token.empty()) return PageToken{};
  // "<offset>" in partition 0, "<partition>:<offset>" in another.
  PageToken out;
  absl::string_view offset = token;
  const size_t colon = token.find(':');
  bool ok = true;
  if (colon != absl::string_view::npos) {
    ok = absl::SimpleAtoi(token.substr(0, colon), &out.partition) && out.partition > 0 &&
         out.partition < store::kMaxPartitions;
    offset = token.substr(colon + 1);
  }
  ok = ok && absl::SimpleAtoi(offset, &out.offset) && out.offset >= 0;
  if (!ok || FormatPageToken(out.partition, out.offset) != token) {
    return Invalid("page_token", "is not a next_page_token from a ListJobs response");
  }
  return out;
}

std::string FormatPageToken(int partition, int64_t offset) {
  if (partition == 0) return absl::StrCat(offset);
  return absl::StrCat(partition, ":", offset);
}

namespace {

constexpr int32_t kMaxRateCount = 1000000;
constexpr int64_t kMaxRateIntervalMs = 86400000;  // a day

// The fields of rate limit `field` (rate_limit or key_rate_limit: RateLimit
// in admin.proto); with `may_remove`, a RateLimit with only count 0
// (UpdateQueue's removal) passes too.
absl::Status ValidateRateLimit(absl::string_view field, const v1::RateLimit& limit,
                               bool may_remove) {
  if (may_remove && limit.count() == 0 && limit.interval_ms() == 0 && limit.burst() == 0) {
    return absl::OkStatus();
  }
  if (limit.count() < 1 || limit.count() > kMaxRateCount) {
    return Invalid(absl::StrCat(field, ".count"),
                   absl::StrCat("must be in 1..", kMaxRateCount,
                                may_remove ? " (or 0 alone, to remove the limit)" : "", ", got ",
                                limit.count()));
  }
  if (limit.interval_ms() < 1 || limit.interval_ms() > kMaxRateIntervalMs) {
    return Invalid(absl::StrCat(field, ".interval_ms"), absl::StrCat("must be in 1..", kMaxRateIntervalMs,
                                                          ", got ", limit.interval_ms()));
  }
  if (limit.burst() < 0 || limit.burst() > kMaxRateCount) {
    return Invalid(absl::StrCat(field, ".burst"), absl::StrCat("must be 0 (count) or in 1..", kMaxRateCount,
                                                    ", got ", limit.burst()));
  }
  return absl::OkStatus();
}

// max_active or max_active_per_key (`field`): 0 (none, or removed) or
// 1..kMaxMaxActive; above 0, only for a queue of one partition.
absl::Status CheckMaxActive(absl::string_view field, int32_t limit, int32_t partitions) {
  if (limit < 0 || limit > store::kMaxMaxActive) {
    return Invalid(field, absl::StrCat("must be 0 (no limit) or in 1..", store::kMaxMaxActive,
                                       ", got ", limit));
  }
  if (limit > 0 && partitions > 1) {
    return Invalid(field, absl::StrCat("a queue with ", field, " has one partition, got partitions ",
                                       partitions));
  }
  return absl::OkStatus();
}

}  // namespace

v1::RateLimit ResolvedRateLimit(v1::RateLimit limit) {
  if (limit.count() > 0 && limit.burst() == 0) limit.set_burst(limit.count());
  return limit;
}

absl::Status ValidateCreateQueue(const v1::CreateQueueRequest& r) {
  JW_RETURN_IF_ERROR(ValidateQueueName("queue", r.queue()));
  if (r.partitions() < 0 || r.partitions() > store::kMaxPartitions) {
    return Invalid("partitions", absl::StrCat("must be 0 (one) or 1..", store::kMaxPartitions,
                                              ", got ", r.partitions()));
  }
  if (r.has_default_job_timeout_ms() &&
      (r.default_job_timeout_ms() < 0 || r.default_job_timeout_ms() > kMaxJobTimeoutMs)) {
    return Invalid("default_job_timeout_ms",
                   absl::StrCat("must be in 0..", kMaxJobTimeoutMs, " (0: no limit), got ",
                                r.default_job_timeout_ms()));
  }
  for (auto [field, has, limit] :
       {std::tuple{"rate_limit", r.has_rate_limit(), &r.rate_limit()},
        std::tuple{"key_rate_limit", r.has_key_rate_limit(), &r.key_rate_limit()}}) {
    if (!has) continue;
    JW_RETURN_IF_ERROR(ValidateRateLimit(field, *limit, /*may_remove=*/false));
    if (r.partitions() > 1) {
      return Invalid(field, absl::StrCat("a queue with ", field, " has one partition, got "
                                         "partitions ",
                                         r.partitions()));
    }
  }
  JW_RETURN_IF_ERROR(CheckMaxActive("max_active", r.max_active(), r.partitions()));
  JW_RETURN_IF_ERROR(
      CheckMaxActive("max_active_per_key", r.max_active_per_key(), r.partitions()));
  return absl::OkStatus();
}

absl::Status ValidateUpdateQueue(const v1::UpdateQueueRequest& r) {
  JW_RETURN_IF_ERROR(ValidateQueueName("queue", r.queue()));
  if (r.partitions() < 0 || r.partitions() > store::kMaxPartitions) {
    return Invalid("partitions", absl::StrCat("must be 0 (unchanged) or 1..",
                                              store::kMaxPartitions, ", got ", r.partitions()));
  }
  if (r.has_default_job_timeout_ms() &&
      (r.default_job_timeout_ms() < -1 ||  // -1: remove the queue's own
       r.default_job_timeout_ms() > kMaxJobTimeoutMs)) {
    return Invalid("default_job_timeout_ms",
                   absl::StrCat("must be -1 (remove) or 0..", kMaxJobTimeoutMs,
                                " (0: no limit), got ", r.default_job_timeout_ms()));
  }
  if (r.has_rate_limit()) {
    JW_RETURN_IF_ERROR(ValidateRateLimit("rate_limit", r.rate_limit(), /*may_remove=*/true));
  }
  if (r.has_key_rate_limit()) {
    JW_RETURN_IF_ERROR(
        ValidateRateLimit("key_rate_limit", r.key_rate_limit(), /*may_remove=*/true));
  }
  // The partition rule of an update is the store's (set_queue.lua): it
  // knows the current count.
  if (r.has_max_active()) JW_RETURN_IF_ERROR(CheckMaxActive("max_active", r.max_active(), 1));
  if (r.has_max_active_per_key()) {
    JW_RETURN_IF_ERROR(CheckMaxActive("max_active_per_key", r.max_active_per_key(), 1));
  }
  if (r.partitions() == 0 && !r.has_default_job_timeout_ms() && !r.has_rate_limit() &&
      !r.has_max_active() && !r.has_max_active_per_key() && !r.has_key_rate_limit()) {
    return Invalid("partitions",
                   "partitions, default_job_timeout_ms, rate_limit, max_active, "
                   "max_active_per_key or key_rate_limit must be given: nothing to change");
  }
  return absl::OkStatus();
}

absl::Status ValidateListJobs(const v1::ListJobsRequest& r) {
  JW_RETURN_IF_ERROR(ValidateQueueName("queue", r.queue()));
  if (r.state() < v1::JOB_STATE_PENDING || r.state() > v1::JOB_STATE_DEAD) {
    return Invalid("state", absl::StrCat("must be PENDING, ACTIVE, COMPLETED or DEAD, got ",
                                         static_cast<int>(r.state())));
  }
  if (r.page_size() < 0 || r.page_size() > kMaxPageSize) {
    return Invalid("page_size", absl::StrCat("must be 0 (default ", kDefaultPageSize, ") or in 1..",
                                             kMaxPageSize, ", got ", r.page_size()));
  }
  JW_RETURN_IF_ERROR(ParsePageToken(r.page_token()).status());
  return CheckType(r.type());
}

absl::Status ValidateRetryDead(const v1::RetryDeadRequest& r) {
  JW_RETURN_IF_ERROR(ValidateQueueName("queue", r.queue()));
  if (r.all() == (r.job_ids_size() > 0)) {
    return Invalid("job_ids", "give either job_ids or all = true, not both and not neither");
  }
  if (r.job_ids_size() > kMaxRetryIds) {
    return Invalid("job_ids", absl::StrCat("must hold at most ", kMaxRetryIds, " ids, got ",
                                           r.job_ids_size()));
  }
  for (int i = 0; i < r.job_ids_size(); ++i) {
    JW_RETURN_IF_ERROR(ValidateJobId(absl::StrCat("job_ids[", i, "]"), r.job_ids(i)));
  }
  return CheckType(r.type());
}

absl::Status ValidateDeleteJob(const v1::DeleteJobRequest& r) {
  JW_RETURN_IF_ERROR(ValidateQueueName("queue", r.queue()));
  return ValidateJobId("job_id", r.job_id());
}

absl::Status ValidateDeleteQueue(const v1::DeleteQueueRequest& r) {
  return ValidateQueueName("queue", r.queue());
}

absl::Status ValidatePurgeDead(const v1::PurgeDeadRequest& r) {
  JW_RETURN_IF_ERROR(ValidateQueueName("queue", r.queue()));
  if (r.older_than_ms() < 0) {
    return Invalid("older_than_ms", absl::StrCat("must be >= 0, got ", r.older_than_ms()));
  }
  return absl::OkStatus();
}

absl::Status ValidateScheduleName(absl::string_view name) {
  return ValidateQueueName("name", name);
}

namespace {

// Schedule.timing (cron or interval_ms) and time_zone's use with it.
absl::Status ValidateScheduleTiming(const v1::Schedule& s) {
  switch (s.timing_case()) {
    case v1::Schedule::kCron:
      if (s.cron().empty() || s.cron().size() > kMaxCronLength) {
        return Invalid("schedule.cron", absl::StrCat("must be 1..", kMaxCronLength,
                                                     " characters, got ", s.cron().size()));
      }
      return absl::OkStatus();
    case v1::Schedule::kIntervalMs:
      if (s.interval_ms() < kMinScheduleIntervalMs || s.interval_ms() > kMaxScheduleIntervalMs) {
        return Invalid("schedule.interval_ms",
                       absl::StrCat("must be ", kMinScheduleIntervalMs, "..",
                                    kMaxScheduleIntervalMs, " (1 s .. 365 days), got ",
                                    s.interval_ms()));
      }
      if (!s.time_zone().empty()) {
        return Invalid("schedule.time_zone", "applies to cron only; leave it empty with interval_ms");
      }
      return absl::OkStatus();
    case v1::Schedule::TIMING_NOT_SET:
      break;
  }
  return Invalid("schedule.cron", "one of cron and interval_ms is required");
}

}  // namespace

absl::Status ValidateSchedule(const v1::Schedule& s, const Limits& limits) {
  JW_RETURN_IF_ERROR(ValidateQueueName("schedule.name", s.name()));
  JW_RETURN_IF_ERROR(ValidateScheduleTiming(s));
  if (s.time_zone().size() > 64) {
    return Invalid("schedule.time_zone",
                   absl::StrCat("must be at most 64 characters, got ", s.time_zone().size()));
  }
  if (!s.has_job()) return Invalid("schedule.job", "is required: the job each run enqueues");
  JW_RETURN_IF_ERROR(ValidateEnqueue(s.job(), limits, "schedule.job."));
  if (!s.job().idempotency_key().empty()) {
    return Invalid("schedule.job.idempotency_key",
                   "must be empty: each run's key is \"schedule:<name>:<instant ms>\"");
  }
  if (s.job().delay_ms() != 0 || s.job().run_at_ms() != 0) {
    return Invalid(s.job().delay_ms() != 0 ? "schedule.job.delay_ms" : "schedule.job.run_at_ms",
                   "must be 0: a run's job is due at the run's instant (plus jitter_ms)");
  }
  if (s.jitter_ms() < 0 || s.jitter_ms() > kMaxScheduleJitterMs) {
    return Invalid("schedule.jitter_ms", absl::StrCat("must be 0..", kMaxScheduleJitterMs,
                                                      " (an hour), got ", s.jitter_ms()));
  }
  if (s.start_at_ms() < 0) {
    return Invalid("schedule.start_at_ms", absl::StrCat("must be >= 0, got ", s.start_at_ms()));
  }
  if (s.end_at_ms() < 0) {
    return Invalid("schedule.end_at_ms", absl::StrCat("must be >= 0, got ", s.end_at_ms()));
  }
  if (s.start_at_ms() > 0 && s.end_at_ms() > 0 && s.end_at_ms() <= s.start_at_ms()) {
    return Invalid("schedule.end_at_ms",
                   absl::StrCat("must be after start_at_ms (", s.start_at_ms(), "), got ",
                                s.end_at_ms()));
  }
  if (!v1::Schedule::CatchUp_IsValid(s.catch_up())) {
    return Invalid("schedule.catch_up", absl::StrCat("must be CATCH_UP_UNSPECIFIED (0), CATCH_UP_SKIP (1) or CATCH_UP_ONCE (2), got ",
                                                     s.catch_up()));
  }
  return absl::OkStatus();
}

}  // namespace jobwire::service
