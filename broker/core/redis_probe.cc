#include "broker/core/redis_probe.h"

#include "absl/time/clock.h"

namespace jobwire::core {

void RedisProbe::Start() { Schedule(params_.interval); }

void RedisProbe::Schedule(absl::Duration delay) {
  params_.loop->RunAfter(delay, [this] {
    if (!stopped_) Exec();
  });
}

void RedisProbe::Exec() {
  const absl::Time sent = absl::Now();
  params_.store->Ping([this, sent](absl::Status status) {
    if (status.ok()) params_.metrics->RedisRoundTrip(absl::Now() - sent);
    Schedule(params_.interval);
  });
}

}  // namespace jobwire::core
