// RedisProbe: background loop that PINGs Redis every `interval` through the
// broker's command connection and reports the round trip to Metrics
// (jobwire_redis_roundtrip_seconds), so that a slow Redis or network shows
// before calls time out. A PING that fails reports nothing (the connection
// state is jobwire_redis_up); the next one is sent an interval later.
#ifndef JOBWIRE_BROKER_CORE_REDIS_PROBE_H_
#define JOBWIRE_BROKER_CORE_REDIS_PROBE_H_

#include <atomic>

#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/core/metrics.h"
#include "broker/store/admin_store.h"

namespace jobwire::core {

struct RedisProbeParams {
  base::EventLoop* loop = nullptr;
  const store::AdminStore* store = nullptr;
  Metrics* metrics = nullptr;
  absl::Duration interval = absl::Seconds(5);
};

// Thread safety: Start and Stop from one thread; the loop runs on `loop`.
class RedisProbe {
 public:
  // Every pointer in `params` must outlive the probe.
  explicit RedisProbe(RedisProbeParams params) : params_(params) {}

  void Start();
  // After Stop no new PING is sent. REQUIRES: the loop is stopped before
  // this object is destroyed.
  void Stop() { stopped_ = true; }

 private:
  void Exec();
  void Schedule(absl::Duration delay);

  const RedisProbeParams params_;
  std::atomic<bool> stopped_{false};
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_REDIS_PROBE_H_
