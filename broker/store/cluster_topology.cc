#include "broker/store/cluster_topology.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace jobwire::store {
namespace {

// The value of `field` in a RESP2 map (a flat key, value, ... array).
const RedisReply* Field(const RedisReply& map, absl::string_view field) {
  for (size_t i = 0; i + 1 < map.elements.size(); i += 2) {
    if (map.elements[i].str == field) return &map.elements[i + 1];
  }
  return nullptr;
}

// The online master of one shard's "nodes", if any.
std::optional<NodeAddress> OnlineMaster(const RedisReply& nodes) {
  for (const RedisReply& node : nodes.elements) {
    const RedisReply* role = Field(node, "role");
    const RedisReply* health = Field(node, "health");
    if (role == nullptr || health == nullptr || role->str != "master" || health->str != "online") {
      continue;
    }
    NodeAddress addr;
    const RedisReply* endpoint = Field(node, "endpoint");
    const RedisReply* ip = Field(node, "ip");
    if (endpoint != nullptr && !endpoint->str.empty() && endpoint->str != "?") {
      addr.host = endpoint->str;
    } else if (ip != nullptr) {
      addr.host = ip->str;
    }
    const RedisReply* port = Field(node, "port");
    if (port == nullptr) port = Field(node, "tls-port");
    if (port != nullptr) addr.port = static_cast<int>(port->AsInt());
    if (!addr.host.empty() && addr.port > 0) return addr;
  }
  return std::nullopt;
}

}  // namespace

std::string NodeAddress::ToString() const { return absl::StrCat(host, ":", port); }

absl::StatusOr<ClusterTopology> ClusterTopology::FromShards(const RedisReply& reply) {
  if (reply.type != RedisReply::Type::kArray) {
    return absl::InvalidArgumentError("CLUSTER SHARDS: not an array");
  }
  ClusterTopology topology;
  std::array<bool, kClusterSlots> covered{};
  for (const RedisReply& shard : reply.elements) {
    const RedisReply* slots = Field(shard, "slots");
    const RedisReply* nodes = Field(shard, "nodes");
    if (slots == nullptr || nodes == nullptr || slots->elements.size() % 2 != 0) {
      return absl::InvalidArgumentError("CLUSTER SHARDS: a shard without slots or nodes");
    }
    if (slots->elements.empty()) continue;  // a master without slots serves nothing
    std::optional<NodeAddress> master = OnlineMaster(*nodes);
    if (!master.has_value()) continue;  // reported below as uncovered slots
    size_t index = topology.masters_.size();
    for (size_t i = 0; i < topology.masters_.size(); ++i) {
      if (topology.masters_[i] == *master) index = i;
    }
    if (index == topology.masters_.size()) topology.masters_.push_back(*master);
    for (size_t i = 0; i < slots->elements.size(); i += 2) {
      const int64_t first = slots->elements[i].AsInt(-1);
      const int64_t last = slots->elements[i + 1].AsInt(-1);
      if (first < 0 || last >= kClusterSlots || first > last) {
        return absl::InvalidArgumentError(absl::StrCat("CLUSTER SHARDS: slot range ", first, "-", last));
      }
      for (int64_t s = first; s <= last; ++s) {
        topology.slot_master_[s] = static_cast<uint16_t>(index);
        covered[s] = true;
      }
    }
  }
  for (int s = 0; s < kClusterSlots; ++s) {
    if (!covered[s]) {
      return absl::FailedPreconditionError(absl::StrCat("cluster slot ", s, " has no online master"));
    }
  }
  return topology;
}

std::optional<Redirect> ParseRedirect(absl::string_view error) {
  std::vector<absl::string_view> parts = absl::StrSplit(error, ' ');
  if (parts.size() != 3) return std::nullopt;
  Redirect r;
  if (parts[0] == "MOVED") {
    r.kind = Redirect::Kind::kMoved;
  } else if (parts[0] == "ASK") {
    r.kind = Redirect::Kind::kAsk;
  } else {
    return std::nullopt;
  }
  if (!absl::SimpleAtoi(parts[1], &r.slot) || r.slot < 0 || r.slot >= kClusterSlots) {
    return std::nullopt;
  }
  const size_t colon = parts[2].rfind(':');
  if (colon == absl::string_view::npos) return std::nullopt;
  r.to.host = std::string(parts[2].substr(0, colon));
  if (!absl::SimpleAtoi(parts[2].substr(colon + 1), &r.to.port) || r.to.port <= 0 ||
      r.to.port > 65535) {
    return std::nullopt;
  }
  return r;
}

}  // namespace jobwire::store
