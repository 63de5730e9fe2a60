#include "broker/core/job_lifecycle.h"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "broker/base/logging.h"
#include "broker/core/fan_in.h"
#include "broker/store/keys.h"

namespace jobwire::core {
namespace {

// The first depends_on entry of `job` that is an id of its own queue (not
// a ref "<queue>/<id>" to a parent elsewhere); null when none is.
const std::string* FirstLocalParent(const v1::EnqueueRequest& job) {
  for (const std::string& entry : job.depends_on()) {
    if (!IsParentRef(entry)) return &entry;
  }
  return nullptr;
}

// The partition of a queue of `count` that `job` goes to: its parents'
// (its depends_on ids name one partition; past the count, the last, where
// they are not found), else its idempotency key's, else `unkeyed`.
int PartitionFor(const v1::EnqueueRequest& job, int count, int unkeyed) {
  if (const std::string* parent = FirstLocalParent(job)) {
    return std::min(store::PartitionOfJobId(*parent), count - 1);
  }
  const std::string& key = job.idempotency_key();
  return key.empty() ? unkeyed : QueuePartitions::PartitionOfKey(key, count);
}

// The partition of each of `jobs` (PartitionFor), except that the jobs
// linked by depends_on_batch_index share one: that of the first linked job
// with depends_on ids (the validator made every such job of a linked set
// name one partition), else that of the set's first job.
std::vector<int> Partitions(const std::vector<v1::EnqueueRequest>& jobs, int count, int unkeyed) {
  std::vector<size_t> link(jobs.size());  // union-find over batch links
  std::iota(link.begin(), link.end(), 0);
  auto root = [&link](size_t i) {
    while (link[i] != i) i = link[i] = link[link[i]];
    return i;
  };
  for (size_t i = 0; i < jobs.size(); ++i) {
    for (int parent : jobs[i].depends_on_batch_index()) link[root(i)] = root(parent);
  }
  std::vector<int> chosen(jobs.size(), -1);  // by root
  for (size_t i = 0; i < jobs.size(); ++i) {
    int& c = chosen[root(i)];
    if (c < 0 && FirstLocalParent(jobs[i]) != nullptr) c = PartitionFor(jobs[i], count, unkeyed);
  }
  std::vector<int> partition(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    int& c = chosen[root(i)];
    if (c < 0) c = PartitionFor(jobs[i], count, unkeyed);
    partition[i] = c;
  }
  return partition;
}

// The store name of the partition holding `job_id` of `queue`.
std::string PartitionOf(const std::string& queue, const std::string& job_id) {
  return store::PartitionQueue(queue, store::PartitionOfJobId(job_id));
}

}  // namespace

JobLifecycle::JobLifecycle(const store::JobStore* store, QueuePartitions* partitions,
                           Dispatcher* dispatcher, DependencyLinks* links, Metrics* metrics,
                           LifecycleDefaults defaults)
    : store_(store),
      partitions_(partitions),
      dispatcher_(dispatcher),
      links_(links),
      metrics_(metrics),
      defaults_(defaults),
      enqueues_(store, [dispatcher](const std::string& queue, std::vector<std::string> types,
                                    std::function<void(std::optional<store::HandOff>)> send) {
        dispatcher->OfferHandOff(queue, std::move(types), std::move(send));
      }) {}

void JobLifecycle::Enqueue(const std::string& queue, std::vector<v1::EnqueueRequest> jobs,
                           store::Callback<std::vector<store::EnqueueOutcome>> done) {
  for (v1::EnqueueRequest& job : jobs) {
    if (job.max_attempts() == 0) job.set_max_attempts(defaults_.max_attempts);
    if (job.backoff_base_ms() == 0) job.set_backoff_base_ms(defaults_.backoff_base_ms);
    if (job.backoff_max_ms() == 0) {
      job.set_backoff_max_ms(std::max(defaults_.backoff_max_ms, job.backoff_base_ms()));
    }
  }
  if (!HasParentRefs(jobs)) return Store(queue, std::move(jobs), std::move(done));
  // Parents elsewhere: checked before, linked after (DependencyLinks).
  links_->Check(std::move(jobs), [this, queue, done = std::move(done)](
                                     absl::StatusOr<std::vector<v1::EnqueueRequest>> jobs) mutable {
    if (!jobs.ok()) return done(jobs.status());
    auto checked = std::make_shared<std::vector<v1::EnqueueRequest>>(*jobs);
    Store(queue, std::move(*jobs),
          [this, queue, checked, done = std::move(done)](
              absl::StatusOr<std::vector<store::EnqueueOutcome>> outcomes) mutable {
            if (!outcomes.ok()) return done(std::move(outcomes));
            auto stored = std::make_shared<std::vector<store::EnqueueOutcome>>(std::move(*outcomes));
            links_->LinkStored(queue, *checked, *stored,
                               [stored, done = std::move(done)]() { done(std::move(*stored)); });
          });
  });
}

void JobLifecycle::Store(const std::string& queue, std::vector<v1::EnqueueRequest> jobs,
                         store::Callback<std::vector<store::EnqueueOutcome>> done) {
  partitions_->LookupSettings(queue, [this, queue, jobs = std::move(jobs),
                                      done = std::move(done)](
                                         absl::StatusOr<store::QueueSettings> settings) mutable {
    if (!settings.ok()) return done(settings.status());
    // The job's timeout, else the queue's default, else the broker's.
    const int64_t timeout =
        settings->default_job_timeout_ms.value_or(defaults_.job_timeout_ms);
    for (v1::EnqueueRequest& job : jobs) {
      if (job.timeout_ms() == 0) job.set_timeout_ms(timeout);
    }
    const int count = settings->partitions;
    const std::vector<int> partition = Partitions(jobs, count, partitions_->NextPartition(count));
    // partition -> (positions in `jobs`, the jobs)
    std::map<int, std::pair<std::vector<size_t>, std::vector<v1::EnqueueRequest>>> parts;
    std::vector<int> position(jobs.size());  // in its part
    for (size_t i = 0; i < jobs.size(); ++i) {
      auto& part = parts[partition[i]];
      position[i] = static_cast<int>(part.first.size());
      for (int& parent : *jobs[i].mutable_depends_on_batch_index()) parent = position[parent];
      part.first.push_back(i);
      part.second.push_back(std::move(jobs[i]));
    }
    if (parts.size() == 1) {
      // One partition (always, for a queue of one): the jobs in their order.
      auto& [partition, part] = *parts.begin();
      return EnqueueTo(queue, store::PartitionQueue(queue, partition), std::move(part.second),
                       std::move(done));
    }
    auto fan_in =
        std::make_shared<FanIn<store::EnqueueOutcome>>(jobs.size(), parts.size(), std::move(done));
    for (auto& [partition, part] : parts) {
      EnqueueTo(queue, store::PartitionQueue(queue, partition), std::move(part.second),
                [fan_in, index = std::move(part.first)](
                    absl::StatusOr<std::vector<store::EnqueueOutcome>> result) {
                  fan_in->Add(index, std::move(result));
                });
    }
  });
}

void JobLifecycle::EnqueueTo(const std::string& queue, const std::string& partition_queue,
                             std::vector<v1::EnqueueRequest> jobs,
                             store::Callback<std::vector<store::EnqueueOutcome>> done) {
  enqueues_.Enqueue(partition_queue, std::move(jobs),
                    [this, queue, done = std::move(done)](
                        absl::StatusOr<std::vector<store::EnqueueOutcome>> result) {
                      if (result.ok()) {
                        for (const store::EnqueueOutcome& out : *result) {
                          if (out.status.ok() && !out.duplicate) metrics_->JobEnqueued(queue);
                        }
                      }
                      done(std::move(result));
                    });
}

void JobLifecycle::Ack(const std::string& queue, const std::vector<const v1::AckRequest*>& acks,
                       store::Callback<std::vector<absl::Status>> done) {
  // partition -> (positions in `acks`, the acks)
  std::map<int, std::pair<std::vector<size_t>, std::vector<const v1::AckRequest*>>> parts;
  for (size_t i = 0; i < acks.size(); ++i) {
    auto& part = parts[store::PartitionOfJobId(acks[i]->job_id())];
    part.first.push_back(i);
    part.second.push_back(acks[i]);
  }
  if (parts.size() == 1) {
    return AckIn(queue, store::PartitionQueue(queue, parts.begin()->first), acks, std::move(done));
  }
  auto fan_in = std::make_shared<FanIn<absl::Status>>(acks.size(), parts.size(), std::move(done));
  for (auto& [partition, part] : parts) {
    AckIn(queue, store::PartitionQueue(queue, partition), part.second,
          [fan_in, index = std::move(part.first)](absl::StatusOr<std::vector<absl::Status>> result) {
            fan_in->Add(index, std::move(result));
          });
  }
}

void JobLifecycle::AckIn(const std::string& queue, const std::string& partition_queue,
                         const std::vector<const v1::AckRequest*>& acks,
                         store::Callback<std::vector<absl::Status>> done) {
  std::vector<std::pair<std::string, std::string>> refs;  // (job id, lease token)
  refs.reserve(acks.size());
  for (const v1::AckRequest* ack : acks) refs.emplace_back(ack->job_id(), ack->lease_token());
  store_->Ack(partition_queue, acks,
              [this, queue, partition_queue, refs = std::move(refs),
               done = std::move(done)](absl::StatusOr<std::vector<store::AckOutcome>> result) {
                if (!result.ok()) return done(result.status());
                std::vector<absl::Status> statuses;
                std::vector<std::pair<std::string, std::string>> settled;
                statuses.reserve(result->size());
                for (size_t i = 0; i < refs.size(); ++i) {
                  const store::AckOutcome& ack = (*result)[i];
                  statuses.push_back(ack.status);
                  if (!ack.status.ok() || ack.repeat) continue;
                  metrics_->JobAcked(queue);
                  settled.push_back(refs[i]);
                }
                if (!settled.empty()) {
                  dispatcher_->OnJobsSettled(partition_queue, std::move(settled), /*acked=*/true);
                  WakeIfMaxActive(queue, partition_queue);
                }
                done(std::move(statuses));
              });
}

void JobLifecycle::Fail(const v1::FailRequest& request, store::Callback<store::FailOutcome> done) {
  v1::FailRequest in_partition = request;
  in_partition.set_queue(PartitionOf(request.queue(), request.job_id()));
  store_->Fail(in_partition, [this, queue = request.queue(), partition_queue = in_partition.queue(),
                              id = request.job_id(), token = request.lease_token(),
                              done = std::move(done)](absl::StatusOr<store::FailOutcome> result) {
    if (result.ok() && !result->repeat) {
      metrics_->JobFailed(queue, result->dead);
      dispatcher_->OnJobsSettled(partition_queue, {{id, token}}, /*acked=*/false);
      WakeIfMaxActive(queue, partition_queue);
      if (result->dead) base::LogJob("job dead", queue, id, result->trace_id);
    }
    done(std::move(result));
  });
}

void JobLifecycle::WakeIfMaxActive(const std::string& queue,
                                   const std::string& partition_queue) {
  // Cached settings (read at most about a second ago): no Redis call for a
  // queue without max_active.
  partitions_->LookupSettings(queue, [this, partition_queue](
                                         absl::StatusOr<store::QueueSettings> settings) {
    if (settings.ok() && settings->max_active) store_->Announce(partition_queue, "0");
  });
}

void JobLifecycle::ExtendLease(const v1::ExtendLeaseRequest& request,
                               store::Callback<int64_t> done) {
  int64_t lease_ms = request.lease_ms() == 0 ? defaults_.lease_ms : request.lease_ms();
  const std::string partition_queue = PartitionOf(request.queue(), request.job_id());
  store_->ExtendLease(partition_queue, request.job_id(), request.lease_token(), lease_ms,
                      [this, partition_queue, id = request.job_id(),
                       token = request.lease_token(),
                       done = std::move(done)](absl::StatusOr<store::JobStore::Extended> result) {
                        if (!result.ok()) return done(result.status());
                        // The lease granted: shorter than asked up to a run's deadline.
                        dispatcher_->OnLeaseExtended(partition_queue, id, token, result->lease_ms);
                        done(result->expires_at_ms);
                      });
}

void JobLifecycle::Cancel(const v1::CancelRequest& request, store::Callback<bool> done) {
  const std::string partition = PartitionOf(request.queue(), request.job_id());
  store_->Cancel(partition, request.job_id(),
                 [this, queue = request.queue(), partition,
                  done = std::move(done)](absl::StatusOr<bool> result) {
                   // A run asked to stop is counted when it is settled.
                   if (!result.ok() || *result) return done(std::move(result));
                   metrics_->JobCancelled(queue);
                   // News for dependents elsewhere: delivered before the
                   // answer, whether or not a broker follows the queue.
                   links_->Drain(partition, [result = std::move(result),
                                             done = std::move(done)]() mutable {
                     done(std::move(result));
                   });
                 });
}

void JobLifecycle::ReportProgress(const v1::ReportProgressRequest& request,
                                  store::Callback<bool> done) {
  v1::ReportProgressRequest partition = request;
  partition.set_queue(PartitionOf(request.queue(), request.job_id()));
  store_->ReportProgress(partition, std::move(done));
}

void JobLifecycle::GetJob(const v1::GetJobRequest& request, store::Callback<v1::Job> done) {
  store::Callback<v1::Job> named = [queue = request.queue(),
                                    done = std::move(done)](absl::StatusOr<v1::Job> job) {
    if (job.ok()) job->set_queue(queue);
    done(std::move(job));
  };
  if (request.idempotency_key().empty()) {
    return store_->GetJob(PartitionOf(request.queue(), request.job_id()), request.job_id(),
                          std::move(named));
  }
  // The partition the key maps to now, as Enqueue picks it.
  partitions_->Lookup(request.queue(), [this, queue = request.queue(),
                                        key = request.idempotency_key(),
                                        named = std::move(named)](absl::StatusOr<int> count) mutable {
    if (!count.ok()) return named(count.status());
    store_->GetJobByIdempotencyKey(
        store::PartitionQueue(queue, QueuePartitions::PartitionOfKey(key, *count)), key,
        std::move(named));
  });
}

}  // namespace jobwire::core
