#include "broker/core/queue_partitions.h"

#include <memory>
#include <utility>

#include "absl/time/clock.h"

namespace jobwire::core {
namespace {

constexpr absl::Duration kUnusedFor = absl::Minutes(1);

// FNV-1a, 64 bits: the same in every broker process and version (unlike
// absl::Hash), so that replicas agree on a key's partition.
uint64_t StableHash(const std::string& key) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

QueuePartitions::QueuePartitions(const store::JobStore* store, absl::Duration refresh)
    : store_(store), refresh_(refresh) {}

void QueuePartitions::LookupSettings(const std::string& queue,
                                     store::Callback<store::QueueSettings> done) {
  const absl::Time now = absl::Now();
  store::QueueSettings known{0, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                             std::nullopt};
  bool read = false;
  {
    absl::MutexLock lock(&mu_);
    Entry& entry = entries_[queue];
    entry.used_at = now;
    known = store::QueueSettings{entry.partitions, entry.job_timeout_ms, entry.rate_limit,
                                  entry.max_active, entry.max_active_per_key,
                                  entry.key_rate_limit};
    if (known.partitions == 0) entry.waiters.push_back(std::move(done));
    if (!entry.reading && (known.partitions == 0 || now - entry.read_at >= refresh_)) {
      entry.reading = read = true;
    }
    if (entries_.size() >= sweep_at_) DropUnused(now);
  }
  if (read) Read(queue);
  if (known.partitions > 0) done(known);
}

void QueuePartitions::Lookup(const std::string& queue, store::Callback<int> done) {
  LookupSettings(queue, [done = std::move(done)](absl::StatusOr<store::QueueSettings> settings) {
    if (!settings.ok()) return done(settings.status());
    done(settings->partitions);
  });
}

void QueuePartitions::LookupAll(const std::vector<std::string>& queues,
                                store::Callback<std::vector<int>> done) {
  struct Counts {
    absl::Mutex mu;
    std::vector<int> partitions;
    size_t remaining;
    absl::Status error;
    store::Callback<std::vector<int>> done;
  };
  if (queues.empty()) return done(std::vector<int>{});
  auto counts = std::make_shared<Counts>();
  counts->partitions.assign(queues.size(), 1);
  counts->remaining = queues.size();
  counts->done = std::move(done);
  for (size_t i = 0; i < queues.size(); ++i) {
    Lookup(queues[i], [i, counts](absl::StatusOr<int> count) {
      {
        absl::MutexLock lock(&counts->mu);
        if (count.ok()) {
          counts->partitions[i] = *count;
        } else if (counts->error.ok()) {
          counts->error = count.status();
        }
        if (--counts->remaining > 0) return;
      }
      if (!counts->error.ok()) return counts->done(counts->error);
      counts->done(std::move(counts->partitions));
    });
  }
}

void QueuePartitions::Refresh(const std::string& queue) {
  {
    absl::MutexLock lock(&mu_);
    Entry& entry = entries_[queue];
    entry.used_at = absl::Now();
    if (entry.reading) return;
    entry.reading = true;
  }
  Read(queue);
}

void QueuePartitions::Read(const std::string& queue) {
  store_->GetQueueSettings(queue, [this, queue](absl::StatusOr<store::QueueSettings> settings) {
    OnRead(queue, std::move(settings));
  });
}

void QueuePartitions::OnRead(const std::string& queue,
                             absl::StatusOr<store::QueueSettings> settings) {
  std::vector<store::Callback<store::QueueSettings>> waiters;
  bool grew = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(queue);
    if (it == entries_.end()) return;
    Entry& entry = it->second;
    entry.reading = false;
    waiters.swap(entry.waiters);
    if (settings.ok()) {
      entry.read_at = absl::Now();
      grew = Record(entry, settings->partitions);
      entry.job_timeout_ms = settings->default_job_timeout_ms;
      entry.rate_limit = settings->rate_limit;
      entry.max_active = settings->max_active;
      entry.max_active_per_key = settings->max_active_per_key;
      entry.key_rate_limit = settings->key_rate_limit;
    } else if (entry.partitions == 0) {
      entries_.erase(it);  // the next lookup reads again
    }
  }
  if (grew) Grown(queue, settings->partitions);
  for (auto& waiter : waiters) waiter(settings);
}

void QueuePartitions::Set(const std::string& queue, int partitions) {
  bool grew = false;
  {
    absl::MutexLock lock(&mu_);
    Entry& entry = entries_[queue];
    entry.used_at = entry.read_at = absl::Now();
    grew = Record(entry, partitions);
  }
  if (grew) Grown(queue, partitions);
}

void QueuePartitions::Apply(const std::string& queue, const store::QueueSettingsChange& change) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(queue);
  if (it == entries_.end()) return;
  Entry& entry = it->second;
  if (change.job_timeout_ms) {
    entry.job_timeout_ms = *change.job_timeout_ms == store::kRemoveJobTimeout
                               ? std::nullopt
                               : change.job_timeout_ms;
  }
  if (change.rate_limit) {
    entry.rate_limit =
        change.rate_limit->count() == 0 ? std::nullopt : change.rate_limit;
  }
  if (change.max_active) {
    entry.max_active = *change.max_active == 0 ? std::nullopt : change.max_active;
  }
  if (change.max_active_per_key) {
    entry.max_active_per_key =
        *change.max_active_per_key == 0 ? std::nullopt : change.max_active_per_key;
  }
  if (change.key_rate_limit) {
    entry.key_rate_limit =
        change.key_rate_limit->count() == 0 ? std::nullopt : change.key_rate_limit;
  }
}

void QueuePartitions::Grown(const std::string& queue, int count) {
  for (const auto& fn : on_grown_) fn(queue, count);
}

bool QueuePartitions::Record(Entry& entry, int count) {
  // Redis has the last word: a count only grows (set_queue.lua), but a
  // deleted queue created again may have fewer.
  const bool grew = entry.partitions > 0 && count > entry.partitions;
  entry.partitions = count;
  return grew;
}

void QueuePartitions::DropUnused(absl::Time now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& e = it->second;
    if (!e.reading && e.waiters.empty() && now - e.used_at > kUnusedFor) {
      entries_.erase(it++);
    } else {
      ++it;
    }
  }
  sweep_at_ = 2 * entries_.size() + 1024;
}

int QueuePartitions::NextPartition(int partitions) {
  if (partitions <= 1) return 0;
  return static_cast<int>(next_++ % partitions);
}

int QueuePartitions::PartitionOfKey(const std::string& key, int partitions) {
  if (partitions <= 1) return 0;
  return static_cast<int>(StableHash(key) % partitions);
}

}  // namespace jobwire::core
