#include "broker/service/admin_validator.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "broker/base/status_macros.h"
#include "broker/service/request_validator.h"

namespace jobwire::service {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
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

absl::StatusOr<int64_t> ParsePageToken(absl::string_view token) {
  if (token.empty()) return 0;
  int64_t offset = 0;
  if (!absl::SimpleAtoi(token, &offset) || offset < 0 || absl::StrCat(offset) != token) {
    return Invalid("page_token", "is not a next_page_token from a ListJobs response");
  }
  return offset;
}

absl::Status ValidateListJobs(const v1::ListJobsRequest& r) {
  JW_RETURN_IF_ERROR(ValidateQueueName("queue", r.queue()));
  if (r.state() < v1::PENDING || r.state() > v1::DEAD) {
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

}  // namespace jobwire::service
