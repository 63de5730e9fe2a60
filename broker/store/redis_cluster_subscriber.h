// RedisClusterSubscriber: the broker's wake-up channels on a Redis Cluster.
// Sharded pub/sub keeps a message on the shard of its channel's slot
// (the queue's hash tag), so each channel is subscribed (SSUBSCRIBE) on the
// master serving that slot, one subscriber connection (a RedisClient) per
// master. The slot map is the RedisClusterClient's: after each refresh a
// channel whose slot has moved (a resharding, a failover) is unsubscribed
// from the old node and subscribed on the new one; the new subscription's
// confirmation reaches the handler as an empty message, so it catches up on
// what it may have missed in between (at most kRefreshInterval of the
// cluster client after a slot moved without a MOVED to any command).
#ifndef JOBWIRE_BROKER_STORE_REDIS_CLUSTER_SUBSCRIBER_H_
#define JOBWIRE_BROKER_STORE_REDIS_CLUSTER_SUBSCRIBER_H_

#include <map>
#include <memory>
#include <string>

#include "broker/base/event_loop.h"
#include "broker/store/redis_client.h"
#include "broker/store/redis_cluster_client.h"
#include "broker/store/redis_subscriptions.h"
#include "broker/store/redis_tls_context.h"
#include "broker/store/redis_url.h"

namespace jobwire::store {

// Thread safety: as RedisSubscriptions.
class RedisClusterSubscriber : public RedisSubscriptions {
 public:
  // `cluster` (on the same `loop`) supplies the slot map and must outlive
  // this; construct before cluster->Start(). `seeds` gives the password,
  // user and TLS of every node, as for RedisClusterClient.
  RedisClusterSubscriber(base::EventLoop* loop, RedisClusterClient* cluster, RedisAddress seeds,
                         std::string name, std::shared_ptr<const RedisTlsContext> tls = nullptr);
  ~RedisClusterSubscriber() override;  // REQUIRES: the loop is stopped.
  RedisClusterSubscriber(const RedisClusterSubscriber&) = delete;
  RedisClusterSubscriber& operator=(const RedisClusterSubscriber&) = delete;

  void Subscribe(const std::string& channel, MessageHandler handler) override;
  void Unsubscribe(const std::string& channel) override;
  size_t subscription_count() const override { return channels_.size(); }

  // The node ("host:port") `channel` is subscribed on, empty when none (for
  // tests). Loop thread only.
  std::string NodeOf(const std::string& channel) const;

 private:
  struct Channel {
    MessageHandler handler;
    std::string node;  // where it is subscribed; empty before a slot map
  };

  // Subscribes `channel` on its slot's master when that is not where it is.
  void Place(const std::string& channel, Channel& c);
  void Reconcile();
  RedisClient& NodeAt(const NodeAddress& address);

  base::EventLoop* const loop_;
  RedisClusterClient* const cluster_;
  const RedisAddress seeds_;
  const std::string name_;
  std::shared_ptr<const RedisTlsContext> tls_;

  // Loop-thread state.
  std::map<std::string, Channel> channels_;
  std::map<std::string, std::unique_ptr<RedisClient>> nodes_;  // by "host:port"; never erased
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_CLUSTER_SUBSCRIBER_H_
