// Validation of every Admin request: the limits documented in
// proto/jobwire/v1/admin.proto. Each function returns OK or INVALID_ARGUMENT
// whose message starts with the field name and states the limit.
#ifndef JOBWIRE_BROKER_SERVICE_ADMIN_VALIDATOR_H_
#define JOBWIRE_BROKER_SERVICE_ADMIN_VALIDATOR_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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

// The offset a ListJobs page token stands for (0 for the empty token).
// INVALID_ARGUMENT when it is not a token this broker issued.
absl::StatusOr<int64_t> ParsePageToken(absl::string_view token);

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_ADMIN_VALIDATOR_H_
