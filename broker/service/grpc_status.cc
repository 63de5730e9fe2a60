#include "broker/service/grpc_status.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace jobwire::service {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  google::rpc::Status details;
  details.set_code(static_cast<int>(status.code()));
  details.set_message(std::string(status.message()));

  google::rpc::ErrorInfo info;
  info.set_reason(base::ReasonOf(status));
  info.set_domain(std::string(base::kErrorDomain));
  for (auto& [key, value] : base::MetadataOf(status)) (*info.mutable_metadata())[key] = value;
  details.add_details()->PackFrom(info);

  if (std::optional<std::string> field = base::FieldOf(status); field.has_value()) {
    google::rpc::BadRequest bad_request;
    google::rpc::BadRequest::FieldViolation* violation = bad_request.add_field_violations();
    violation->set_field(*field);
    violation->set_description(std::string(status.message()));
    details.add_details()->PackFrom(bad_request);
  }
  if (std::optional<absl::Duration> delay = base::RetryDelayOf(status); delay.has_value()) {
    google::rpc::RetryInfo retry;
    const int64_t ms = absl::ToInt64Milliseconds(*delay);
    retry.mutable_retry_delay()->set_seconds(ms / 1000);
    retry.mutable_retry_delay()->set_nanos(static_cast<int32_t>(ms % 1000) * 1000000);
    details.add_details()->PackFrom(retry);
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()),
                      details.SerializeAsString());
}

}  // namespace jobwire::service
