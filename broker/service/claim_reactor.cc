#include "broker/service/claim_reactor.h"

namespace jobwire::service {

ClaimReactor::ClaimReactor(core::Dispatcher* dispatcher, core::Metrics* metrics,
                           core::ClaimSpec spec)
    : dispatcher_(dispatcher), metrics_(metrics), sink_(std::make_shared<Sink>(this)) {
  metrics_->ClaimStreamOpened();
  session_ = dispatcher_->Open(std::move(spec), sink_);
}

void ClaimReactor::OnWriteDone(bool ok) { sink_->WriteDone(ok); }

void ClaimReactor::OnCancel() { sink_->Finish(grpc::Status::CANCELLED); }

void ClaimReactor::OnDone() {
  sink_->Detach();
  dispatcher_->Close(session_);
  metrics_->ClaimStreamClosed();
  delete this;
}

bool ClaimReactor::Sink::Deliver(v1::ClaimedJob job) {
  absl::MutexLock lock(&mu_);
  if (reactor_ == nullptr || finished_) return false;
  queue_.push_back(std::move(job));
  if (!writing_) {
    writing_ = true;
    reactor_->StartWrite(&queue_.front());
  }
  return true;
}

void ClaimReactor::Sink::WriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  queue_.pop_front();
  writing_ = false;
  if (!ok) {
    // The client is gone; OnDone follows once Finish is called.
    if (!finished_ && reactor_ != nullptr) {
      finished_ = true;
      reactor_->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
    }
    return;
  }
  if (!queue_.empty() && !finished_ && reactor_ != nullptr) {
    writing_ = true;
    reactor_->StartWrite(&queue_.front());
  }
}

void ClaimReactor::Sink::Finish(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  if (finished_ || reactor_ == nullptr) return;
  finished_ = true;
  reactor_->Finish(status);
}

void ClaimReactor::Sink::Close(const absl::Status& status) {
  Finish(grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message())));
}

void ClaimReactor::Sink::Detach() {
  absl::MutexLock lock(&mu_);
  reactor_ = nullptr;
}

}  // namespace jobwire::service
