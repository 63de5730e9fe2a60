// LeaseReaper: background loop that settles expired leases (reap.lua) in
// every registered queue. A pass runs at the earliest lease expiry it knows
// of: the earliest one Redis reports after each pass (leases of every
// replica), and the ones this broker grants meanwhile (OnLeaseGranted); and
// at least every `max_interval`. So an expiry is handled at once, except a
// lease granted by another replica after this one's last pass, shorter than
// max_interval, whose broker then dies: it is handled by the next pass,
// within max_interval of being granted. Idle, a broker runs one pass (7
// Redis commands per queue, and one to list the queues) per max_interval. Safe on every replica at
// once: reap.lua handles each expiry once. When the store bounds dead jobs
// (StoreOptions::dead_retention_ms / dead_max_per_queue), each pass also
// trims every queue's dead set (trim_dead.lua), a batch per queue per pass.
// A queue reap.lua reports idle (empty for StoreOptions::idle_queue_ttl_ms)
// is dropped from the registry, so the passes do not grow with every queue
// ever used; its next Enqueue registers it again. That check runs in one
// pass per `idle_check_interval` (or per tenth of the TTL, when shorter),
// not in every pass: idle, it costs more Redis commands than the rest of a
// pass, and the TTL is hours where a pass is seconds. The same pass finds
// the queues whose dependency news wait in their outbox, or whose children
// were left unlinked, and runs their recovery (DependencyLinks::Sweep).
#ifndef JOBWIRE_BROKER_CORE_LEASE_REAPER_H_
#define JOBWIRE_BROKER_CORE_LEASE_REAPER_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/core/dependency_links.h"
#include "broker/core/metrics.h"
#include "broker/store/admin_store.h"
#include "broker/store/job_store.h"

namespace jobwire::core {

struct LeaseReaperParams {
  base::EventLoop* loop = nullptr;
  const store::JobStore* store = nullptr;
  // Drops queues that reap.lua reports idle (AdminStore::DropIfEmpty); null:
  // none are dropped.
  const store::AdminStore* admin = nullptr;
  Metrics* metrics = nullptr;
  // Runs the recovery pass of a queue whose idle check reports dependency
  // work (DependencyLinks::Sweep); null: none runs.
  DependencyLinks* dependency_links = nullptr;
  absl::Duration max_interval = absl::Seconds(5);
  // How often at most a pass checks whether queues are idle.
  absl::Duration idle_check_interval = absl::Minutes(1);
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

  // This broker granted a lease expiring at `expiry`: a pass runs then, if
  // none is due before. REQUIRES: called on the loop thread.
  void OnLeaseGranted(absl::Time expiry);

 private:
  void Exec();
  void DropIdle(const std::string& queue);
  // Whether this pass checks for idle queues: once per idle_check_interval
  // (or tenth of the TTL); a true answer starts the next interval.
  bool TakeIdleCheck(const store::StoreOptions& options);
  // The next pass runs `delay` from now, replacing the one scheduled.
  void Schedule(absl::Duration delay);

  const LeaseReaperParams params_;
  std::atomic<bool> stopped_{false};
  // On the loop thread only:
  base::EventLoop::TimerId timer_ = 0;  // of the pass scheduled next
  absl::Time next_pass_ = absl::InfiniteFuture();  // when it runs
  bool in_pass_ = false;
  absl::Time granted_during_pass_ = absl::InfiniteFuture();  // earliest expiry
  absl::Time next_idle_check_ = absl::InfinitePast();  // the first pass checks
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_LEASE_REAPER_H_
