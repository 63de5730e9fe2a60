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

// Finishes a unary call's `reactor` (of either gRPC API: anything with
// Finish(grpc::Status)) with `status` when it is an error (ToGrpcStatus);
// returns whether it was.
template <typename Reactor>
bool FinishIfError(Reactor* reactor, const absl::Status& status) {
  if (status.ok()) return false;
  reactor->Finish(ToGrpcStatus(status));
  return true;
}

}  // namespace jobwire::service

#endif  // JOBWIRE_BROKER_SERVICE_GRPC_STATUS_H_
