// HealthReporter: drives the standard gRPC health service (grpc.health.v1)
// of one broker. The broker reports SERVING, for the whole server ("") and
// for jobwire.v1.BrokerService, only while its Redis command connection is up and
// it is not draining; NOT_SERVING otherwise (and before Redis first
// connects): readiness probes and load balancers read it. The service
// "jobwire.liveness" is SERVING from the start and stays so (a Redis outage
// or a drain is no reason to restart the process): liveness probes read it,
// and it goes away only with the server.
#ifndef JOBWIRE_BROKER_SERVER_HEALTH_REPORTER_H_
#define JOBWIRE_BROKER_SERVER_HEALTH_REPORTER_H_

#include <grpcpp/health_check_service_interface.h>

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace jobwire::server {

// The service names that get a status (besides "", the whole server).
inline constexpr const char* kBrokerServiceName = "jobwire.v1.BrokerService";
// SERVING while the process serves gRPC at all, whatever Redis does.
inline constexpr const char* kLivenessServiceName = "jobwire.liveness";

// Thread safety: every method may be called from any thread.
class HealthReporter {
 public:
  // Starts with Redis down and not draining.
  HealthReporter() = default;

  // Adds a server's health service (the broker's listener, and the
  // plaintext health listener when there is one) and publishes the current
  // status to it. `service` must outlive the reporter's last publication.
  void Attach(grpc::HealthCheckServiceInterface* service);

  void SetRedisUp(bool up);
  // Once draining, the broker stays NOT_SERVING.
  void SetDraining();

  bool serving() const;

 private:
  // Sets the status on the attached service; `log`: one line about it.
  void PublishLocked(bool log = true) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<grpc::HealthCheckServiceInterface*> services_ ABSL_GUARDED_BY(mu_);
  bool redis_up_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_HEALTH_REPORTER_H_
