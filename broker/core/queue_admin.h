// QueueAdmin: the job-lifecycle layer of the Admin service. It turns each
// operator request into AdminStore calls, looping in batches where one
// script call would hold Redis too long (retrying or purging every dead job),
// and gathers the per-queue stats of ListQueues.
//
// Callbacks run on the Redis event loop thread and must not block.
// Thread safety: methods may be called from any thread.
#ifndef JOBWIRE_BROKER_CORE_QUEUE_ADMIN_H_
#define JOBWIRE_BROKER_CORE_QUEUE_ADMIN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "broker/store/admin_store.h"
#include "broker/store/job_store.h"

namespace jobwire::core {

class QueueAdmin {
 public:
  // Jobs moved or removed per script call.
  static constexpr int kBatch = 500;

  // `jobs` and `admin` must outlive this object.
  QueueAdmin(const store::JobStore* jobs, const store::AdminStore* admin);

  // Stats of every registered queue, sorted by name.
  void ListQueues(store::Callback<std::vector<v1::QueueStats>> done) const;
  void Stats(const std::string& queue, store::Callback<v1::QueueStats> done) const;
  void ListJobs(const std::string& queue, const store::JobPageRequest& request,
                store::Callback<store::JobPage> done) const;
  // Moves the listed dead jobs (or, with `all`, every dead job) of `type`
  // (empty: any) back to pending; returns how many moved.
  void RetryDead(const std::string& queue, const std::vector<std::string>& job_ids, bool all,
                 const std::string& type, store::Callback<int64_t> done) const;
  void DeleteJob(const std::string& queue, const std::string& job_id,
                 store::Callback<bool> done) const;
  // Removes every job dead for more than `older_than_ms`; returns how many.
  // Removes `queue` and every job in it, a batch per script call; returns
  // how many jobs. FAILED_PRECONDITION when jobs are active and !force.
  void DeleteQueue(const std::string& queue, bool force, store::Callback<int64_t> done) const;
  void PurgeDead(const std::string& queue, int64_t older_than_ms,
                 store::Callback<int64_t> done) const;
  // Pauses or resumes `queue` (registering it, so that ListQueues shows it).
  void SetPaused(const std::string& queue, bool paused, store::Callback<bool> done) const;

 private:
  void RetryFrom(const std::string& queue, const std::string& type, int64_t offset,
                 const std::string& bound,
                 int64_t moved, store::Callback<int64_t> done) const;
  void DeleteFrom(const std::string& queue, bool force, int64_t deleted,
                  store::Callback<int64_t> done) const;
  void PurgeFrom(const std::string& queue, int64_t older_than_ms, int64_t purged,
                 store::Callback<int64_t> done) const;

  const store::JobStore* const jobs_;
  const store::AdminStore* const admin_;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_QUEUE_ADMIN_H_
