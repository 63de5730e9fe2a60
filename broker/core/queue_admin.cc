#include "broker/core/queue_admin.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/synchronization/mutex.h"

namespace jobwire::core {

QueueAdmin::QueueAdmin(const store::JobStore* jobs, const store::AdminStore* admin)
    : jobs_(jobs), admin_(admin) {}

void QueueAdmin::ListQueues(store::Callback<std::vector<v1::QueueStats>> done) const {
  jobs_->ListQueues([this, done = std::move(done)](
                        absl::StatusOr<std::vector<std::string>> names) mutable {
    if (!names.ok()) return done(names.status());
    if (names->empty()) return done(std::vector<v1::QueueStats>{});
    // Gathers one Stats answer per queue; the last one finishes the call.
    struct Gather {
      absl::Mutex mu;
      std::vector<v1::QueueStats> stats;
      absl::Status error;
      size_t remaining;
      store::Callback<std::vector<v1::QueueStats>> done;
    };
    auto gather = std::make_shared<Gather>();
    gather->remaining = names->size();
    gather->done = std::move(done);
    for (const std::string& name : *names) {
      admin_->Stats(name, [gather](absl::StatusOr<v1::QueueStats> stats) {
        bool last = false;
        {
          absl::MutexLock lock(&gather->mu);
          if (stats.ok()) {
            gather->stats.push_back(*std::move(stats));
          } else if (gather->error.ok()) {
            gather->error = stats.status();
          }
          last = --gather->remaining == 0;
        }
        if (!last) return;
        if (!gather->error.ok()) return gather->done(gather->error);
        std::sort(gather->stats.begin(), gather->stats.end(),
                  [](const v1::QueueStats& a, const v1::QueueStats& b) {
                    return a.queue() < b.queue();
                  });
        gather->done(std::move(gather->stats));
      });
    }
  });
}

void QueueAdmin::Stats(const std::string& queue, store::Callback<v1::QueueStats> done) const {
  admin_->Stats(queue, std::move(done));
}

void QueueAdmin::ListJobs(const std::string& queue, const store::JobPageRequest& request,
                          store::Callback<store::JobPage> done) const {
  admin_->ListJobs(queue, request, std::move(done));
}

void QueueAdmin::RetryDead(const std::string& queue, const std::vector<std::string>& job_ids,
                           bool all, const std::string& type,
                           store::Callback<int64_t> done) const {
  if (all) return RetryFrom(queue, type, 0, "", 0, std::move(done));
  admin_->RetryDeadIds(queue, job_ids, type,
                       [done = std::move(done)](absl::StatusOr<store::RetryBatch> batch) {
                         if (!batch.ok()) return done(batch.status());
                         done(batch->moved);
                       });
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
  admin_->DeleteJob(queue, job_id, std::move(done));
}

void QueueAdmin::DeleteQueue(const std::string& queue, bool force,
                             store::Callback<int64_t> done) const {
  DeleteFrom(queue, force, 0, std::move(done));
}

void QueueAdmin::DeleteFrom(const std::string& queue, bool force, int64_t deleted,
                            store::Callback<int64_t> done) const {
  admin_->DeleteQueue(queue, force, kBatch,
                      [this, queue, force, deleted, done = std::move(done)](
                          absl::StatusOr<std::pair<int64_t, bool>> batch) mutable {
                        if (!batch.ok()) return done(batch.status());
                        const int64_t total = deleted + batch->first;
                        if (batch->second) return done(total);
                        DeleteFrom(queue, force, total, std::move(done));
                      });
}

void QueueAdmin::PurgeDead(const std::string& queue, int64_t older_than_ms,
                           store::Callback<int64_t> done) const {
  PurgeFrom(queue, older_than_ms, 0, std::move(done));
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
    admin_->SetPaused(queue, paused, std::move(done));
  });
}

}  // namespace jobwire::core
