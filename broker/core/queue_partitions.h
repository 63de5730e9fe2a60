// QueuePartitions: each queue's settings as this broker last read them (how
// many partitions it has, its default job timeout and its limits), and which partition
// a new job goes to (docs/semantics.md, "Partitioned queues").
//
// The settings live in Redis (JobStore::GetQueueSettings; the Admin service
// sets them). LookupSettings and Lookup answer from a cache: at once for a
// queue read before, and when that read is older than `refresh` they read
// the settings again in the background, so that a change made through
// another replica reaches this one within about `refresh` of its next use. The first lookup of a queue
// waits for the read; concurrent ones share it. Set records a count learnt
// otherwise (this broker's own change, or a change announced on the queue's
// notify channel). A count that grows, however learnt, is reported to the
// listener (SetOnGrown). Entries unused for a minute are dropped, so the
// cache does not grow with every queue ever named.
//
// Thread safety: every method may be called from any thread; callbacks run
// on the Redis event loop thread, or on the caller's for a cached answer.
#ifndef JOBWIRE_BROKER_CORE_QUEUE_PARTITIONS_H_
#define JOBWIRE_BROKER_CORE_QUEUE_PARTITIONS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/store/admin_store.h"
#include "broker/store/job_store.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::core {

class QueuePartitions {
 public:
  // `store` must outlive this object.
  explicit QueuePartitions(const store::JobStore* store,
                           absl::Duration refresh = absl::Seconds(1));

  // The settings of `queue` (1 partition and no default job timeout for a
  // queue never given any). UNAVAILABLE when they were never read and Redis
  // cannot be reached.
  void LookupSettings(const std::string& queue, store::Callback<store::QueueSettings> done);
  // The partition count of `queue`, as LookupSettings.
  void Lookup(const std::string& queue, store::Callback<int> done);
  // Lookup of each of `queues`; the counts in order, or the first error.
  void LookupAll(const std::vector<std::string>& queues, store::Callback<std::vector<int>> done);
  // Reads the count of `queue` again now (after a reconnect, when an
  // announcement may have been missed); reports growth to the listener.
  void Refresh(const std::string& queue);
  void Set(const std::string& queue, int partitions);
  // Records the settings of `change` (this broker's own change; its
  // partitions aside: Set) for a queue read before; a removal
  // (store::kRemoveJobTimeout, a rate limit or key rate limit of count 0,
  // max_active or max_active_per_key 0) records none.
  void Apply(const std::string& queue, const store::QueueSettingsChange& change);

  // Adds a listener called with (queue, new count) whenever a count grows.
  // Add every listener before use.
  void AddOnGrown(std::function<void(const std::string&, int)> fn) {
    on_grown_.push_back(std::move(fn));
  }

  // The partition of the next enqueue call's jobs without an idempotency
  // key in a queue of `partitions`: round robin per call, so that a batch's
  // jobs share one enqueue.lua call.
  int NextPartition(int partitions);
  // The partition for a job with idempotency key `key` (not empty): a
  // stable hash of it, so that one key always lands in one partition while
  // the count stays, and deduplication holds.
  static int PartitionOfKey(const std::string& key, int partitions);

 private:
  struct Entry {
    int partitions = 0;  // 0 until first read
    std::optional<int64_t> job_timeout_ms;
    std::optional<v1::RateLimit> rate_limit;
    std::optional<int32_t> max_active;
    std::optional<int32_t> max_active_per_key;
    std::optional<v1::RateLimit> key_rate_limit;
    absl::Time read_at;
    absl::Time used_at;
    bool reading = false;
    std::vector<store::Callback<store::QueueSettings>> waiters;  // lookups waiting for the first read
  };

  void Read(const std::string& queue);
  void OnRead(const std::string& queue, absl::StatusOr<store::QueueSettings> settings);
  // Records `count`; returns true when it grew a known count.
  bool Record(Entry& entry, int count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells every on_grown_ listener.
  void Grown(const std::string& queue, int count);
  void DropUnused(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const store::JobStore* const store_;
  const absl::Duration refresh_;
  std::vector<std::function<void(const std::string&, int)>> on_grown_;
  std::atomic<uint64_t> next_{0};

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  size_t sweep_at_ ABSL_GUARDED_BY(mu_) = 1024;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_QUEUE_PARTITIONS_H_
