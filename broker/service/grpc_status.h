// ToGrpcStatus: the one place an absl::Status becomes the grpc::Status a
// client sees. Code and message are kept; the binary details
// (grpc-status-details-bin) are a google.rpc.Status with
//   - google.rpc.ErrorInfo {reason, domain "jobwire.dev", metadata}: always
//     (the reason attached with base::WithReason, else the code's name);
//   - google.rpc.BadRequest {field_violations: [{field, description}]}: when
//     a field was attached (base::WithField);
//   - google.rpc.RetryInfo {retry_delay}: when a delay was attached
//     (base::WithRetryDelay).
#ifndef JOBWIRE_BROKER_SERVICE_GRPC_STATUS_H_
#define JOBWIRE_BROKER_SERVICE_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace jobwire::service {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_GRPC_STATUS_H_
