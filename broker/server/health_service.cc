#include "broker/server/health_service.h"

#include <optional>
#include <utility>

namespace jobwire::server {

namespace health = ::grpc::health::v1;

// One Watch stream: writes the watched service's status whenever it
// differs from the last one written, one write at a time.
class HealthService::WatchReactor final
    : public service::WriteReactor<health::HealthCheckResponse> {
 public:
  WatchReactor(HealthService* service, std::string name) : service_(service), name_(name) {}

  const std::string& name() const { return name_; }

  // The service's status now (with the service's mutex held).
  void Update(Status status) {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    if (writing_) {
      next_ = status;
      return;
    }
    StartWriteLocked(status);
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) return FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    if (next_.has_value() && *next_ != message_.status()) StartWriteLocked(*next_);
    next_.reset();
  }
  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }
  void OnDone() override {
    service_->Unwatch(this);
    delete this;
  }

 private:
  void StartWriteLocked(Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    message_.set_status(status);
    writing_ = true;
    StartWrite(&message_);
  }
  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  HealthService* const service_;
  const std::string name_;
  absl::Mutex mu_;
  health::HealthCheckResponse message_ ABSL_GUARDED_BY(mu_);  // being written
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<Status> next_ ABSL_GUARDED_BY(mu_);
};

void HealthService::Serve(grpc::ServerCompletionQueue* cq) {
  using Async = health::Health::AsyncService;
  methods_.push_back(service::ServeUnary<Async>(
      &async_service_, &Async::RequestCheck, cq,
      [this](grpc::ServerContext* ctx, const health::HealthCheckRequest* req,
             health::HealthCheckResponse* resp,
             service::UnaryReactor* reactor) { Check(ctx, req, resp, reactor); },
      /*in_flight=*/nullptr));
  methods_.push_back(service::ServeServerStream<Async>(
      &async_service_, &Async::RequestWatch, cq,
      [this](grpc::ServerContext* ctx, const health::HealthCheckRequest* req) {
        return Watch(ctx, req);
      }));
}

void HealthService::Check(grpc::ServerContext* /*ctx*/, const health::HealthCheckRequest* req,
                          health::HealthCheckResponse* resp, service::UnaryReactor* reactor) {
  Status status;
  {
    absl::MutexLock lock(&mu_);
    status = StatusLocked(req->service());
  }
  if (status == health::HealthCheckResponse::SERVICE_UNKNOWN) {
    return reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, "service name unknown"));
  }
  resp->set_status(status);
  reactor->Finish(grpc::Status::OK);
}

service::WriteReactor<health::HealthCheckResponse>* HealthService::Watch(
    grpc::ServerContext* /*ctx*/, const health::HealthCheckRequest* req) {
  auto* watcher = new WatchReactor(this, req->service());
  absl::MutexLock lock(&mu_);
  watchers_.insert(watcher);
  watcher->Update(StatusLocked(req->service()));
  return watcher;
}

void HealthService::Unwatch(WatchReactor* watcher) {
  absl::MutexLock lock(&mu_);
  watchers_.erase(watcher);
}

void HealthService::SetServingStatus(const std::string& service_name, bool serving) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  SetLocked(service_name, serving ? health::HealthCheckResponse::SERVING
                                  : health::HealthCheckResponse::NOT_SERVING);
}

void HealthService::SetServingStatus(bool serving) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  SetAllLocked(serving ? health::HealthCheckResponse::SERVING
                       : health::HealthCheckResponse::NOT_SERVING);
}

void HealthService::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  SetAllLocked(health::HealthCheckResponse::NOT_SERVING);
  shut_down_ = true;
}

HealthService::Status HealthService::StatusLocked(const std::string& name) const {
  auto it = statuses_.find(name);
  return it == statuses_.end() ? health::HealthCheckResponse::SERVICE_UNKNOWN : it->second;
}

void HealthService::SetLocked(const std::string& name, Status status) {
  statuses_[name] = status;
  for (WatchReactor* watcher : watchers_) {
    if (watcher->name() == name) watcher->Update(status);
  }
}

void HealthService::SetAllLocked(Status status) {
  for (auto& [name, current] : statuses_) current = status;
  for (WatchReactor* watcher : watchers_) {
    if (statuses_.contains(watcher->name())) watcher->Update(status);
  }
}

}  // namespace jobwire::server
