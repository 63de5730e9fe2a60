#include "broker/store/redis_cluster_client.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "broker/base/logging.h"
#include "broker/store/key_slot.h"

namespace jobwire::store {
namespace {

constexpr absl::Duration kFirstRetryDelay = absl::Milliseconds(25);
constexpr absl::Duration kRefreshDelay = absl::Milliseconds(200);

// RedisClient's statuses for Redis' error replies read "redis: <reply>".
constexpr absl::string_view kReplyPrefix = "redis: ";
// ... and for a command that was in flight when the connection dropped.
constexpr absl::string_view kLost = "redis connection lost";

}  // namespace

struct RedisClusterClient::Op {
  RedisCommands::Args args;
  ReplyCallback callback;
  int slot = -1;
  int redirects = 0;
  int retries = 0;
  std::optional<NodeAddress> moved_to;  // send there, whatever the map says
  std::optional<NodeAddress> ask_to;    // send ASKING and the command there
  NodeAddress sent_to;                  // the node of the latest attempt
};

RedisAddress ClusterNodeAddress(const RedisAddress& seeds, const NodeAddress& node) {
  RedisAddress a = seeds;
  a.host = node.host;
  a.port = node.port;
  a.seeds = {{node.host, node.port}};
  a.db = 0;
  return a;
}

int CommandSlot(const std::vector<std::string>& args) {
  if (args.size() < 2) return -1;
  const std::string name = absl::AsciiStrToUpper(args[0]);
  if (name == "EVAL" || name == "EVALSHA" || name == "EVAL_RO" || name == "EVALSHA_RO" ||
      name == "FCALL" || name == "FCALL_RO") {
    int numkeys = 0;
    if (args.size() < 4 || !absl::SimpleAtoi(args[2], &numkeys) || numkeys <= 0) return -1;
    return KeySlot(args[3]);
  }
  for (const char* keyless : {"PING", "INFO", "CONFIG", "SCRIPT", "CLUSTER", "ROLE", "DBSIZE",
                              "TIME", "ECHO", "AUTH", "SELECT", "HELLO", "CLIENT", "COMMAND",
                              "FUNCTION", "PUBLISH", "SUBSCRIBE", "UNSUBSCRIBE"}) {
    if (name == keyless) return -1;
  }
  return KeySlot(args[1]);
}

RedisClusterClient::RedisClusterClient(base::EventLoop* loop, RedisAddress seeds,
                                       std::string name,
                                       std::shared_ptr<const RedisTlsContext> tls)
    : loop_(loop), seeds_(std::move(seeds)), name_(std::move(name)), tls_(std::move(tls)) {}

RedisClusterClient::~RedisClusterClient() {
  stopping_ = true;
  for (auto& [key, node] : nodes_) {
    std::deque<std::shared_ptr<Op>> waiting = std::move(node->waiting);
    for (auto& op : waiting) Finish(op, base::RedisUnavailableError("redis cluster client destroyed"));
  }
  std::map<uint64_t, std::shared_ptr<Op>> delayed = std::move(delayed_);
  for (auto& [seq, op] : delayed) Finish(op, base::RedisUnavailableError("redis cluster client destroyed"));
  // Each RedisClient fails what it has in flight; OnReply then only
  // finishes (stopping_).
  nodes_.clear();
}

void RedisClusterClient::Start() {
  loop_->RunInLoop([this] {
    std::vector<RedisEndpoint> seeds = seeds_.seeds;
    if (seeds.empty()) seeds.push_back({seeds_.host, seeds_.port});
    for (const RedisEndpoint& seed : seeds) NodeAt({seed.host, seed.port});
  });
}

std::string RedisClusterClient::MasterForSlot(int slot) const {
  return topology_ ? topology_->MasterFor(slot).ToString() : std::string();
}

RedisClusterClient::Node& RedisClusterClient::NodeAt(const NodeAddress& address) {
  const std::string key = address.ToString();
  std::unique_ptr<Node>& node = nodes_[key];
  if (node != nullptr) return *node;
  node = std::make_unique<Node>();
  node->key = key;
  node->address = address;
  node->client = std::make_unique<RedisClient>(loop_, ClusterNodeAddress(seeds_, address),
                                               absl::StrCat(name_, "@", key), tls_);
  node->client->SetOnConnected([this, key] { OnNodeReady(key); });
  node->client->SetOnDisconnected([this, key] { OnNodeLost(key); });
  node->client->Start();
  return *node;
}

void RedisClusterClient::Command(Args args, ReplyCallback callback) {
  const int slot = CommandSlot(*args);
  SubmitTo(slot, std::move(args), std::move(callback));
}

void RedisClusterClient::CommandAt(const std::string& key, Args args, ReplyCallback callback) {
  SubmitTo(key.empty() ? -1 : KeySlot(key), std::move(args), std::move(callback));
}

void RedisClusterClient::SubmitTo(int slot, Args args, ReplyCallback callback) {
  loop_->RunInLoop([this, slot, args = std::move(args), callback = std::move(callback)]() mutable {
    auto op = std::make_shared<Op>();
    op->slot = slot;
    op->args = std::move(args);
    op->callback = std::move(callback);
    Send(std::move(op));
  });
}

void RedisClusterClient::Send(std::shared_ptr<Op> op) {
  if (stopping_) {
    Finish(op, base::RedisUnavailableError("redis cluster client destroyed"));
    return;
  }
  NodeAddress target;
  if (op->ask_to) {
    target = *op->ask_to;
  } else if (op->moved_to) {
    target = *op->moved_to;
  } else if (!topology_) {
    Finish(op, base::RedisUnavailableError("redis cluster: the slot map is not known yet (no node "
                                      "answered CLUSTER SHARDS)"));
    return;
  } else {
    target = op->slot < 0 ? topology_->masters().front() : topology_->MasterFor(op->slot);
  }
  SendTo(NodeAt(target), std::move(op));
}

void RedisClusterClient::SendTo(Node& node, std::shared_ptr<Op> op) {
  if (!node.ready) {
    node.waiting.push_back(std::move(op));
    if (node.wait_timer == 0) {
      node.wait_timer = loop_->RunAfter(kConnectWait, [this, key = node.key] { FailWaiting(key); });
    }
    return;
  }
  op->sent_to = node.address;
  if (op->ask_to) {
    // ASKING is one-shot: it admits the next command only. Pipelined on
    // the same connection, nothing comes between them.
    node.client->Command({"ASKING"}, [](absl::StatusOr<RedisReply>) {});
    op->ask_to.reset();
  }
  op->moved_to.reset();
  node.client->Command(op->args, [this, op](absl::StatusOr<RedisReply> reply) {
    OnReply(op, std::move(reply));
  });
}

void RedisClusterClient::OnReply(std::shared_ptr<Op> op, absl::StatusOr<RedisReply> reply) {
  if (stopping_ || reply.ok()) {
    Finish(op, std::move(reply));
    return;
  }
  const absl::string_view message = reply.status().message();
  if (absl::StartsWith(message, kReplyPrefix)) {
    const absl::string_view text = message.substr(kReplyPrefix.size());
    if (std::optional<Redirect> redirect = ParseRedirect(text)) {
      if (++op->redirects > kMaxRedirects) {
        Finish(op, base::RedisUnavailableError(absl::StrCat("redis cluster: gave up after ",
                                                       kMaxRedirects, " redirections: ", text)));
        return;
      }
      if (redirect->to.host.empty()) redirect->to.host = op->sent_to.host;
      if (redirect->kind == Redirect::Kind::kMoved) {
        op->moved_to = redirect->to;
        Refresh();
      } else {
        op->ask_to = redirect->to;
      }
      Send(std::move(op));
      return;
    }
    if (absl::StartsWith(text, "TRYAGAIN") || absl::StartsWith(text, "CLUSTERDOWN")) {
      Retry(std::move(op), reply.status());
      return;
    }
  }
  if (absl::StartsWith(message, kLost)) {
    Refresh();  // it may have run: only the caller can decide to repeat it
  } else if (absl::StartsWith(message, "redis is not reachable")) {
    Refresh();
    Retry(std::move(op), reply.status());  // never sent
    return;
  }
  Finish(op, std::move(reply));
}

void RedisClusterClient::Retry(std::shared_ptr<Op> op, absl::Status why) {
  if (++op->retries > kMaxRetries) {
    Finish(op, base::RedisUnavailableError(absl::StrCat("redis cluster: gave up after ", kMaxRetries,
                                                   " retries: ", why.message())));
    return;
  }
  const absl::Duration delay = kFirstRetryDelay * (1 << (op->retries - 1));
  const uint64_t seq = next_delayed_++;
  delayed_.emplace(seq, std::move(op));
  loop_->RunAfter(delay, [this, seq] {
    auto it = delayed_.find(seq);
    if (it == delayed_.end()) return;
    std::shared_ptr<Op> op = std::move(it->second);
    delayed_.erase(it);
    Send(std::move(op));
  });
}

void RedisClusterClient::Finish(std::shared_ptr<Op> op, absl::StatusOr<RedisReply> reply) {
  ReplyCallback callback = std::move(op->callback);
  if (callback) callback(std::move(reply));
}

void RedisClusterClient::OnNodeReady(const std::string& key) {
  Node& node = *nodes_[key];
  node.ready = true;
  loop_->Cancel(node.wait_timer);
  node.wait_timer = 0;
  std::deque<std::shared_ptr<Op>> waiting = std::move(node.waiting);
  node.waiting.clear();
  for (auto& op : waiting) SendTo(node, std::move(op));
  if (!topology_) Refresh();
  UpdateServing();
}

void RedisClusterClient::OnNodeLost(const std::string& key) {
  nodes_[key]->ready = false;
  Refresh();
  UpdateServing();
}

void RedisClusterClient::FailWaiting(const std::string& key) {
  Node& node = *nodes_[key];
  node.wait_timer = 0;
  std::deque<std::shared_ptr<Op>> waiting = std::move(node.waiting);
  node.waiting.clear();
  for (auto& op : waiting) {
    Finish(op, base::RedisUnavailableError(absl::StrCat("redis cluster: node ", key,
                                                   " not connected within ",
                                                   absl::FormatDuration(kConnectWait))));
  }
}

void RedisClusterClient::Refresh() {
  if (stopping_) return;
  if (refreshing_) {
    refresh_again_ = true;
    return;
  }
  RedisClient* asked = nullptr;
  if (topology_) {
    for (const NodeAddress& master : topology_->masters()) {
      auto it = nodes_.find(master.ToString());
      if (it != nodes_.end() && it->second->ready) {
        asked = it->second->client.get();
        break;
      }
    }
  }
  for (auto it = nodes_.begin(); asked == nullptr && it != nodes_.end(); ++it) {
    if (it->second->ready) asked = it->second->client.get();
  }
  if (asked == nullptr) {
    RefreshLater();  // a node's OnNodeReady refreshes too
    return;
  }
  refreshing_ = true;
  refresh_again_ = false;
  asked->Command({"CLUSTER", "SHARDS"},
                 [this](absl::StatusOr<RedisReply> reply) { OnShards(std::move(reply)); });
}

void RedisClusterClient::RefreshLater() {
  if (stopping_ || refresh_timer_ != 0) return;
  refresh_timer_ = loop_->RunAfter(kRefreshDelay, [this] {
    refresh_timer_ = 0;
    Refresh();
  });
}

void RedisClusterClient::OnShards(absl::StatusOr<RedisReply> reply) {
  refreshing_ = false;
  if (stopping_) return;
  absl::StatusOr<ClusterTopology> topology =
      reply.ok() ? ClusterTopology::FromShards(*reply) : absl::StatusOr<ClusterTopology>(reply.status());
  if (!topology.ok()) {
    // Mid-failover a slot has no online master yet: ask again shortly.
    base::Log(base::LogLevel::kDebug, "redis cluster slot map not usable",
              {{"conn", name_}, {"error", topology.status().ToString()}});
    RefreshLater();
    return;
  }
  topology_ = *std::move(topology);
  ++refreshes_;
  for (const NodeAddress& master : topology_->masters()) NodeAt(master);
  // Commands waiting for a node the map no longer names are routed anew.
  for (auto& [key, node] : nodes_) {
    if (node->waiting.empty()) continue;
    bool in_map = false;
    for (const NodeAddress& master : topology_->masters()) in_map |= master.ToString() == key;
    if (in_map) continue;
    loop_->Cancel(node->wait_timer);
    node->wait_timer = 0;
    std::deque<std::shared_ptr<Op>> waiting = std::move(node->waiting);
    node->waiting.clear();
    for (auto& op : waiting) Send(std::move(op));
  }
  UpdateServing();
  for (const auto& listener : listeners_) listener();
  if (periodic_timer_ == 0) {
    periodic_timer_ = loop_->RunAfter(kRefreshInterval, [this] {
      periodic_timer_ = 0;
      Refresh();
    });
  }
  if (refresh_again_) Refresh();
}

void RedisClusterClient::UpdateServing() {
  bool all_ready = topology_.has_value();
  if (topology_) {
    for (const NodeAddress& master : topology_->masters()) {
      auto it = nodes_.find(master.ToString());
      all_ready &= it != nodes_.end() && it->second->ready;
    }
  }
  // A map naming a master that is not connected may be stale (a failover
  // the map does not show yet): keep asking until it settles.
  if (topology_ && !all_ready) RefreshLater();
  if (all_ready == serving_) return;
  serving_ = all_ready;
  if (serving_) {
    base::Log(base::LogLevel::kInfo, "redis cluster serving",
              {{"conn", name_}, {"masters", topology_->masters().size()}});
    if (on_connected_) on_connected_();
  } else {
    base::Log(base::LogLevel::kWarning, "redis cluster degraded: a master is not connected",
              {{"conn", name_}});
    if (on_disconnected_) on_disconnected_();
  }
}

}  // namespace jobwire::store
