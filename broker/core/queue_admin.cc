#include "broker/core/queue_admin.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "broker/core/fan_in.h"
#include "broker/store/keys.h"

namespace jobwire::core {
namespace {

// Adds `part` (one partition's stats) into `sum`.
void AddStats(const v1::QueueStats& part, v1::QueueStats& sum) {
  sum.set_pending_due(sum.pending_due() + part.pending_due());
  sum.set_pending_scheduled(sum.pending_scheduled() + part.pending_scheduled());
  sum.set_active(sum.active() + part.active());
  sum.set_completed(sum.completed() + part.completed());
  sum.set_dead(sum.dead() + part.dead());
  sum.set_paused(sum.paused() || part.paused());
  sum.set_oldest_due_age_ms(std::max(sum.oldest_due_age_ms(), part.oldest_due_age_ms()));
}

}  // namespace

QueueAdmin::QueueAdmin(const store::JobStore* jobs, const store::AdminStore* admin,
                       QueuePartitions* partitions, DependencyLinks* links)
    : jobs_(jobs), admin_(admin), partitions_(partitions), links_(links) {}

void QueueAdmin::CreateQueue(const std::string& queue, const store::QueueSettingsChange& change,
                             store::Callback<bool> done) const {
  admin_->SetQueue(
      queue, /*create=*/true, change,
      [this, queue, change, done = std::move(done)](absl::StatusOr<int> before) mutable {
        if (!before.ok()) return done(before.status());
        partitions_->Set(queue, change.partitions);
        partitions_->Apply(queue, change);
        jobs_->RegisterQueue(queue, [done = std::move(done)](absl::StatusOr<bool> registered) {
          if (!registered.ok()) return done(registered.status());
          done(true);
        });
      });
}

void QueueAdmin::UpdateQueue(const std::string& queue, const store::QueueSettingsChange& change,
                             store::Callback<int> done) const {
  admin_->SetQueue(
      queue, /*create=*/false, change,
      [this, queue, change, done = std::move(done)](absl::StatusOr<int> before) mutable {
        if (!before.ok()) return done(before.status());
        const int old = *before;
        const int partitions = change.partitions > 0 ? change.partitions : old;
        partitions_->Set(queue, partitions);
        partitions_->Apply(queue, change);
        if (partitions == old) return done(old);
        // New partitions of a paused queue are paused too (partition 0's
        // flag stands for the queue's).
        admin_->Stats(queue, [this, queue, old, partitions,
                              done = std::move(done)](absl::StatusOr<v1::QueueStats> first) {
          if (!first.ok()) return done(first.status());
          if (!first->paused()) return done(old);
          auto fan_in = std::make_shared<FanIn<bool>>(
              partitions - old, partitions - old,
              [old, done](absl::StatusOr<std::vector<bool>> paused) {
                if (!paused.ok()) return done(paused.status());
                done(old);
              });
          for (int p = old; p < partitions; ++p) {
            admin_->SetPaused(store::PartitionQueue(queue, p), true,
                              [fan_in, slot = p - old](absl::StatusOr<bool> paused) {
                                fan_in->Add(slot, std::move(paused));
                              });
          }
        });
      });
}

void QueueAdmin::ListQueues(store::Callback<std::vector<v1::QueueStats>> done) const {
  jobs_->ListQueues([this, done = std::move(done)](
                        absl::StatusOr<std::vector<std::string>> names) mutable {
    if (!names.ok()) return done(names.status());
    // The registry holds partitions; a queue is listed once.
    std::vector<std::string> queues;
    for (const std::string& name : *names) {
      queues.emplace_back(store::QueueOfPartition(name));
    }
    std::sort(queues.begin(), queues.end());
    queues.erase(std::unique(queues.begin(), queues.end()), queues.end());
    if (queues.empty()) return done(std::vector<v1::QueueStats>{});
    auto fan_in = std::make_shared<FanIn<v1::QueueStats>>(queues.size(), queues.size(),
                                                            std::move(done));  // by name
    for (size_t i = 0; i < queues.size(); ++i) {
      Stats(queues[i], [fan_in, i](absl::StatusOr<v1::QueueStats> stats) {
        fan_in->Add(i, std::move(stats));
      });
    }
  });
}

void QueueAdmin::Stats(const std::string& queue, store::Callback<v1::QueueStats> done) const {
  partitions_->LookupSettings(queue, [this, queue, done = std::move(done)](
                                         absl::StatusOr<store::QueueSettings> settings) {
    if (!settings.ok()) return done(settings.status());
    const int count = settings->partitions;
    v1::QueueStats sum;
    sum.set_queue(queue);
    sum.set_partitions(count);
    if (settings->default_job_timeout_ms) {
      sum.set_default_job_timeout_ms(*settings->default_job_timeout_ms);
    }
    if (settings->rate_limit) *sum.mutable_rate_limit() = *settings->rate_limit;
    sum.set_max_active(settings->max_active.value_or(0));
    sum.set_max_active_per_key(settings->max_active_per_key.value_or(0));
    if (settings->key_rate_limit) *sum.mutable_key_rate_limit() = *settings->key_rate_limit;
    auto fan_in = std::make_shared<FanIn<v1::QueueStats>>(
        count, count,
        [sum = std::move(sum), done](absl::StatusOr<std::vector<v1::QueueStats>> parts) mutable {
          if (!parts.ok()) return done(parts.status());
          for (const v1::QueueStats& part : *parts) AddStats(part, sum);
          done(std::move(sum));
        });
    for (int p = 0; p < count; ++p) {
      admin_->Stats(store::PartitionQueue(queue, p),
                    [fan_in, p](absl::StatusOr<v1::QueueStats> stats) {
                      fan_in->Add(p, std::move(stats));
                    });
    }
  });
}

void QueueAdmin::ListJobs(const std::string& queue, const store::JobPageRequest& request,
                          store::Callback<store::JobPage> done) const {
  partitions_->Lookup(queue, [this, queue, request,
                              done = std::move(done)](absl::StatusOr<int> count) mutable {
    if (!count.ok()) return done(count.status());
    if (request.partition >= *count) return done(store::JobPage{});
    const int partition = request.partition;
    admin_->ListJobs(store::PartitionQueue(queue, partition), request,
                     [queue, partition, count = *count,
                      done = std::move(done)](absl::StatusOr<store::JobPage> page) {
                       if (!page.ok()) return done(page.status());
                       for (v1::Job& job : page->jobs) job.set_queue(queue);
                       page->next_partition = partition;
                       if (page->next_offset < 0 && partition + 1 < count) {
                         page->next_partition = partition + 1;
                         page->next_offset = 0;
                       }
                       done(std::move(page));
                     });
  });
}

void QueueAdmin::ForEachPartition(const std::string& queue, PartitionCall each,
                                  store::Callback<int64_t> done) const {
  partitions_->Lookup(queue, [this, queue, each = std::make_shared<const PartitionCall>(std::move(each)),
                              done = std::move(done)](absl::StatusOr<int> count) mutable {
    if (!count.ok()) return done(count.status());
    EachFrom(each, queue, *count - 1, 0, std::move(done));
  });
}

void QueueAdmin::EachFrom(std::shared_ptr<const PartitionCall> each, const std::string& queue,
                          int partition, int64_t sum, store::Callback<int64_t> done) const {
  (*each)(store::PartitionQueue(queue, partition),
          [this, each, queue, partition, sum, done = std::move(done)](
              absl::StatusOr<int64_t> n) mutable {
            if (!n.ok()) return done(n.status());
            if (partition == 0) return done(sum + *n);
            EachFrom(each, queue, partition - 1, sum + *n, std::move(done));
          });
}

void QueueAdmin::RetryDead(const std::string& queue, const std::vector<std::string>& job_ids,
                           bool all, const std::string& type,
                           store::Callback<int64_t> done) const {
  if (all) {
    return ForEachPartition(
        queue,
        [this, type](const std::string& partition, store::Callback<int64_t> moved) {
          RetryFrom(partition, type, 0, "", 0, std::move(moved));
        },
        std::move(done));
  }
  std::map<int, std::vector<std::string>> by_partition;
  for (const std::string& id : job_ids) by_partition[store::PartitionOfJobId(id)].push_back(id);
  ForEachPartition(
      queue,
      [this, type, by_partition = std::move(by_partition)](const std::string& partition,
                                                           store::Callback<int64_t> moved) {
        auto ids = by_partition.find(store::PartitionOfName(partition));
        if (ids == by_partition.end()) return moved(0);
        admin_->RetryDeadIds(partition, ids->second, type,
                             [moved = std::move(moved)](absl::StatusOr<store::RetryBatch> batch) {
                               if (!batch.ok()) return moved(batch.status());
                               moved(batch->moved);
                             });
      },
      std::move(done));
}

void QueueAdmin::RetryFrom(const std::string& queue, const std::string& type, int64_t offset,
                           const std::string& bound, int64_t moved,
                           store::Callback<int64_t> done) const {
  admin_->RetryDeadScan(
      queue, type, offset, kBatch, bound,
      [this, queue, type, moved, done = std::move(done)](
          absl::StatusOr<store::RetryBatch> batch) mutable {
        if (!batch.ok()) return done(batch.status());
        int64_t total = moved + batch->moved;
        if (batch->next_offset < 0) return done(total);
        RetryFrom(queue, type, batch->next_offset, batch->bound, total, std::move(done));
      });
}

void QueueAdmin::DeleteJob(const std::string& queue, const std::string& job_id,
                           store::Callback<bool> done) const {
  const std::string partition = store::PartitionQueue(queue, store::PartitionOfJobId(job_id));
  admin_->DeleteJob(partition, job_id,
                    [this, partition, done = std::move(done)](absl::StatusOr<bool> deleted) {
                      if (!deleted.ok()) return done(std::move(deleted));
                      // News for dependents elsewhere, before the answer.
                      links_->Drain(partition, [deleted = std::move(deleted),
                                                done = std::move(done)]() mutable {
                        done(std::move(deleted));
                      });
                    });
}

void QueueAdmin::DeleteQueue(const std::string& queue, bool force,
                             store::Callback<int64_t> done) const {
  auto remove = [this, queue, force](store::Callback<int64_t> done) {
    ForEachPartition(
        queue,
        [this, force](const std::string& partition, store::Callback<int64_t> deleted) {
          DeleteFrom(partition, force, 0, std::move(deleted));
        },
        [this, queue, done = std::move(done)](absl::StatusOr<int64_t> deleted) {
          // The count went with partition 0 (other replicas read it again
          // within QueuePartitions' refresh).
          if (deleted.ok()) {
            partitions_->Set(queue, 1);
            store::QueueSettingsChange removed;  // the settings went too
            removed.job_timeout_ms = store::kRemoveJobTimeout;
            removed.rate_limit = v1::RateLimit();
            removed.max_active = 0;
            removed.max_active_per_key = 0;
            removed.key_rate_limit = v1::RateLimit();
            partitions_->Apply(queue, removed);
          }
          done(std::move(deleted));
        });
  };
  if (force) return remove(std::move(done));
  // Refused before anything is removed when any partition has active jobs
  // (each partition's script checks again).
  Stats(queue, [queue, remove, done = std::move(done)](absl::StatusOr<v1::QueueStats> stats) {
    if (!stats.ok()) return done(stats.status());
    if (stats->active() > 0) {
      return done(base::WithReason(
          absl::FailedPreconditionError(absl::StrCat("queue ", queue, " has ", stats->active(),
                                                     " active jobs; set force to delete them too")),
          base::reason::kQueueHasActiveJobs));
    }
    remove(std::move(done));
  });
}

void QueueAdmin::DeleteFrom(const std::string& queue, bool force, int64_t deleted,
                            store::Callback<int64_t> done) const {
  admin_->DeleteQueue(queue, force, kBatch,
                      [this, queue, force, deleted, done = std::move(done)](
                          absl::StatusOr<std::pair<int64_t, bool>> batch) mutable {
                        if (!batch.ok()) return done(batch.status());
                        const int64_t total = deleted + batch->first;
                        if (batch->second) {
                          // The news delete_queue.lua left, before the answer.
                          return links_->Drain(queue, [total, done = std::move(done)]() {
                            done(total);
                          });
                        }
                        DeleteFrom(queue, force, total, std::move(done));
                      });
}

void QueueAdmin::PurgeDead(const std::string& queue, int64_t older_than_ms,
                           store::Callback<int64_t> done) const {
  ForEachPartition(
      queue,
      [this, older_than_ms](const std::string& partition, store::Callback<int64_t> purged) {
        PurgeFrom(partition, older_than_ms, 0, std::move(purged));
      },
      std::move(done));
}

void QueueAdmin::PurgeFrom(const std::string& queue, int64_t older_than_ms, int64_t purged,
                           store::Callback<int64_t> done) const {
  admin_->PurgeDead(queue, older_than_ms, kBatch,
                    [this, queue, older_than_ms, purged, done = std::move(done)](
                        absl::StatusOr<int64_t> removed) mutable {
                      if (!removed.ok()) return done(removed.status());
                      int64_t total = purged + *removed;
                      if (*removed < kBatch) return done(total);
                      PurgeFrom(queue, older_than_ms, total, std::move(done));
                    });
}

void QueueAdmin::SetPaused(const std::string& queue, bool paused,
                           store::Callback<bool> done) const {
  jobs_->RegisterQueue(queue, [this, queue, paused, done = std::move(done)](
                                  absl::StatusOr<bool> registered) mutable {
    if (!registered.ok()) return done(registered.status());
    ForEachPartition(
        queue,
        [this, paused](const std::string& partition, store::Callback<int64_t> changed) {
          admin_->SetPaused(partition, paused,
                            [changed = std::move(changed)](absl::StatusOr<bool> flag) {
                              if (!flag.ok()) return changed(flag.status());
                              changed(*flag ? 1 : 0);
                            });
        },
        [done = std::move(done)](absl::StatusOr<int64_t> changed) {
          if (!changed.ok()) return done(changed.status());
          done(*changed > 0);
        });
  });
}

}  // namespace jobwire::core
