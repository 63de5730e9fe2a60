// StreamCounts: how many Claim streams are open on this broker, in all and
// from each peer (client connection), against StreamLimits, so that a flood
// of Claim calls is refused (RESOURCE_EXHAUSTED) instead of exhausting
// memory.
//
// Thread safety: every method may be called from any thread.
#ifndef JOBWIRE_BROKER_CORE_STREAM_COUNTS_H_
#define JOBWIRE_BROKER_CORE_STREAM_COUNTS_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace jobwire::core {

// How many Claim streams may be open at once on this broker.
struct StreamLimits {
  int64_t max_streams = 10000;
  int64_t max_streams_per_peer = 1000;  // per ClaimSpec::peer
};

class StreamCounts {
 public:
  explicit StreamCounts(StreamLimits limits) : limits_(limits) {}

  // Counts stream `id` from `peer`, or answers RESOURCE_EXHAUSTED naming the
  // limit it would pass (and counts nothing).
  absl::Status Admit(uint64_t id, const std::string& peer);
  // Stops counting `id`; false when it was not counted.
  bool Release(uint64_t id);
  int64_t open() const { return open_.load(); }

 private:
  const StreamLimits limits_;
  std::atomic<int64_t> open_{0};  // written under mu_
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, int64_t> per_peer_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::string> peer_of_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_STREAM_COUNTS_H_
