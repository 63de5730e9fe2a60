// HealthService: the standard gRPC health service (grpc.health.v1.Health),
// served on a completion queue of ours (service/cq_reactors.h) rather than
// by gRPC's default health service, whose callback-API threads would poll
// beside the queue's one thread and take a share of every call's events.
//
// It behaves as gRPC's default service does:
//   - Check answers the status of the named service ("" is the whole
//     server), or NOT_FOUND for a name that never got a status;
//   - Watch writes the status at once (SERVICE_UNKNOWN for such a name),
//     then each change, and runs until the client cancels or the server
//     shuts down; a client that reads slowly gets the latest status, not
//     every one in between;
//   - after Shutdown every service is NOT_SERVING and stays so.
// The statuses are set through grpc::HealthCheckServiceInterface (see
// HealthReporter).
//
// Lifetime: Serve once the server is built; the service must outlive the
// queue's polling (its Watch streams end before that).
//
// Thread safety: every method may be called from any thread.
#ifndef JOBWIRE_BROKER_SERVER_HEALTH_SERVICE_H_
#define JOBWIRE_BROKER_SERVER_HEALTH_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "broker/service/cq_reactors.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace jobwire::server {

class HealthService final : public grpc::HealthCheckServiceInterface {
 public:
  HealthService() = default;

  // For ServerBuilder::RegisterService.
  grpc::Service* grpc_service() { return &async_service_; }
  // Starts serving Check and Watch on `cq`; call once.
  void Serve(grpc::ServerCompletionQueue* cq);

  void SetServingStatus(const std::string& service_name, bool serving) override;
  // Every service that has a status.
  void SetServingStatus(bool serving) override;
  void Shutdown() override;

 private:
  using Status = grpc::health::v1::HealthCheckResponse::ServingStatus;
  class WatchReactor;

  void Check(grpc::ServerContext* ctx, const grpc::health::v1::HealthCheckRequest* req,
             grpc::health::v1::HealthCheckResponse* resp, service::UnaryReactor* reactor);
  service::WriteReactor<grpc::health::v1::HealthCheckResponse>* Watch(
      grpc::ServerContext* ctx, const grpc::health::v1::HealthCheckRequest* req);
  // SERVICE_UNKNOWN when `name` has no status.
  Status StatusLocked(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets `name`'s status and tells its watchers.
  void SetLocked(const std::string& name, Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every service that has a status gets `status`, and so do its watchers.
  void SetAllLocked(Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unwatch(WatchReactor* watcher);

  grpc::health::v1::Health::AsyncService async_service_;
  std::vector<std::shared_ptr<void>> methods_;  // what Serve started
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Status> statuses_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<WatchReactor*> watchers_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_HEALTH_SERVICE_H_
