// AdminStore: the operator's reads and changes of queue state in Redis (the
// Admin service). Like JobStore, each change is one lua/ script named in its
// comment, and every method is asynchronous: the callback runs on the Redis
// event loop thread and must not block.
//
// Errors common to every method: UNAVAILABLE when Redis cannot be reached
// (the call may or may not have run), INTERNAL for an unexpected reply.
// Thread safety: methods may be called from any thread.
#ifndef JOBWIRE_BROKER_STORE_ADMIN_STORE_H_
#define JOBWIRE_BROKER_STORE_ADMIN_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_store.h"
#include "jobwire/v1/admin.pb.h"

namespace jobwire::store {

struct JobPage {
  std::vector<v1::Job> jobs;
  // Where the next page starts (its partition and offset); -1 when there is
  // nothing more.
  int next_partition = 0;
  int64_t next_offset = -1;
};

// Which jobs of a state ListJobs reads (see list_jobs.lua).
struct JobPageRequest {
  v1::JobState state = v1::JOB_STATE_PENDING;
  int partition = 0;  // of a partitioned queue (QueueAdmin)
  int64_t offset = 0;
  int page_size = 50;
  bool newest_first = true;
  std::string type;  // empty: every type
  int scan_limit = 50;  // entries looked at, at most (>= page_size)
  // Payload, result and error bytes in the page, at most (a page holds at
  // least one job): bounds the reply in Redis and the broker.
  int64_t max_bytes = 2 << 20;
};

struct RetryBatch {
  int64_t moved = 0;
  // Scan mode: where the next batch starts; -1 when the scan is done.
  int64_t next_offset = -1;
  // Scan mode: the bound the next batch passes back (the dead set as it was
  // when the scan's first batch ran).
  std::string bound;
};

// AdminStore::SetQueue's job_timeout_ms that removes a queue's default job
// timeout (UpdateQueueRequest.default_job_timeout_ms -1).
inline constexpr int64_t kRemoveJobTimeout = -1;

// A change of a queue's settings (AdminStore::SetQueue): each setting not
// given stays as it is.
struct QueueSettingsChange {
  int partitions = 0;  // 0: unchanged (update only)
  // The default job timeout in ms; kRemoveJobTimeout removes it.
  std::optional<int64_t> job_timeout_ms;
  // The rate limit (burst resolved); one of count 0 removes it.
  std::optional<v1::RateLimit> rate_limit;
  // The most active jobs at once; 0 removes the limit.
  std::optional<int32_t> max_active;
  // The most active jobs per concurrency key; 0 removes the limit.
  std::optional<int32_t> max_active_per_key;
  // The rate limit of each concurrency key (burst resolved); one of count 0
  // removes it.
  std::optional<v1::RateLimit> key_rate_limit;
};

class AdminStore {
 public:
  // `client` and `scripts` must outlive the store.
  AdminStore(RedisCommands* client, const ScriptRunner* scripts, std::string key_prefix);

  // queue_stats.lua: counts per state, paused flag, oldest due age.
  void Stats(const std::string& queue, Callback<v1::QueueStats> done) const;

  // list_jobs.lua: one page of `queue`'s jobs in one state.
  void ListJobs(const std::string& queue, const JobPageRequest& request,
                Callback<JobPage> done) const;

  // retry_dead.lua with the given ids (skips those not dead or not of `type`).
  void RetryDeadIds(const std::string& queue, const std::vector<std::string>& ids,
                    const std::string& type, Callback<RetryBatch> done) const;
  // retry_dead.lua on the next `batch` entries of the dead set from `offset`
  // within `bound` (empty for the first batch of a scan, then the previous
  // batch's RetryBatch::bound).
  void RetryDeadScan(const std::string& queue, const std::string& type, int64_t offset,
                     int batch, const std::string& bound, Callback<RetryBatch> done) const;

  // delete_job.lua. NOT_FOUND.
  void DeleteJob(const std::string& queue, const std::string& job_id, Callback<bool> done) const;

  // delete_queue.lua: removes up to `batch` jobs of `queue`, and the queue
  // itself once it is empty. Returns (removed, done).
  // FAILED_PRECONDITION when jobs are active and !force (nothing removed).
  void DeleteQueue(const std::string& queue, bool force, int batch,
                   Callback<std::pair<int64_t, bool>> done) const;
  // delete_queue.lua 'empty': drops `queue` from the registry if it holds no
  // job at all and is not paused. Returns whether it was dropped.
  void DropIfEmpty(const std::string& queue, Callback<bool> done) const;

  // purge_dead.lua: removes up to `batch` jobs dead for more than
  // `older_than_ms`; returns how many.
  void PurgeDead(const std::string& queue, int64_t older_than_ms, int batch,
                 Callback<int64_t> done) const;

  // set_paused.lua; returns whether the flag changed.
  void SetPaused(const std::string& queue, bool paused, Callback<bool> done) const;

  // set_queue.lua: with `create`, creates `queue` with `change`
  // (ALREADY_EXISTS when it is registered or has a count); else changes the
  // settings of an existing queue (NOT_FOUND when it is neither). Returns
  // the partition count before. FAILED_PRECONDITION when change.partitions
  // is below it (a count only grows), or when the queue would have more
  // than one partition and a rate limit, max_active, max_active_per_key or
  // key_rate_limit; then nothing changes. REQUIRES: 0 <= partitions <=
  // kMaxPartitions (>= 1 with `create`); job_timeout_ms -1..7 days;
  // rate_limit and key_rate_limit valid with burst resolved; max_active and max_active_per_key 0..kMaxMaxActive. The caller registers a created
  // queue (JobStore::RegisterQueue).
  void SetQueue(const std::string& queue, bool create, const QueueSettingsChange& change,
                Callback<int> done) const;

  // PING: OK once Redis answers PONG; the connection's error otherwise.
  void Ping(std::function<void(absl::Status)> done) const;

 private:
  // delete_queue.lua with ARGV[1] = `mode` ('1', '0' or 'empty').
  void RunDeleteQueue(const std::string& queue, const std::string& mode, int batch,
                      Callback<std::pair<int64_t, bool>> done) const;
  // After delete_queue.lua's DONE: unregister_queue.lua, then the marker
  // check that re-adds the entry for an enqueue that raced the deletion.
  void Unregister(const std::string& queue, std::function<void(absl::Status)> done) const;
  Keys KeysFor(const std::string& queue) const { return Keys(key_prefix_, queue); }

  RedisCommands* const client_;        // the marker check and Ping only
  const ScriptRunner* const scripts_;  // runs every call, on `client`
  const std::string key_prefix_;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_ADMIN_STORE_H_
