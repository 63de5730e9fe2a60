#include "broker/core/queue_stats_refresher.h"

#include <memory>
#include <string>
#include <vector>

namespace jobwire::core {

QueueStatsRefresher::QueueStatsRefresher(QueueStatsRefresherParams params) : params_(params) {}

void QueueStatsRefresher::Start() { Schedule(absl::ZeroDuration()); }

void QueueStatsRefresher::Stop() { stopped_ = true; }

void QueueStatsRefresher::Schedule(absl::Duration delay) {
  params_.loop->RunAfter(delay, [this] {
    if (!stopped_) Exec();
  });
}

void QueueStatsRefresher::Exec() {
  params_.admin->ListQueues([this](absl::StatusOr<std::vector<v1::QueueStats>> queues) {
    if (queues.ok()) {
      absl::flat_hash_set<std::string> registered;
      for (const v1::QueueStats& stats : *queues) {
        registered.insert(stats.queue());
        params_.metrics->SetQueueStats(stats);
      }
      // Absent from two registry reads in a row: a queue's first enqueue
      // counts its metrics just before its registration lands.
      absl::flat_hash_set<std::string> absent;
      for (const std::string& queue : params_.metrics->Queues()) {
        if (registered.contains(queue)) continue;
        if (absent_before_.contains(queue)) {
          params_.metrics->ForgetQueue(queue);
        } else {
          absent.insert(queue);
        }
      }
      absent_before_ = std::move(absent);
    }
    // The next pass starts an interval after this one's reply.
    Schedule(params_.interval);
  });
}

}  // namespace jobwire::core
