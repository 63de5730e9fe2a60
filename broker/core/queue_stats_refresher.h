// QueueStatsRefresher: background loop that refreshes the per-queue depth
// and oldest-due gauges of Metrics. Every `interval` it reads the stats of
// every registered queue (QueueAdmin::ListQueues: queue_stats.lua on each
// partition, a few O(log n) reads each, no scan), so a scrape never touches
// Redis. Gauges of a
// queue keep their last value while Redis is unreachable. A queue that has
// series but is not in the registry on two passes in a row
// (Admin.DeleteQueue, through any replica) loses all its series
// (Metrics::ForgetQueue).
#ifndef JOBWIRE_BROKER_CORE_QUEUE_STATS_REFRESHER_H_
#define JOBWIRE_BROKER_CORE_QUEUE_STATS_REFRESHER_H_

#include <atomic>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/core/metrics.h"
#include "broker/core/queue_admin.h"

namespace jobwire::core {

struct QueueStatsRefresherParams {
  base::EventLoop* loop = nullptr;
  const QueueAdmin* admin = nullptr;
  Metrics* metrics = nullptr;
  absl::Duration interval = absl::Seconds(5);
};

// Thread safety: Start and Stop from one thread; the loop runs on `loop`.
class QueueStatsRefresher {
 public:
  // Every pointer in `params` must outlive the refresher.
  explicit QueueStatsRefresher(QueueStatsRefresherParams params);

  void Start();
  // After Stop no new pass begins. REQUIRES: the loop is stopped before this
  // object is destroyed.
  void Stop();

 private:
  void Exec();
  void Schedule(absl::Duration delay);

  const QueueStatsRefresherParams params_;
  std::atomic<bool> stopped_{false};
  // Queues with series that the last pass found unregistered (loop thread).
  absl::flat_hash_set<std::string> absent_before_;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_QUEUE_STATS_REFRESHER_H_
