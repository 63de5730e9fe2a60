#include "broker/service/claim_stream.h"

#include <iterator>
#include <utility>

#include "broker/service/grpc_status.h"

namespace jobwire::service {

ClaimStream::ClaimStream(Writer* writer, core::Dispatcher* dispatcher, core::Metrics* metrics)
    : dispatcher_(dispatcher), metrics_(metrics), writer_(writer) {}

void ClaimStream::Open(core::ClaimSpec spec) {
  std::vector<std::string> queues(spec.queues.begin(), spec.queues.end());
  {
    absl::MutexLock lock(&mu_);
    max_queued_ = static_cast<size_t>(spec.max_in_flight < 1 ? 1 : spec.max_in_flight);
  }
  absl::StatusOr<core::Dispatcher::SessionId> session =
      dispatcher_->Open(std::move(spec), shared_from_this());
  if (!session.ok()) {
    Close(session.status());  // RESOURCE_EXHAUSTED: a stream limit
    return;
  }
  metrics_->ClaimStreamOpened(queues);
  absl::MutexLock lock(&mu_);
  session_ = *session;
  queues_ = std::move(queues);
}

bool ClaimStream::Deliver(std::vector<v1::ClaimedJob> jobs) {
  absl::MutexLock lock(&mu_);
  if (writer_ == nullptr || finished_) return false;
  for (v1::ClaimedJob& job : jobs) waiting_.push_back(std::move(job));
  // The Dispatcher hands over a job only for a free slot, and a slot of a
  // job still waiting here frees only when its lease ran out: a client that
  // does not read must not make this queue grow lease after lease. Such
  // jobs are useless to the client (their tokens are stale; the reaper
  // gives them to another worker), so drop them, oldest first.
  while (waiting_.size() > max_queued_) waiting_.pop_front();
  if (!writing_) StartWrite();
  return true;
}

void ClaimStream::Stop(v1::StopRun stop) {
  absl::MutexLock lock(&mu_);
  if (writer_ == nullptr || finished_) return;
  for (const v1::StopRun& s : stops_) {
    if (s.job_id() == stop.job_id() && s.lease_token() == stop.lease_token()) return;
  }
  stops_.push_back(std::move(stop));
  if (!writing_) StartWrite();
}

void ClaimStream::Answer(v1::WorkAcksAnswer answer) {
  absl::MutexLock lock(&mu_);
  if (writer_ == nullptr || finished_) return;
  answers_.push_back(std::move(answer));
  if (!writing_) StartWrite();
}

bool ClaimStream::IfOpen(absl::FunctionRef<void()> fn) {
  absl::MutexLock lock(&mu_);
  if (writer_ == nullptr || finished_) return false;
  fn();
  return true;
}

bool ClaimStream::HasWaiting() const {
  return !waiting_.empty() || !stops_.empty() || !answers_.empty();
}

void ClaimStream::StartWrite() {
  message_.Clear();
  size_t bytes = 0;
  while (!waiting_.empty()) {
    const size_t size = waiting_.front().ByteSizeLong();
    if (message_.jobs_size() > 0 && bytes + size > kMaxMessageBytes) break;
    bytes += size;
    *message_.add_jobs() = std::move(waiting_.front());
    waiting_.pop_front();
  }
  if (waiting_.empty()) {
    for (v1::StopRun& stop : stops_) *message_.add_stops() = std::move(stop);
    stops_.clear();
  }
  for (v1::WorkAcksAnswer& answer : answers_) *message_.add_ack_answers() = std::move(answer);
  answers_.clear();
  writing_ = true;
  writer_->Write(&message_);
}

void ClaimStream::WriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (!ok) {
    // The client is gone; OnDone follows once the stream is finished.
    if (!finished_ && writer_ != nullptr) {
      finished_ = true;
      writer_->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
    }
    ReturnWaiting();
    return;
  }
  if (HasWaiting() && !finished_ && writer_ != nullptr) StartWrite();
}

void ClaimStream::Finish(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  if (finished_ || writer_ == nullptr) return;
  finished_ = true;
  writer_->End(status);
  ReturnWaiting();
}

void ClaimStream::Close(const absl::Status& status) { Finish(ToGrpcStatus(status)); }

void ClaimStream::Detach() {
  std::optional<core::Dispatcher::SessionId> session;
  std::vector<std::string> queues;
  {
    absl::MutexLock lock(&mu_);
    writer_ = nullptr;
    ReturnWaiting();
    session = std::exchange(session_, std::nullopt);
    queues = std::move(queues_);
  }
  if (session.has_value()) {
    dispatcher_->Close(*session);
    metrics_->ClaimStreamClosed(queues);
  }
}

void ClaimStream::ReturnWaiting() {
  if (waiting_.empty()) return;
  std::vector<v1::ClaimedJob> unsent(std::make_move_iterator(waiting_.begin()),
                                     std::make_move_iterator(waiting_.end()));
  waiting_.clear();
  dispatcher_->ReturnUnsent(std::move(unsent));
}

}  // namespace jobwire::service
