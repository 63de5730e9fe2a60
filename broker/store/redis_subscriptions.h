// RedisSubscriptions: the broker's wake-up channels (sharded pub/sub,
// SSUBSCRIBE) on one Redis server (RedisClient) or on a Redis Cluster
// (RedisClusterSubscriber, which subscribes on each channel's shard). The
// Dispatcher depends on this interface only.
#ifndef JOBWIRE_BROKER_STORE_REDIS_SUBSCRIPTIONS_H_
#define JOBWIRE_BROKER_STORE_REDIS_SUBSCRIPTIONS_H_

#include <cstddef>
#include <functional>
#include <string>

namespace jobwire::store {

// Thread safety: Subscribe and Unsubscribe may be called from any thread;
// handlers run on the implementation's loop thread and must not block.
class RedisSubscriptions {
 public:
  // Called with each message; with an empty message whenever the
  // subscription is (re)confirmed, after which anything published before
  // may have been missed: the handler should catch up.
  using MessageHandler = std::function<void(const std::string& channel, const std::string& message)>;

  virtual ~RedisSubscriptions() = default;

  // Subscribes to `channel` now and after every reconnect (see
  // RedisClient::Subscribe for a channel subscribed twice).
  virtual void Subscribe(const std::string& channel, MessageHandler handler) = 0;
  // Ends the subscription (no-op when there is none); the handler may still
  // see messages published before the server processed it.
  virtual void Unsubscribe(const std::string& channel) = 0;
  // Channels subscribed or being unsubscribed (for tests). Loop thread only.
  virtual size_t subscription_count() const = 0;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_REDIS_SUBSCRIPTIONS_H_
