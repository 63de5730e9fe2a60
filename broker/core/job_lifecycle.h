// JobLifecycle: the unary job operations (enqueue, ack, fail, extend,
// cancel, read) with the broker's defaults applied, keeping the Dispatcher
// informed of slots that free up and of the queue registry.
//
// Callers name queues; the store holds partitions. An enqueue goes to the
// partition QueuePartitions chooses (one per call for the jobs without an
// idempotency key, by key for the others), and every other call to the
// partition its job id names (store::PartitionOfJobId); the jobs it answers
// name the queue, not the partition.
#ifndef JOBWIRE_BROKER_CORE_JOB_LIFECYCLE_H_
#define JOBWIRE_BROKER_CORE_JOB_LIFECYCLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "broker/core/dependency_links.h"
#include "broker/core/dispatcher.h"
#include "broker/core/enqueue_coalescer.h"
#include "broker/core/metrics.h"
#include "broker/core/queue_partitions.h"
#include "broker/store/job_store.h"

namespace jobwire::core {

struct LifecycleDefaults {
  int32_t max_attempts = 3;
  int64_t backoff_base_ms = 1000;
  int64_t backoff_max_ms = 3600 * 1000;
  int64_t lease_ms = 30000;
  // For a job whose Enqueue set no timeout_ms, in a queue without its own
  // default (QueueSettings); 0 = no limit.
  int64_t job_timeout_ms = 0;
};

// Thread safety: every method may be called from any thread. Callbacks run
// on the Redis event loop thread. Errors are JobStore's.
class JobLifecycle {
 public:
  // `store`, `partitions`, `dispatcher`, `links` and `metrics` must outlive
  // this object.
  JobLifecycle(const store::JobStore* store, QueuePartitions* partitions, Dispatcher* dispatcher,
               DependencyLinks* links, Metrics* metrics, LifecycleDefaults defaults);

  // Stores `jobs`, all of `queue`, in one script call per partition they go
  // to, perhaps together with other enqueues of the partition
  // (EnqueueCoalescer); one outcome per job (see JobStore::Enqueue; a job
  // with depends_on ids goes to its parents' partition; jobs linked by
  // depends_on_batch_index, positions in `jobs`, go to one partition, and
  // so into one call). Jobs with parents elsewhere (depends_on refs) are
  // checked before and linked after (DependencyLinks), and the call answers
  // once they are linked. When a
  // partition's call fails the whole call answers its error (the jobs of
  // other partitions may be stored, as they may when UNAVAILABLE). REQUIRES: each job passed validation. Zero
  // max_attempts and backoff fields take the broker defaults (an unset
  // completed_retention_ms takes the store's). The store
  // records a new queue in the registry by itself (JobStore::RegisterQueue).
  void Enqueue(const std::string& queue, std::vector<v1::EnqueueRequest> jobs,
               store::Callback<std::vector<store::EnqueueOutcome>> done);
  // Completes `acks`, all of `queue`, with one script call per partition;
  // one status per ack (see JobStore::Ack). Each completed job frees its Claim stream slot.
  void Ack(const std::string& queue, const std::vector<const v1::AckRequest*>& acks,
           store::Callback<std::vector<absl::Status>> done);
  void Fail(const v1::FailRequest& request, store::Callback<store::FailOutcome> done);
  // lease_ms 0 takes the default lease.
  void ExtendLease(const v1::ExtendLeaseRequest& request, store::Callback<int64_t> done);
  // True when the job was active: its run was asked to stop (JobStore::Cancel).
  // A pending job cancelled tells its dependents elsewhere at once
  // (DependencyLinks::Drain).
  void Cancel(const v1::CancelRequest& request, store::Callback<bool> done);
  void ReportProgress(const v1::ReportProgressRequest& request, store::Callback<bool> done);
  void GetJob(const v1::GetJobRequest& request, store::Callback<v1::Job> done);

  const LifecycleDefaults& defaults() const { return defaults_; }

 private:
  // Enqueue without the parents elsewhere: each job to its partition.
  void Store(const std::string& queue, std::vector<v1::EnqueueRequest> jobs,
             store::Callback<std::vector<store::EnqueueOutcome>> done);
  // Enqueues `jobs` to partition store name `partition_queue`; metrics name
  // `queue`.
  void EnqueueTo(const std::string& queue, const std::string& partition_queue,
                 std::vector<v1::EnqueueRequest> jobs,
                 store::Callback<std::vector<store::EnqueueOutcome>> done);
  void AckIn(const std::string& queue, const std::string& partition_queue,
             const std::vector<const v1::AckRequest*>& acks,
             store::Callback<std::vector<absl::Status>> done);
  // A job of `queue` (partition `partition_queue`) left the active set
  // through this broker: when the queue has max_active, a stream waiting on
  // it (on any replica) is woken to claim into the freed slot (a wake-up on
  // the notify channel; docs/semantics.md, "Concurrency limit").
  void WakeIfMaxActive(const std::string& queue, const std::string& partition_queue);

  const store::JobStore* const store_;
  QueuePartitions* const partitions_;
  Dispatcher* const dispatcher_;
  DependencyLinks* const links_;
  Metrics* const metrics_;
  const LifecycleDefaults defaults_;
  EnqueueCoalescer enqueues_;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_JOB_LIFECYCLE_H_
