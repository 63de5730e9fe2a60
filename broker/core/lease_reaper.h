// LeaseReaper: background loop that settles expired leases (reap.lua) in
// every registered queue. It runs at least every `max_interval` and earlier
// when Redis reports a lease expiring sooner, so an expiry is handled within
// about max_interval. Safe on every replica at once: reap.lua handles each
// expiry once.
#ifndef JOBWIRE_BROKER_CORE_LEASE_REAPER_H_
#define JOBWIRE_BROKER_CORE_LEASE_REAPER_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/core/metrics.h"
#include "broker/store/job_store.h"

namespace jobwire::core {

struct LeaseReaperParams {
  base::EventLoop* loop = nullptr;
  const store::JobStore* store = nullptr;
  Metrics* metrics = nullptr;
  absl::Duration max_interval = absl::Seconds(1);
  int batch = 500;  // expired leases settled per queue per call
};

// Thread safety: Start and Stop from one thread; the loop runs on `loop`.
class LeaseReaper {
 public:
  explicit LeaseReaper(LeaseReaperParams params);

  void Start();
  // After Stop no new pass begins. REQUIRES: the loop is stopped before this
  // object is destroyed.
  void Stop();

 private:
  void Exec();
  void Schedule(absl::Duration delay);

  const LeaseReaperParams params_;
  std::atomic<bool> stopped_{false};
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_LEASE_REAPER_H_
