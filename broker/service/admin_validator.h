// Validation of every Admin request: the limits documented in
// proto/jobwire/v1/admin.proto. Each function returns OK or INVALID_ARGUMENT
// whose message starts with the field name and states the limit.
#ifndef JOBWIRE_BROKER_SERVICE_ADMIN_VALIDATOR_H_
#define JOBWIRE_BROKER_SERVICE_ADMIN_VALIDATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "broker/service/request_validator.h"
#include "jobwire/v1/admin.pb.h"

namespace jobwire::service {

inline constexpr int kMaxPageSize = 1000;
inline constexpr int kDefaultPageSize = 50;
inline constexpr int kMaxRetryIds = 1000;

absl::Status ValidateQueueRequest(absl::string_view queue);
absl::Status ValidateListJobs(const v1::ListJobsRequest& r);
absl::Status ValidateRetryDead(const v1::RetryDeadRequest& r);
absl::Status ValidateDeleteJob(const v1::DeleteJobRequest& r);
absl::Status ValidateDeleteQueue(const v1::DeleteQueueRequest& r);
absl::Status ValidatePurgeDead(const v1::PurgeDeadRequest& r);

// `limit` with burst 0 replaced by count (RateLimit.burst's default).
v1::RateLimit ResolvedRateLimit(v1::RateLimit limit);

absl::Status ValidateCreateQueue(const v1::CreateQueueRequest& r);

// The limits of admin.proto's Schedule; its job as an Enqueue under
// `limits` (fields named "schedule.job.<field>"). The cron expression and
// the time zone are checked when they are loaded (core::ScheduleTiming).
inline constexpr int kMaxCronLength = 256;
inline constexpr int64_t kMinScheduleIntervalMs = 1000;
inline constexpr int64_t kMaxScheduleIntervalMs = 365LL * 24 * 3600 * 1000;
inline constexpr int64_t kMaxScheduleJitterMs = 3600 * 1000;
absl::Status ValidateSchedule(const v1::Schedule& s, const Limits& limits);
// DeleteSchedule's name.
absl::Status ValidateScheduleName(absl::string_view name);
absl::Status ValidateUpdateQueue(const v1::UpdateQueueRequest& r);

// Where a ListJobs page starts: a partition of the queue and an offset in it.
struct PageToken {
  int partition = 0;
  int64_t offset = 0;
};
// What a ListJobs page token stands for (partition 0, offset 0 for the empty
// token). INVALID_ARGUMENT when it is not a token this broker issued.
absl::StatusOr<PageToken> ParsePageToken(absl::string_view token);
std::string FormatPageToken(int partition, int64_t offset);

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_ADMIN_VALIDATOR_H_
