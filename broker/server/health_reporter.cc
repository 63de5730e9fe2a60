#include "broker/server/health_reporter.h"

#include "broker/base/logging.h"

namespace jobwire::server {

void HealthReporter::Attach(grpc::HealthCheckServiceInterface* service) {
  absl::MutexLock lock(&mu_);
  services_.push_back(service);
  service->SetServingStatus(kLivenessServiceName, true);
  PublishLocked(/*log=*/false);
}

void HealthReporter::SetRedisUp(bool up) {
  absl::MutexLock lock(&mu_);
  if (redis_up_ == up) return;
  redis_up_ = up;
  PublishLocked();
}

void HealthReporter::SetDraining() {
  absl::MutexLock lock(&mu_);
  if (draining_) return;
  draining_ = true;
  PublishLocked();
}

bool HealthReporter::serving() const {
  absl::MutexLock lock(&mu_);
  return redis_up_ && !draining_;
}

void HealthReporter::PublishLocked(bool log) {
  const bool serving = redis_up_ && !draining_;
  if (log) {
    base::Log(base::LogLevel::kInfo, "health",
              {{"status", serving ? "SERVING" : "NOT_SERVING"},
               {"redis", redis_up_ ? "up" : "down"},
               {"draining", draining_}});
  }
  for (grpc::HealthCheckServiceInterface* service : services_) {
    service->SetServingStatus("", serving);
    service->SetServingStatus(kBrokerServiceName, serving);
  }
}

}  // namespace jobwire::server
