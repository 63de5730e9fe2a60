#include "broker/service/work_reactor.h"

#include <utility>

#include "broker/base/error_reason.h"
#include "broker/service/broker_service.h"
#include "broker/service/grpc_status.h"

namespace jobwire::service {

WorkReactor::WorkReactor(BrokerService* service, grpc::ServerContextBase* ctx,
                         core::Dispatcher* dispatcher, core::Metrics* metrics)
    : service_(service),
      ctx_(ctx),
      stream_(std::make_shared<ClaimStream>(static_cast<ClaimStream::Writer*>(this), dispatcher,
                                            metrics)) {
  StartRead(&request_);
}

void WorkReactor::OnReadDone(bool ok) {
  if (!ok) {
    // Half-closed by the client, or the stream broke.
    stream_->Finish(opened_ ? grpc::Status::OK
                            : grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                           "claim: the stream ended before its first message"));
    return;
  }
  if (!opened_) return OpenClaim();
  if (request_.has_claim()) {
    stream_->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "claim: only the first message of a Work stream may hold one"));
    return;
  }
  SettleAcks();
}

void WorkReactor::OpenClaim() {
  opened_ = true;
  if (!request_.has_claim()) {
    stream_->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "claim: the first message of a Work stream must hold one"));
    return;
  }
  absl::StatusOr<core::ClaimSpec> spec = service_->ClaimSpecFor(*ctx_, request_.claim());
  if (!spec.ok()) {
    stream_->Close(spec.status());
    return;
  }
  stream_->Open(*std::move(spec));
  ReadNext();
}

void WorkReactor::SettleAcks() {
  auto batch = std::make_shared<v1::AckBatchRequest>();
  batch->mutable_acks()->Swap(request_.mutable_acks()->mutable_acks());
  auto response = std::make_shared<v1::AckBatchResponse>();
  bool pause;
  {
    absl::MutexLock lock(&reads_->mu);
    pause = ++reads_->unanswered >= kMaxUnansweredBatches;
    reads_->paused = pause;
  }
  service_->SettleAcks(
      *ctx_, *batch, response.get(),
      [this, id = request_.acks().id(), batch, response, stream = stream_,
       reads = reads_](const absl::Status& status) {
        v1::WorkAcksAnswer answer;
        answer.set_id(id);
        answer.set_code(static_cast<int>(status.code()));
        answer.set_message(std::string(status.message()));
        if (status.ok()) {
          answer.mutable_results()->Swap(response->mutable_results());
        } else {
          answer.set_reason(base::ReasonOf(status));
        }
        stream->Answer(std::move(answer));
        bool resume;
        {
          absl::MutexLock lock(&reads->mu);
          --reads->unanswered;
          resume = std::exchange(reads->paused, false);
        }
        // `this` is alive while the stream is open (OnDone detaches it).
        if (resume) stream->IfOpen([this] { StartRead(&request_); });
      });
  if (!pause) ReadNext();
}

void WorkReactor::ReadNext() {
  stream_->IfOpen([this] { StartRead(&request_); });
}

void WorkReactor::OnWriteDone(bool ok) { stream_->WriteDone(ok); }

void WorkReactor::OnCancel() { stream_->Finish(grpc::Status::CANCELLED); }

void WorkReactor::OnDone() {
  stream_->Detach();
  delete this;
}

}  // namespace jobwire::service
