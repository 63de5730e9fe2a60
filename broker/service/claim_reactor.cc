#include "broker/service/claim_reactor.h"

#include <iterator>
#include <utility>

#include "broker/service/grpc_status.h"

namespace jobwire::service {

ClaimReactor::ClaimReactor(core::Dispatcher* dispatcher, core::Metrics* metrics,
                           core::ClaimSpec spec)
    : dispatcher_(dispatcher),
      metrics_(metrics),
      queues_(spec.queues.begin(), spec.queues.end()),
      sink_(std::make_shared<Sink>(this, dispatcher, spec.max_in_flight)) {
  absl::StatusOr<core::Dispatcher::SessionId> session = dispatcher_->Open(std::move(spec), sink_);
  if (!session.ok()) {
    sink_->Close(session.status());  // RESOURCE_EXHAUSTED: a stream limit
    return;
  }
  session_ = *session;
  metrics_->ClaimStreamOpened(queues_);
}

void ClaimReactor::OnWriteDone(bool ok) { sink_->WriteDone(ok); }

void ClaimReactor::OnCancel() { sink_->Finish(grpc::Status::CANCELLED); }

void ClaimReactor::OnDone() {
  sink_->Detach();
  if (session_.has_value()) {
    dispatcher_->Close(*session_);
    metrics_->ClaimStreamClosed(queues_);
  }
  delete this;
}

bool ClaimReactor::Sink::Deliver(std::vector<v1::ClaimedJob> jobs) {
  absl::MutexLock lock(&mu_);
  if (reactor_ == nullptr || finished_) return false;
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

void ClaimReactor::Sink::Stop(v1::StopRun stop) {
  absl::MutexLock lock(&mu_);
  if (reactor_ == nullptr || finished_) return;
  for (const v1::StopRun& s : stops_) {
    if (s.job_id() == stop.job_id() && s.lease_token() == stop.lease_token()) return;
  }
  stops_.push_back(std::move(stop));
  if (!writing_) StartWrite();
}

void ClaimReactor::Sink::StartWrite() {
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
  writing_ = true;
  reactor_->StartWrite(&message_);
}

void ClaimReactor::Sink::WriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (!ok) {
    // The client is gone; OnDone follows once Finish is called.
    if (!finished_ && reactor_ != nullptr) {
      finished_ = true;
      reactor_->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
    }
    ReturnWaiting();
    return;
  }
  if ((!waiting_.empty() || !stops_.empty()) && !finished_ && reactor_ != nullptr) StartWrite();
}

void ClaimReactor::Sink::Finish(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  if (finished_ || reactor_ == nullptr) return;
  finished_ = true;
  reactor_->Finish(status);
  ReturnWaiting();
}

void ClaimReactor::Sink::Close(const absl::Status& status) {
  Finish(ToGrpcStatus(status));
}

void ClaimReactor::Sink::Detach() {
  absl::MutexLock lock(&mu_);
  reactor_ = nullptr;
  ReturnWaiting();
}

void ClaimReactor::Sink::ReturnWaiting() {
  if (waiting_.empty()) return;
  std::vector<v1::ClaimedJob> unsent(std::make_move_iterator(waiting_.begin()),
                                     std::make_move_iterator(waiting_.end()));
  waiting_.clear();
  dispatcher_->ReturnUnsent(std::move(unsent));
}

}  // namespace jobwire::service
