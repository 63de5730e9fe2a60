#include "client/cpp/claim_stream.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/cpp/error_details.h"

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
      if (absl::IsUnimplemented(status) && !claim_only_) {
        claim_only_ = true;  // a broker older than Work: Claim at once
        continue;
      }
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
  bool claim_only;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return absl::OkStatus();
    context_ = &context;
    claim_only = claim_only_;
  }
  v1::ClaimRequest request = base;
  request.set_max_in_flight(free_slots);
  absl::Status status = claim_only ? ReadClaimStream(&context, request, backoff)
                                   : ReadWorkStream(&context, request, backoff);
  // Cleared before `context` is destroyed, under the lock Stop cancels it with.
  absl::MutexLock lock(&mu_);
  context_ = nullptr;
  return status;
}

absl::Status ClaimStream::ReadClaimStream(grpc::ClientContext* context,
                                          const v1::ClaimRequest& request, Backoff* backoff) {
  std::unique_ptr<grpc::ClientReader<v1::ClaimResponse>> reader =
      params_.client->Claim(context, request);
  v1::ClaimResponse message;
  while (reader->Read(&message)) {
    backoff->Reset();
    params_.receive(message);
  }
  return FromGrpc(reader->Finish());
}

absl::Status ClaimStream::ReadWorkStream(grpc::ClientContext* context,
                                         const v1::ClaimRequest& request, Backoff* backoff) {
  std::unique_ptr<WorkStream> work = params_.client->Work(context);
  v1::WorkRequest first;
  *first.mutable_claim() = request;
  if (work->Write(first)) {
    absl::MutexLock lock(&mu_);
    work_ = work.get();
  }
  v1::WorkResponse message;
  v1::ClaimResponse delivered;
  while (work->Read(&message)) {
    backoff->Reset();
    Answered(message);
    if (message.jobs_size() == 0 && message.stops_size() == 0) continue;
    delivered.mutable_jobs()->Swap(message.mutable_jobs());
    delivered.mutable_stops()->Swap(message.mutable_stops());
    params_.receive(delivered);
  }
  WorkEnded();
  return FromGrpc(work->Finish());
}

std::optional<absl::StatusOr<std::vector<absl::Status>>> ClaimStream::SendAcks(
    const v1::AckBatchRequest& batch) {
  auto pending = std::make_shared<PendingAcks>();
  pending->acks = batch.acks_size();
  uint64_t id;
  {
    absl::MutexLock write_lock(&write_mu_);
    WorkStream* work;
    v1::WorkRequest request;
    {
      absl::MutexLock lock(&mu_);
      if (work_ == nullptr) return std::nullopt;
      work = work_;
      id = next_acks_id_++;
      request.mutable_acks()->set_id(id);
      pending_[id] = pending;
    }
    *request.mutable_acks()->mutable_acks() = batch.acks();
    // A failed write: the stream is ending, and WorkEnded resolves it.
    work->Write(request);
  }
  if (!pending->done.WaitForNotificationWithTimeout(params_.client->timeout())) {
    absl::MutexLock lock(&mu_);
    if (pending_.erase(id) > 0) {
      return absl::StatusOr<std::vector<absl::Status>>(absl::DeadlineExceededError(
          "Work: the acks were not answered within the call deadline"));
    }
  }
  pending->done.WaitForNotification();  // answered, or the stream ended, meanwhile
  return std::move(pending->answer);
}

void ClaimStream::Answered(const v1::WorkResponse& message) {
  for (const v1::WorkAcksAnswer& answer : message.ack_answers()) {
    std::shared_ptr<PendingAcks> pending;
    {
      absl::MutexLock lock(&mu_);
      auto it = pending_.find(answer.id());
      if (it == pending_.end()) continue;
      pending = std::move(it->second);
      pending_.erase(it);
    }
    if (answer.code() == 0) {
      pending->answer = Client::AckResults(answer, pending->acks);
    } else {
      absl::Status error(static_cast<absl::StatusCode>(answer.code()), answer.message());
      AttachReason(answer.reason(), &error);
      pending->answer = std::move(error);
    }
    pending->done.Notify();
  }
}

void ClaimStream::WorkEnded() {
  absl::flat_hash_map<uint64_t, std::shared_ptr<PendingAcks>> unanswered;
  {
    absl::MutexLock write_lock(&write_mu_);
    absl::MutexLock lock(&mu_);
    work_ = nullptr;
    unanswered.swap(pending_);
  }
  for (auto& [id, pending] : unanswered) pending->done.Notify();
}

}  // namespace jobwire::client
