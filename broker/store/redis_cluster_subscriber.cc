#include "broker/store/redis_cluster_subscriber.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/store/key_slot.h"

namespace jobwire::store {

RedisClusterSubscriber::RedisClusterSubscriber(base::EventLoop* loop, RedisClusterClient* cluster,
                                               RedisAddress seeds, std::string name,
                                               std::shared_ptr<const RedisTlsContext> tls)
    : loop_(loop), cluster_(cluster), seeds_(std::move(seeds)), name_(std::move(name)),
      tls_(std::move(tls)) {
  cluster_->AddTopologyListener([this] { Reconcile(); });
}

RedisClusterSubscriber::~RedisClusterSubscriber() = default;

RedisClient& RedisClusterSubscriber::NodeAt(const NodeAddress& address) {
  std::unique_ptr<RedisClient>& node = nodes_[address.ToString()];
  if (node == nullptr) {
    node = std::make_unique<RedisClient>(loop_, ClusterNodeAddress(seeds_, address),
                                         absl::StrCat(name_, "@", address.ToString()), tls_);
    node->Start();
  }
  return *node;
}

void RedisClusterSubscriber::Subscribe(const std::string& channel, MessageHandler handler) {
  loop_->RunInLoop([this, channel, handler = std::move(handler)]() mutable {
    Channel& c = channels_[channel];
    c.handler = std::move(handler);
    Place(channel, c);
  });
}

void RedisClusterSubscriber::Unsubscribe(const std::string& channel) {
  loop_->RunInLoop([this, channel] {
    auto it = channels_.find(channel);
    if (it == channels_.end()) return;
    if (!it->second.node.empty()) nodes_[it->second.node]->Unsubscribe(channel);
    channels_.erase(it);
  });
}

std::string RedisClusterSubscriber::NodeOf(const std::string& channel) const {
  auto it = channels_.find(channel);
  return it == channels_.end() ? std::string() : it->second.node;
}

void RedisClusterSubscriber::Place(const std::string& channel, Channel& c) {
  const ClusterTopology* topology = cluster_->topology();
  if (topology == nullptr) return;  // Reconcile places it once a map is known
  const NodeAddress& master = topology->MasterFor(KeySlot(channel));
  const std::string want = master.ToString();
  // Also when the node ended the subscription itself (the slot left it
  // and came back before a map showed it elsewhere).
  if (c.node == want && nodes_[want]->Subscribed(channel)) return;
  if (!c.node.empty()) nodes_[c.node]->Unsubscribe(channel);
  c.node = want;
  // Messages go to whatever handler the channel has now; none once it is
  // unsubscribed.
  NodeAt(master).Subscribe(channel, [this](const std::string& ch, const std::string& message) {
    auto it = channels_.find(ch);
    if (it != channels_.end()) it->second.handler(ch, message);
  });
}

void RedisClusterSubscriber::Reconcile() {
  for (auto& [channel, c] : channels_) Place(channel, c);
}

}  // namespace jobwire::store
