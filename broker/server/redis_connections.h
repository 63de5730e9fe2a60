// RedisConnections: the broker's two ways into Redis, built for its
// --redis_mode: one for commands and scripts (store::RedisCommands) and one
// for the wake-up subscriptions (store::RedisSubscriptions).
//   standalone  two RedisClients on the URL's one host;
//   sentinel    two RedisClients that ask a SentinelMasterSource (the URL's
//               hosts are the sentinels) where the master is, and both
//               reconnect when the sentinels announce a new one;
//   cluster     a RedisClusterClient (the URL's hosts are seeds; one
//               connection per master) and a RedisClusterSubscriber (one
//               per master, each channel on its slot's master).
#ifndef JOBWIRE_BROKER_SERVER_REDIS_CONNECTIONS_H_
#define JOBWIRE_BROKER_SERVER_REDIS_CONNECTIONS_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "broker/base/event_loop.h"
#include "broker/store/redis_client.h"
#include "broker/store/redis_cluster_client.h"
#include "broker/store/redis_cluster_subscriber.h"
#include "broker/store/redis_commands.h"
#include "broker/store/redis_subscriptions.h"
#include "broker/store/redis_tls_context.h"
#include "broker/store/redis_url.h"
#include "broker/store/sentinel_master_source.h"

namespace jobwire::server {

class RedisConnections {
 public:
  // `mode` is "standalone", "sentinel" or "cluster" (checked by LoadConfig;
  // INVALID_ARGUMENT otherwise, or for several hosts in standalone mode).
  // In sentinel mode the sentinels are asked for `sentinel_master`, with
  // AUTH `sentinel_password` when it is not empty. `loop` must outlive this.
  static absl::StatusOr<std::unique_ptr<RedisConnections>> Create(
      base::EventLoop* loop, const std::string& mode, const std::string& sentinel_master,
      const std::string& sentinel_password, const store::RedisAddress& address,
      std::shared_ptr<const store::RedisTlsContext> tls);
  ~RedisConnections();  // REQUIRES: the loop is stopped.
  RedisConnections(const RedisConnections&) = delete;
  RedisConnections& operator=(const RedisConnections&) = delete;

  store::RedisCommands* commands() const { return commands_; }
  store::RedisSubscriptions* subscriptions() const { return subscriptions_; }

  // Run on the loop thread when the commands side is connected (every
  // master in cluster mode) and when it is lost. Set before Start.
  void SetOnConnected(std::function<void()> fn);
  void SetOnDisconnected(std::function<void()> fn);

  // Starts connecting. Call once.
  void Start();

 private:
  RedisConnections() = default;

  std::unique_ptr<store::SentinelMasterSource> sentinel_;
  std::unique_ptr<store::RedisClient> command_client_;     // standalone, sentinel
  std::unique_ptr<store::RedisClient> subscriber_client_;  // standalone, sentinel
  std::unique_ptr<store::RedisClusterClient> cluster_;
  std::unique_ptr<store::RedisClusterSubscriber> cluster_subscriber_;
  store::RedisCommands* commands_ = nullptr;
  store::RedisSubscriptions* subscriptions_ = nullptr;
};

}  // namespace jobwire::server

#endif  // JOBWIRE_BROKER_SERVER_REDIS_CONNECTIONS_H_
