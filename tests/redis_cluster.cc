#include "tests/redis_cluster.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace jobwire::testing {
namespace {

// The value of `field` in a RESP2 map (a flat array of key, value, ...).
const RedisReply* Field(const RedisReply& map, const std::string& field) {
  for (size_t i = 0; i + 1 < map.elements.size(); i += 2) {
    if (map.elements[i].str == field) return &map.elements[i + 1];
  }
  return nullptr;
}

// One shard of CLUSTER SHARDS: its slot ranges and its online master's port
// (0 when it has none).
struct Shard {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int master_port = 0;
};

std::vector<Shard> ParseShards(const RedisReply& reply) {
  std::vector<Shard> shards;
  for (const RedisReply& s : reply.elements) {
    Shard shard;
    if (const RedisReply* slots = Field(s, "slots")) {
      for (size_t i = 0; i + 1 < slots->elements.size(); i += 2) {
        shard.ranges.emplace_back(slots->elements[i].integer, slots->elements[i + 1].integer);
      }
    }
    if (const RedisReply* nodes = Field(s, "nodes")) {
      for (const RedisReply& n : nodes->elements) {
        const RedisReply* role = Field(n, "role");
        const RedisReply* health = Field(n, "health");
        const RedisReply* port = Field(n, "port");
        if (role && health && port && role->str == "master" && health->str == "online") {
          shard.master_port = static_cast<int>(port->integer);
        }
      }
    }
    shards.push_back(std::move(shard));
  }
  return shards;
}

}  // namespace

struct RedisCluster::Node {
  int port = 0;
  std::string dir;
  Subprocess process;
  bool killed = false;
};

RedisCluster::RedisCluster(int masters, int replicas_per_master, absl::Duration node_timeout)
    : masters_(masters), replicas_per_master_(replicas_per_master), node_timeout_(node_timeout) {}

RedisCluster::~RedisCluster() {
  for (auto& node : nodes_) {
    node->process.Terminate(absl::Seconds(5));
    if (!node->dir.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(node->dir, ignored);
    }
  }
}

std::vector<int> RedisCluster::ports() const {
  std::vector<int> out;
  for (const auto& node : nodes_) out.push_back(node->port);
  return out;
}

std::string RedisCluster::url() const {
  std::vector<std::string> hosts;
  for (const auto& node : nodes_) hosts.push_back(absl::StrCat("127.0.0.1:", node->port));
  return absl::StrCat("redis://", absl::StrJoin(hosts, ","));
}

absl::StatusOr<RedisReply> RedisCluster::CommandAt(int port, const std::vector<std::string>& argv) {
  return RedisCommandAt(port, "", argv);
}

bool RedisCluster::Alive(int port) const {
  for (const auto& node : nodes_) {
    if (node->port == port) return !node->killed;
  }
  return false;
}

absl::Status RedisCluster::StartNode(Node& node) {
  char dir_template[] = "/tmp/jobwire-cluster-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return absl::InternalError("mkdtemp failed");
  node.dir = dir_template;
  const std::string port = absl::StrCat(node.port);
  // The cluster bus port defaults to port + 10000, which may be taken or
  // past 65535: pick it too.
  absl::StatusOr<int> bus_port = PickFreePort();
  if (!bus_port.ok()) return bus_port.status();
  absl::Status spawned = node.process.Spawn(
      {"redis-server", "--port", port, "--cluster-port", absl::StrCat(*bus_port), "--bind",
       "127.0.0.1", "--cluster-enabled", "yes",
       "--cluster-config-file", node.dir + "/nodes.conf", "--cluster-node-timeout",
       absl::StrCat(absl::ToInt64Milliseconds(node_timeout_)), "--save", "", "--appendonly", "no",
       "--dir", node.dir, "--loglevel", "warning"},
      node.dir + "/redis.log");
  if (!spawned.ok()) return spawned;
  return WaitForPong(node.process, node.port, "cluster node");
}

