#include "client/cpp/claimed_job.h"

#include <optional>
#include <string>
#include <utility>

#include "client/cpp/error_details.h"

namespace jobwire::client {

Job FromClaimed(const v1::ClaimedJob& claimed, std::shared_ptr<RunSignal> signal,
                Client* client, absl::Time received) {
  const v1::Job& from = claimed.job();
  Job::ProgressFn progress = [client, signal, queue = from.queue(), id = from.id(),
                              token = claimed.lease_token()](std::optional<int32_t> percent,
                                                             std::string data) {
    absl::Status status = client->ReportProgress(queue, id, token, percent, std::move(data));
    const std::string why = ErrorReason(status);
    if (why == reason::kJobCancelRequested) signal->Raise(StopReason::kCancelled);
    if (why == reason::kRunTimedOut) signal->Raise(StopReason::kTimedOut);
    return status;
  };
  Job job(std::move(signal), std::move(progress));
  job.id = from.id();
  job.queue = from.queue();
  job.type = from.type();
  job.payload = from.payload();
  job.headers.insert(from.headers().begin(), from.headers().end());
  job.concurrency_key = from.concurrency_key();
  job.depends_on.assign(from.depends_on().begin(), from.depends_on().end());
  job.dependency_results.insert(from.dependency_results().begin(), from.dependency_results().end());
  job.run_after_failed_dependency = from.run_after_failed_dependency();
  job.attempt = from.attempts();
  job.max_attempts = from.max_attempts();
  job.lease_expires_at_ms = claimed.lease_expires_at_ms();
  job.lease_ms = claimed.lease_ms();
  job.timeout_ms = from.timeout_ms();
  if (job.timeout_ms > 0) job.deadline = received + absl::Milliseconds(job.timeout_ms);
  return job;
}

}  // namespace jobwire::client
