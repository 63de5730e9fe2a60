#include "broker/service/claim_reactor.h"

#include <utility>

namespace jobwire::service {

ClaimReactor::ClaimReactor(core::Dispatcher* dispatcher, core::Metrics* metrics,
                           core::ClaimSpec spec)
    : stream_(std::make_shared<ClaimStream>(static_cast<ClaimStream::Writer*>(this), dispatcher,
                                            metrics)) {
  stream_->Open(std::move(spec));
}

void ClaimReactor::Write(v1::WorkResponse* message) {
  message_.mutable_jobs()->Swap(message->mutable_jobs());
  message_.mutable_stops()->Swap(message->mutable_stops());
  StartWrite(&message_);
}

void ClaimReactor::OnWriteDone(bool ok) { stream_->WriteDone(ok); }

void ClaimReactor::OnCancel() { stream_->Finish(grpc::Status::CANCELLED); }

void ClaimReactor::OnDone() {
  stream_->Detach();
  delete this;
}

}  // namespace jobwire::service
