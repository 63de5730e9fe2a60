#include "client/cpp/claim_stream.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace jobwire::client {

ClaimStream::ClaimStream(Params params) : params_(std::move(params)) {}

void ClaimStream::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

absl::Status ClaimStream::Run(const std::vector<std::string>& types) {
  v1::ClaimRequest base = params_.request;
  for (const std::string& type : types) base.add_types(type);
  Backoff backoff(kInitialBackoff, kMaxBackoff);
  while (true) {
    const int free_slots = params_.await_free_slots();
    if (free_slots <= 0) return absl::OkStatus();
    absl::Status status = ReadOneStream(base, free_slots, &backoff);
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) return absl::OkStatus();
    }
    if (absl::IsInvalidArgument(status)) return status;
    params_.log(absl::StrCat("claim stream ended (", status.ToString(), "); reconnecting"));
    const absl::Duration wait = backoff.Next();
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stopped_), wait);
    if (stopped_) return absl::OkStatus();
  }
}

absl::Status ClaimStream::ReadOneStream(const v1::ClaimRequest& base, int free_slots,
                                        Backoff* backoff) {
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return absl::OkStatus();
    context_ = &context;
  }
  v1::ClaimRequest request = base;
  request.set_max_in_flight(free_slots);
  std::unique_ptr<grpc::ClientReader<v1::ClaimResponse>> reader =
      params_.client->Claim(&context, request);
  v1::ClaimResponse message;
  while (reader->Read(&message)) {
    backoff->Reset();
    params_.receive(message);
  }
  absl::Status status = FromGrpc(reader->Finish());
  // Cleared before `context` is destroyed, under the lock Stop cancels it with.
  absl::MutexLock lock(&mu_);
  context_ = nullptr;
  return status;
}

}  // namespace jobwire::client
