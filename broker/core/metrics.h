// Metrics: the broker's Prometheus metrics (prometheus-cpp), kept in one
// registry that the server exposes over HTTP (see docs/operations.md for
// every metric, its labels and its meaning). Components get a Metrics*
// injected and report events through the methods below; nothing else
// touches prometheus-cpp.
//
// Thread safety: every method may be called from any thread.
#ifndef JOBWIRE_BROKER_CORE_METRICS_H_
#define JOBWIRE_BROKER_CORE_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "jobwire/v1/admin.pb.h"

namespace jobwire::core {

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // What the HTTP exposer serves: the registry of the jobwire_* series, and
  // the process metrics (ProcessMetrics).
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables() const {
    return {registry_, process_};
  }

  // A new job was stored (not a duplicate of an idempotency key).
  void JobEnqueued(const std::string& queue);
  // A job was delivered on a Claim stream; `wait` is claim time minus the
  // time it became due (available_at), both by the Redis clock.
  void JobClaimed(const std::string& queue, absl::Duration wait);
  void JobAcked(const std::string& queue);
  // Claim-to-ack run time of a job claimed and acked through this broker.
  void JobRunTime(const std::string& queue, absl::Duration run_time);
  // A Fail was applied: either a retry was scheduled or the job is dead.
  void JobFailed(const std::string& queue, bool dead);
  // A Cancel made a pending job dead.
  void JobCancelled(const std::string& queue);
  // The reaper settled `count` expired leases, `dead` of which ran out of
  // attempts (the others were scheduled for a retry).
  void LeasesExpired(const std::string& queue, int64_t count, int64_t dead);

  // A gRPC call ended `elapsed` after it began. `full_method` is
  // "/package.Service/Method"; `code` the canonical code name ("OK",
  // "UNAVAILABLE", ...).
  void RpcFinished(absl::string_view full_method, absl::string_view code,
                   absl::Duration elapsed);

  // A Claim stream reading `queues` opened or closed (the same queues).
  // A queue's stream gauge goes away when its last stream closes.
  void ClaimStreamOpened(const std::vector<std::string>& queues);
  void ClaimStreamClosed(const std::vector<std::string>& queues);

  // The broker's Redis command connection is up (answered its first PING)
  // or lost. Starts down.
  void SetRedisUp(bool up);
  // A PING to Redis was answered after `round_trip`.
  void RedisRoundTrip(absl::Duration round_trip);

  // Replaces the queue's depth and oldest-due gauges.
  void SetQueueStats(const v1::QueueStats& stats);

  // Removes every series labelled with `queue` (the queue is gone), so that
  // the series do not grow with every queue ever seen.
  void ForgetQueue(const std::string& queue);
  // The queues that have series.
  std::vector<std::string> Queues() const;

 private:
  // Notes that `queue` has series.
  void Track(const std::string& queue);

  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> queues_ ABSL_GUARDED_BY(mu_);
  // Open Claim streams per queue (the queues with a stream gauge).
  absl::flat_hash_map<std::string, int64_t> queue_streams_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<prometheus::Collectable> process_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& enqueued_;
  prometheus::Family<prometheus::Counter>& claimed_;
  prometheus::Family<prometheus::Counter>& acked_;
  prometheus::Family<prometheus::Counter>& failed_;
  prometheus::Family<prometheus::Counter>& retried_;
  prometheus::Family<prometheus::Counter>& dead_;
  prometheus::Family<prometheus::Counter>& lease_expired_;
  prometheus::Family<prometheus::Histogram>& claim_wait_;
  prometheus::Family<prometheus::Histogram>& run_time_;
  prometheus::Family<prometheus::Counter>& rpcs_;
  prometheus::Family<prometheus::Histogram>& rpc_duration_;
  prometheus::Gauge& streams_open_;
  prometheus::Family<prometheus::Gauge>& queue_streams_open_;
  prometheus::Gauge& redis_up_;
  prometheus::Histogram& redis_round_trip_;
  prometheus::Family<prometheus::Gauge>& queue_jobs_;
  prometheus::Family<prometheus::Gauge>& oldest_due_age_;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_METRICS_H_
