#include "broker/service/wait_reactor.h"

#include <utility>

#include "broker/service/grpc_status.h"

namespace jobwire::service {

WaitReactor::WaitReactor(core::JobWatcher* watcher)
    : watcher_(watcher), stream_(std::make_shared<Stream>(this)) {}

void WaitReactor::Start(const v1::WaitJobRequest& request, absl::Duration timeout,
                        const absl::Status& refused) {
  if (!refused.ok()) return stream_->Finish(ToGrpcStatus(refused));
  absl::StatusOr<core::JobWatcher::FollowId> follow = watcher_->Follow(
      request.queue(), request.job_id(), timeout,
      [stream = stream_](absl::StatusOr<v1::Job> job) { stream->Update(std::move(job)); });
  if (!follow.ok()) return stream_->Finish(ToGrpcStatus(follow.status()));
  follow_ = *follow;
}

void WaitReactor::OnWriteDone(bool ok) { stream_->WriteDone(ok); }

void WaitReactor::OnCancel() { stream_->Finish(grpc::Status::CANCELLED); }

void WaitReactor::OnDone() {
  stream_->Detach();
  if (follow_.has_value()) watcher_->Stop(*follow_);
  delete this;
}

void WaitReactor::Stream::Update(absl::StatusOr<v1::Job> job) {
  absl::MutexLock lock(&mu_);
  if (reactor_ == nullptr || finished_ || end_.has_value()) return;
  if (!job.ok()) {
    if (writing_) {
      end_ = ToGrpcStatus(job.status());
    } else {
      FinishLocked(ToGrpcStatus(job.status()));
    }
    return;
  }
  const bool last = job->state() == v1::JOB_STATE_COMPLETED || job->state() == v1::JOB_STATE_DEAD;
  if (last) end_ = grpc::Status::OK;
  if (writing_) {
    next_ = *std::move(job);
  } else {
    StartWrite(*std::move(job));
  }
}

void WaitReactor::Stream::StartWrite(v1::Job job) {
  *message_.mutable_job() = std::move(job);
  writing_ = true;
  if (end_.has_value() && end_->ok()) {
    finished_ = true;
    reactor_->StartWriteAndFinish(&message_, grpc::WriteOptions(), *end_);
  } else {
    reactor_->StartWrite(&message_);
  }
}

void WaitReactor::Stream::WriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (finished_ || reactor_ == nullptr) return;
  if (!ok) return FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
  if (next_.has_value()) {
    v1::Job job = *std::move(next_);
    next_.reset();
    return StartWrite(std::move(job));
  }
  if (end_.has_value()) FinishLocked(*end_);
}

void WaitReactor::Stream::Finish(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  if (finished_ || reactor_ == nullptr) return;
  FinishLocked(status);
}

void WaitReactor::Stream::FinishLocked(const grpc::Status& status) {
  finished_ = true;
  reactor_->Finish(status);
}

void WaitReactor::Stream::Detach() {
  absl::MutexLock lock(&mu_);
  reactor_ = nullptr;
}

}  // namespace jobwire::service
