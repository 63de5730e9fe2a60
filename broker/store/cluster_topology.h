// ClusterTopology: which Redis Cluster master serves each hash slot, read
// from a `CLUSTER SHARDS` reply (Redis 7), and the redirections a node
// answers with when it does not serve a key's slot (MOVED, ASK).
//
// A topology is a value: the cluster client builds a new one after a MOVED
// or a lost node, and routes each script call by its queue's slot
// (store::KeySlot) to MasterFor(slot). Only online masters are kept; a shard
// whose master is failed or loading has no entry until a newer CLUSTER
// SHARDS shows its promoted replica.
#ifndef JOBWIRE_BROKER_STORE_CLUSTER_TOPOLOGY_H_
#define JOBWIRE_BROKER_STORE_CLUSTER_TOPOLOGY_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "broker/store/key_slot.h"
#include "broker/store/redis_reply.h"

namespace jobwire::store {

// A cluster node's address ("host:port" in redirections).
struct NodeAddress {
  std::string host;
  int port = 0;

  std::string ToString() const;
  friend bool operator==(const NodeAddress&, const NodeAddress&) = default;
};

class ClusterTopology {
 public:
  // Parses a CLUSTER SHARDS reply (RESP2: each shard and node a flat
  // key/value array). A node's address is its "endpoint" (what clients are
  // told to use), else its "ip"; its port is "port", else "tls-port".
  // INVALID_ARGUMENT for a reply of another shape; FAILED_PRECONDITION when
  // some slot has no online master (the cluster is not serving it yet).
  static absl::StatusOr<ClusterTopology> FromShards(const RedisReply& reply);

  // The master serving `slot`. REQUIRES: 0 <= slot < kClusterSlots.
  const NodeAddress& MasterFor(int slot) const { return masters_[slot_master_[slot]]; }
  // Every master, once each, in the order the reply listed them.
  const std::vector<NodeAddress>& masters() const { return masters_; }

 private:
  ClusterTopology() = default;

  std::vector<NodeAddress> masters_;
  std::array<uint16_t, kClusterSlots> slot_master_{};  // index into masters_
};

// A MOVED or ASK error reply: "MOVED <slot> <host>:<port>".
struct Redirect {
  enum class Kind { kMoved, kAsk };
  Kind kind = Kind::kMoved;
  int slot = 0;
  NodeAddress to;
};

// The redirection in an error reply's text, or nullopt when it is not one
// (or malformed). An empty host ("MOVED 3999 :6380", sent by nodes that do
// not know their own address) is returned as empty: the caller uses the
// host of the node that answered.
std::optional<Redirect> ParseRedirect(absl::string_view error);

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_CLUSTER_TOPOLOGY_H_
