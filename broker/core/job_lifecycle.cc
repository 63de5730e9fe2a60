#include "broker/core/job_lifecycle.h"

#include <utility>

#include "broker/base/logging.h"

namespace jobwire::core {

JobLifecycle::JobLifecycle(const store::JobStore* store, Dispatcher* dispatcher, Metrics* metrics,
                           LifecycleDefaults defaults)
    : store_(store),
      dispatcher_(dispatcher),
      metrics_(metrics),
      defaults_(defaults),
      enqueues_(store) {}

void JobLifecycle::Enqueue(const std::string& queue, std::vector<v1::EnqueueRequest> jobs,
                           store::Callback<std::vector<store::EnqueueOutcome>> done) {
  for (v1::EnqueueRequest& job : jobs) {
    if (job.max_attempts() == 0) job.set_max_attempts(defaults_.max_attempts);
    if (job.backoff_base_ms() == 0) job.set_backoff_base_ms(defaults_.backoff_base_ms);
    if (job.backoff_max_ms() == 0) {
      job.set_backoff_max_ms(std::max(defaults_.backoff_max_ms, job.backoff_base_ms()));
    }
  }
  enqueues_.Enqueue(queue, std::move(jobs),
                    [this, queue, done = std::move(done)](
                        absl::StatusOr<std::vector<store::EnqueueOutcome>> result) {
                      if (result.ok()) {
                        for (const store::EnqueueOutcome& out : *result) {
                          if (!out.duplicate) metrics_->JobEnqueued(queue);
                        }
                      }
                      done(std::move(result));
                    });
}

void JobLifecycle::Ack(const std::string& queue, const std::vector<const v1::AckRequest*>& acks,
                       store::Callback<std::vector<absl::Status>> done) {
  std::vector<std::pair<std::string, std::string>> refs;  // (job id, lease token)
  refs.reserve(acks.size());
  for (const v1::AckRequest* ack : acks) refs.emplace_back(ack->job_id(), ack->lease_token());
  store_->Ack(queue, acks,
              [this, queue, refs = std::move(refs),
               done = std::move(done)](absl::StatusOr<std::vector<store::AckOutcome>> result) {
                if (!result.ok()) return done(result.status());
                std::vector<absl::Status> statuses;
                statuses.reserve(result->size());
                for (size_t i = 0; i < refs.size(); ++i) {
                  const store::AckOutcome& ack = (*result)[i];
                  statuses.push_back(ack.status);
                  if (!ack.status.ok() || ack.repeat) continue;
                  metrics_->JobAcked(queue);
                  dispatcher_->OnJobSettled(queue, refs[i].first, refs[i].second,
                                            /*acked=*/true);
                }
                done(std::move(statuses));
              });
}

void JobLifecycle::Fail(const v1::FailRequest& request, store::Callback<store::FailOutcome> done) {
  store_->Fail(request, [this, queue = request.queue(), id = request.job_id(),
                         token = request.lease_token(),
                         done = std::move(done)](absl::StatusOr<store::FailOutcome> result) {
    if (result.ok() && !result->repeat) {
      metrics_->JobFailed(queue, result->dead);
      dispatcher_->OnJobSettled(queue, id, token, /*acked=*/false);
    }
    done(std::move(result));
  });
}

void JobLifecycle::ExtendLease(const v1::ExtendLeaseRequest& request,
                               store::Callback<int64_t> done) {
  int64_t lease_ms = request.lease_ms() == 0 ? defaults_.lease_ms : request.lease_ms();
  store_->ExtendLease(request.queue(), request.job_id(), request.lease_token(), lease_ms,
                      [this, queue = request.queue(), id = request.job_id(),
                       token = request.lease_token(), lease_ms,
                       done = std::move(done)](absl::StatusOr<int64_t> result) {
                        if (result.ok()) dispatcher_->OnLeaseExtended(queue, id, token, lease_ms);
                        done(std::move(result));
                      });
}

void JobLifecycle::Cancel(const v1::CancelRequest& request, store::Callback<bool> done) {
  store_->Cancel(request.queue(), request.job_id(),
                 [this, queue = request.queue(), done = std::move(done)](absl::StatusOr<bool> result) {
                   if (result.ok()) metrics_->JobCancelled(queue);
                   done(std::move(result));
                 });
}

void JobLifecycle::GetJob(const v1::GetJobRequest& request, store::Callback<v1::Job> done) {
  store_->GetJob(request.queue(), request.job_id(), std::move(done));
}

}  // namespace jobwire::core
