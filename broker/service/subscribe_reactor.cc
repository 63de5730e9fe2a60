#include "broker/service/subscribe_reactor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "broker/service/grpc_status.h"

namespace jobwire::service {
namespace {

int64_t Weight(const v1::SubscribeResponse& message) {
  return std::max(1, message.events_size());
}

}  // namespace

SubscribeReactor::SubscribeReactor(core::EventFeed* feed, int64_t max_buffered_events)
    : feed_(feed), stream_(std::make_shared<Stream>(this, max_buffered_events)) {}

void SubscribeReactor::Start(const v1::SubscribeRequest& request, const absl::Status& refused) {
  if (!refused.ok()) return stream_->Finish(ToGrpcStatus(refused));
  absl::StatusOr<core::EventFeed::SubscriptionId> subscription = feed_->Subscribe(
      request, [stream = stream_](absl::StatusOr<v1::SubscribeResponse> message) {
        stream->Send(std::move(message));
      });
  if (!subscription.ok()) return stream_->Finish(ToGrpcStatus(subscription.status()));
  subscription_ = *subscription;
}

void SubscribeReactor::OnWriteDone(bool ok) { stream_->WriteDone(ok); }

void SubscribeReactor::OnCancel() { stream_->Finish(grpc::Status::CANCELLED); }

void SubscribeReactor::OnDone() {
  stream_->Detach();
  if (subscription_.has_value()) feed_->Unsubscribe(*subscription_);
  delete this;
}

void SubscribeReactor::Stream::Send(absl::StatusOr<v1::SubscribeResponse> message) {
  absl::MutexLock lock(&mu_);
  if (reactor_ == nullptr || finished_ || end_.has_value()) return;
  if (!message.ok()) {
    end_ = ToGrpcStatus(message.status());
    if (!writing_) FinishLocked(*end_);
    return;
  }
  queued_events_ += Weight(*message);
  queued_.push_back(*std::move(message));
  if (queued_events_ > max_buffered_events_) {
    // Too slow: drop what waits and end at once.
    queued_.clear();
    queued_events_ = 0;
    end_ = ToGrpcStatus(base::WithReason(
        absl::ResourceExhaustedError(absl::StrCat(
            "subscriber too slow: more than --subscribe_buffer_events=", max_buffered_events_,
            " events waited to be sent; subscribe again")),
        base::reason::kSubscriberTooSlow));
    if (!writing_) FinishLocked(*end_);
    return;
  }
  if (!writing_) WriteNextLocked();
}

void SubscribeReactor::Stream::WriteNextLocked() {
  message_ = std::move(queued_.front());
  queued_.pop_front();
  queued_events_ -= Weight(message_);
  writing_ = true;
  reactor_->StartWrite(&message_);
}

void SubscribeReactor::Stream::WriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (finished_ || reactor_ == nullptr) return;
  if (!ok) return FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
  if (end_.has_value()) return FinishLocked(*end_);
  if (!queued_.empty()) WriteNextLocked();
}

void SubscribeReactor::Stream::Finish(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  if (finished_ || reactor_ == nullptr) return;
  FinishLocked(status);
}

void SubscribeReactor::Stream::FinishLocked(const grpc::Status& status) {
  finished_ = true;
  reactor_->Finish(status);
}

void SubscribeReactor::Stream::Detach() {
  absl::MutexLock lock(&mu_);
  reactor_ = nullptr;
}

}  // namespace jobwire::service
