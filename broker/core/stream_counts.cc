#include "broker/core/stream_counts.h"

#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"

namespace jobwire::core {
namespace {

absl::Status TooMany(absl::string_view message) {
  return base::TooManyStreamsError(message, base::reason::kTooManyClaimStreams);
}

}  // namespace

absl::Status StreamCounts::Admit(uint64_t id, const std::string& peer) {
  absl::MutexLock lock(&mu_);
  if (open_.load() >= limits_.max_streams) {
    return TooMany(absl::StrCat("too many Claim streams on this broker (--max_claim_streams=",
                                limits_.max_streams, "); retry later or on another replica"));
  }
  int64_t& from_peer = per_peer_[peer];
  if (from_peer >= limits_.max_streams_per_peer) {
    return TooMany(absl::StrCat(
        "too many Claim streams on this connection (--max_claim_streams_per_peer=",
        limits_.max_streams_per_peer, "); close some or open another connection"));
  }
  ++from_peer;
  peer_of_[id] = peer;
  ++open_;
  return absl::OkStatus();
}

bool StreamCounts::Release(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = peer_of_.find(id);
  if (it == peer_of_.end()) return false;
  auto peer = per_peer_.find(it->second);
  if (--peer->second == 0) per_peer_.erase(peer);
  peer_of_.erase(it);
  --open_;
  return true;
}

}  // namespace jobwire::core
