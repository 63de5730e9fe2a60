// QueueAdmin: the job-lifecycle layer of the Admin service. It turns each
// operator request into AdminStore calls, looping in batches where one
// script call would hold Redis too long (retrying or purging every dead job),
// and gathers the per-queue stats of ListQueues.
//
// A partitioned queue (QueuePartitions) is one queue to an operator: stats
// add up its partitions, listings page through them one after another (each
// in its state's order), and every change applies to each partition (the
// job-id calls to the partition the id names). CreateQueue / UpdateQueue set
// the partition count.
//
// Callbacks run on the Redis event loop thread and must not block.
// Thread safety: methods may be called from any thread.
#ifndef JOBWIRE_BROKER_CORE_QUEUE_ADMIN_H_
#define JOBWIRE_BROKER_CORE_QUEUE_ADMIN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "broker/core/dependency_links.h"
#include "broker/core/queue_partitions.h"
#include "broker/store/admin_store.h"
#include "broker/store/job_store.h"

namespace jobwire::core {

class QueueAdmin {
 public:
  // Jobs moved or removed per script call.
  static constexpr int kBatch = 500;

  // `jobs`, `admin`, `partitions` and `links` must outlive this object.
  // DeleteJob and DeleteQueue deliver the news of the jobs they remove to
  // their dependents elsewhere at once (`links`: DependencyLinks::Drain).
  QueueAdmin(const store::JobStore* jobs, const store::AdminStore* admin,
             QueuePartitions* partitions, DependencyLinks* links);

  // Creates `queue` with the settings `change` gives (change.partitions
  // 1..store::kMaxPartitions; default job timeout none: the broker's; no
  // rate limit or max_active: unlimited), and registers it; a created queue
  // stays listed while empty, until DeleteQueue. ALREADY_EXISTS when the
  // queue exists.
  void CreateQueue(const std::string& queue, const store::QueueSettingsChange& change,
                   store::Callback<bool> done) const;
  // Changes the settings of an existing queue as AdminStore::SetQueue says
  // (partitions 0: unchanged; a count only grows); returns the count
  // before. NOT_FOUND, FAILED_PRECONDITION (fewer than now; a limit and
  // more than one partition). The new partitions of a paused queue are
  // paused too.
  void UpdateQueue(const std::string& queue, const store::QueueSettingsChange& change,
                   store::Callback<int> done) const;

  // Stats of every registered queue, sorted by name.
  void ListQueues(store::Callback<std::vector<v1::QueueStats>> done) const;
  void Stats(const std::string& queue, store::Callback<v1::QueueStats> done) const;
  // One page of one partition (request.partition); the page's
  // next_partition / next_offset say where the next one starts.
  void ListJobs(const std::string& queue, const store::JobPageRequest& request,
                store::Callback<store::JobPage> done) const;
  // Moves the listed dead jobs (or, with `all`, every dead job) of `type`
  // (empty: any) back to pending; returns how many moved.
  void RetryDead(const std::string& queue, const std::vector<std::string>& job_ids, bool all,
                 const std::string& type, store::Callback<int64_t> done) const;
  void DeleteJob(const std::string& queue, const std::string& job_id,
                 store::Callback<bool> done) const;
  // Removes `queue` and every job in it, a batch per script call, partition
  // 0 (which holds the count) last; returns how many jobs.
  // FAILED_PRECONDITION when jobs are active and !force.
  void DeleteQueue(const std::string& queue, bool force, store::Callback<int64_t> done) const;
  // Removes every job dead for more than `older_than_ms`; returns how many.
  void PurgeDead(const std::string& queue, int64_t older_than_ms,
                 store::Callback<int64_t> done) const;
  // Pauses or resumes `queue` (registering it, so that ListQueues shows it).
  void SetPaused(const std::string& queue, bool paused, store::Callback<bool> done) const;

 private:
  // Runs `each(partition store name, done)` on every partition of `queue`,
  // one after another from the last down to 0, and answers the sum (the
  // first error stops it).
  using PartitionCall =
      std::function<void(const std::string&, store::Callback<int64_t>)>;
  void ForEachPartition(const std::string& queue, PartitionCall each,
                        store::Callback<int64_t> done) const;
  void EachFrom(std::shared_ptr<const PartitionCall> each, const std::string& queue, int partition,
                int64_t sum, store::Callback<int64_t> done) const;
  void RetryFrom(const std::string& queue, const std::string& type, int64_t offset,
                 const std::string& bound,
                 int64_t moved, store::Callback<int64_t> done) const;
  void DeleteFrom(const std::string& queue, bool force, int64_t deleted,
                  store::Callback<int64_t> done) const;
  void PurgeFrom(const std::string& queue, int64_t older_than_ms, int64_t purged,
                 store::Callback<int64_t> done) const;

  const store::JobStore* const jobs_;
  const store::AdminStore* const admin_;
  QueuePartitions* const partitions_;
  DependencyLinks* const links_;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_QUEUE_ADMIN_H_
