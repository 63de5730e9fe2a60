#include "broker/server/redis_connections.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/base/logging.h"

namespace jobwire::server {

absl::StatusOr<std::unique_ptr<RedisConnections>> RedisConnections::Create(
    base::EventLoop* loop, const std::string& mode, const std::string& sentinel_master,
    const std::string& sentinel_password, const store::RedisAddress& address,
    std::shared_ptr<const store::RedisTlsContext> tls) {
  std::unique_ptr<RedisConnections> c(new RedisConnections());
  if (mode == "cluster") {
    if (address.db != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--redis_mode=cluster: a Redis Cluster has database 0 only, the URL names ", address.db));
    }
    c->cluster_ = std::make_unique<store::RedisClusterClient>(loop, address, "commands", tls);
    c->cluster_subscriber_ =
        std::make_unique<store::RedisClusterSubscriber>(loop, c->cluster_.get(), address, "pubsub", tls);
    c->commands_ = c->cluster_.get();
    c->subscriptions_ = c->cluster_subscriber_.get();
    const size_t seeds = address.seeds.empty() ? 1 : address.seeds.size();
    base::Log(base::LogLevel::kInfo, "redis cluster mode", {{"seeds", seeds}});
    return c;
  }
  if (mode == "standalone") {
    if (absl::Status single = store::RequireSingleHost(address); !single.ok()) return single;
  } else if (mode != "sentinel") {
    return absl::InvalidArgumentError(absl::StrCat("unknown --redis_mode \"", mode, "\""));
  }
  c->command_client_ = std::make_unique<store::RedisClient>(loop, address, "commands", tls);
  c->subscriber_client_ = std::make_unique<store::RedisClient>(loop, address, "pubsub", tls);
  c->commands_ = c->command_client_.get();
  c->subscriptions_ = c->subscriber_client_.get();
  if (mode == "sentinel") {
    store::SentinelOptions o;
    o.sentinels = address.seeds;
    if (o.sentinels.empty()) o.sentinels.push_back({address.host, address.port});
    o.master_name = sentinel_master;
    o.password = sentinel_password;
    o.tls = address.tls;
    o.tls_context = tls;
    base::Log(base::LogLevel::kInfo, "redis sentinel mode",
              {{"sentinels", o.sentinels.size()}, {"master_name", o.master_name}});
    c->sentinel_ = std::make_unique<store::SentinelMasterSource>(loop, std::move(o));
    c->command_client_->SetAddressSource(c->sentinel_->AsAddressSource());
    c->subscriber_client_->SetAddressSource(c->sentinel_->AsAddressSource());
    // Every data connection follows the new master.
    c->sentinel_->SetOnSwitch([raw = c.get()](const store::RedisEndpoint&) {
      raw->command_client_->Reconnect();
      raw->subscriber_client_->Reconnect();
    });
  }
  return c;
}

// Members go in reverse order: the subscribers before the clients whose
// slot map (cluster) or sentinel answers they use.
RedisConnections::~RedisConnections() = default;

void RedisConnections::SetOnConnected(std::function<void()> fn) {
  if (cluster_ != nullptr) {
    cluster_->SetOnConnected(std::move(fn));
  } else {
    command_client_->SetOnConnected(std::move(fn));
  }
}

void RedisConnections::SetOnDisconnected(std::function<void()> fn) {
  if (cluster_ != nullptr) {
    cluster_->SetOnDisconnected(std::move(fn));
  } else {
    command_client_->SetOnDisconnected(std::move(fn));
  }
}

void RedisConnections::Start() {
  if (sentinel_ != nullptr) sentinel_->Start();
  if (cluster_ != nullptr) {
    cluster_->Start();
    return;
  }
  command_client_->Start();
  subscriber_client_->Start();
}

}  // namespace jobwire::server