absl::Status RedisCluster::Start() {
  const int total = masters_ * (1 + replicas_per_master_);
  std::vector<std::string> create = {"redis-cli", "--cluster", "create"};
  for (int i = 0; i < total; ++i) {
    auto node = std::make_unique<Node>();
    absl::Status started;
    for (int attempt = 0; attempt < 3; ++attempt) {  // the free port may be taken meanwhile
      absl::StatusOr<int> port = PickFreePort();
      if (!port.ok()) return port.status();
      node->port = *port;
      started = StartNode(*node);
      if (started.ok()) break;
    }
    if (!started.ok()) return started;
    create.push_back(absl::StrCat("127.0.0.1:", node->port));
    nodes_.push_back(std::move(node));
  }
  create.insert(create.end(),
                {"--cluster-replicas", absl::StrCat(replicas_per_master_), "--cluster-yes"});
  Subprocess cli;
  const std::string log = nodes_[0]->dir + "/cluster-create.log";
  absl::Status spawned = cli.Spawn(create, log, log);
  if (!spawned.ok()) return spawned;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (cli.Running()) {
    if (absl::Now() > deadline) {
      cli.Terminate(absl::Seconds(1));
      return absl::UnavailableError("redis-cli --cluster create did not finish (" + log + ")");
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  if (!WIFEXITED(cli.last_status()) || WEXITSTATUS(cli.last_status()) != 0) {
    return absl::UnavailableError("redis-cli --cluster create failed (" + log + ")");
  }
  absl::Status healthy = WaitHealthy(absl::Seconds(60));
  if (!healthy.ok()) return healthy;
  // A replica that never finished its first sync is not eligible for
  // failover: wait until every replica's link to its master is up.
  for (const auto& node : nodes_) {
    bool synced = false;
    while (!synced && absl::Now() < deadline) {
      absl::StatusOr<RedisReply> info = CommandAt(node->port, {"INFO", "replication"});
      synced = info.ok() && (absl::StrContains(info->str, "role:master") ||
                             absl::StrContains(info->str, "master_link_status:up"));
      if (!synced) absl::SleepFor(absl::Milliseconds(50));
    }
    if (!synced) return absl::UnavailableError(absl::StrCat("replica ", node->port, " never synced"));
  }
  return absl::OkStatus();
}

absl::Status RedisCluster::WaitHealthy(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string why;
  while (absl::Now() < deadline) {
    why.clear();
    for (const auto& node : nodes_) {
      if (node->killed) continue;
      absl::StatusOr<RedisReply> info = CommandAt(node->port, {"CLUSTER", "INFO"});
      if (!info.ok() || !absl::StrContains(info->str, "cluster_state:ok") ||
          !absl::StrContains(info->str, "cluster_slots_ok:16384")) {
        why = absl::StrCat("node ", node->port, " not ok");
        break;
      }
      absl::StatusOr<RedisReply> shards = CommandAt(node->port, {"CLUSTER", "SHARDS"});
      if (!shards.ok()) {
        why = absl::StrCat("node ", node->port, ": ", shards.status().ToString());
        break;
      }
      for (const Shard& shard : ParseShards(*shards)) {
        if (!shard.ranges.empty() && !Alive(shard.master_port)) {
          why = absl::StrCat("node ", node->port, " sees a shard without a live master");
        }
      }
      if (!why.empty()) break;
    }
    if (why.empty()) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::UnavailableError("cluster not healthy: " + why);
}

absl::StatusOr<std::vector<int>> RedisCluster::MasterPorts() {
  for (const auto& node : nodes_) {
    if (node->killed) continue;
    absl::StatusOr<RedisReply> shards = CommandAt(node->port, {"CLUSTER", "SHARDS"});
    if (!shards.ok()) continue;
    std::vector<int> out;
    for (const Shard& shard : ParseShards(*shards)) {
      if (!shard.ranges.empty() && shard.master_port != 0) out.push_back(shard.master_port);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  return absl::UnavailableError("no live cluster node answered CLUSTER SHARDS");
}

absl::StatusOr<int> RedisCluster::MasterOfSlot(int slot) {
  for (const auto& node : nodes_) {
    if (node->killed) continue;
    absl::StatusOr<RedisReply> shards = CommandAt(node->port, {"CLUSTER", "SHARDS"});
    if (!shards.ok()) continue;
    for (const Shard& shard : ParseShards(*shards)) {
      for (const auto& [first, last] : shard.ranges) {
        if (slot >= first && slot <= last && shard.master_port != 0) return shard.master_port;
      }
    }
    return absl::NotFoundError(absl::StrCat("slot ", slot, " has no live master"));
  }
  return absl::UnavailableError("no live cluster node answered CLUSTER SHARDS");
}

void RedisCluster::Kill(int port) {
  for (auto& node : nodes_) {
    if (node->port != port || node->killed) continue;
    node->process.Kill();
    node->killed = true;
  }
}

absl::StatusOr<std::string> RedisCluster::NodeId(int port) {
  absl::StatusOr<RedisReply> id = CommandAt(port, {"CLUSTER", "MYID"});
  if (!id.ok()) return id.status();
  if (id->is_error()) return absl::InternalError(id->str);
  return id->str;
}

absl::Status RedisCluster::MoveSlot(int slot, int to_port) {
  absl::StatusOr<int> from_port = MasterOfSlot(slot);
  if (!from_port.ok()) return from_port.status();
  if (*from_port == to_port) return absl::OkStatus();
  absl::StatusOr<std::string> from_id = NodeId(*from_port);
  absl::StatusOr<std::string> to_id = NodeId(to_port);
  if (!from_id.ok()) return from_id.status();
  if (!to_id.ok()) return to_id.status();
  const std::string s = absl::StrCat(slot);
  auto check = [](const absl::StatusOr<RedisReply>& r, const std::string& what) -> absl::Status {
    if (!r.ok()) return r.status();
    if (r->is_error()) return absl::InternalError(what + ": " + r->str);
    return absl::OkStatus();
  };
  absl::Status st = check(CommandAt(to_port, {"CLUSTER", "SETSLOT", s, "IMPORTING", *from_id}),
                          "SETSLOT IMPORTING");
  if (st.ok()) {
    st = check(CommandAt(*from_port, {"CLUSTER", "SETSLOT", s, "MIGRATING", *to_id}),
               "SETSLOT MIGRATING");
  }
  while (st.ok()) {
    absl::StatusOr<RedisReply> keys = CommandAt(*from_port, {"CLUSTER", "GETKEYSINSLOT", s, "100"});
    st = check(keys, "GETKEYSINSLOT");
    if (!st.ok() || keys->elements.empty()) break;
    std::vector<std::string> migrate = {"MIGRATE", "127.0.0.1", absl::StrCat(to_port), "", "0",
                                        "5000", "KEYS"};
    for (const RedisReply& key : keys->elements) migrate.push_back(key.str);
    st = check(CommandAt(*from_port, migrate), "MIGRATE");
  }
  if (!st.ok()) return st;
  // The new owner first, then the old one, then every other master.
  std::vector<int> order = {to_port, *from_port};
  absl::StatusOr<std::vector<int>> masters = MasterPorts();
  if (masters.ok()) {
    for (int port : *masters) {
      if (port != to_port && port != *from_port) order.push_back(port);
    }
  }
  for (int port : order) {
    st = check(CommandAt(port, {"CLUSTER", "SETSLOT", s, "NODE", *to_id}), "SETSLOT NODE");
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

int64_t RedisCluster::RedirectionsSent(int port) {
  absl::StatusOr<RedisReply> info = CommandAt(port, {"INFO", "errorstats"});
  if (!info.ok() || info->is_error()) return -1;
  int64_t total = 0;
  for (const std::string kind : {"ASK", "MOVED"}) {
    const std::string field = absl::StrCat("errorstat_", kind, ":count=");
    const size_t at = info->str.find(field);
    if (at == std::string::npos) continue;
    const size_t from = at + field.size();
    int64_t n = 0;
    if (!absl::SimpleAtoi(info->str.substr(from, info->str.find('\r', from) - from), &n)) return -1;
    total += n;
  }
  return total;
}

absl::Status RedisCluster::CutReplication(int port) {
  absl::StatusOr<RedisReply> r = CommandAt(port, {"CONFIG", "SET", "requirepass", "cut"});
  if (r.ok() && !r->is_error()) {
    r = RedisCommandAt(port, "cut", {"CLIENT", "KILL", "TYPE", "replica"});
  }
  if (!r.ok()) return r.status();
  return r->is_error() ? absl::InternalError("cutting replication: " + r->str) : absl::OkStatus();
}

}  // namespace jobwire::testing
