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
  params_.store->ListQueues([this](absl::StatusOr<std::vector<std::string>> queues) {
    if (queues.ok()) {
      // Absent from two registry reads in a row: a queue's first enqueue
      // counts its metrics just before its registration lands.
      absl::flat_hash_set<std::string> registered(queues->begin(), queues->end());
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
    if (!queues.ok() || queues->empty()) {
      Schedule(params_.interval);
      return;
    }
    // The next pass starts an interval after this one's last reply.
    auto remaining = std::make_shared<size_t>(queues->size());
    for (const std::string& queue : *queues) {
      params_.admin->Stats(queue, [this, remaining](absl::StatusOr<v1::QueueStats> stats) {
        if (stats.ok()) params_.metrics->SetQueueStats(*stats);
        if (--*remaining == 0) Schedule(params_.interval);
      });
    }
  });
}

}  // namespace jobwire::core
