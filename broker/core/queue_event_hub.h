// QueueEventHub: one subscription per queue partition to its events channel
// (store/queue_events.h), shared by everything in the broker that listens
// there (JobWatcher for WaitJob, EventFeed for Subscribe). The channel is
// subscribed while at least one listener listens, and only then do the
// scripts publish the partition's events; each message is decoded once and
// handed to every listener.
//
// A listener is called with the events of each message, in the order Redis
// delivered them, and with `confirmed` set (and no events) when the
// subscription is confirmed: first when it becomes live (for a listener that
// joins a live subscription: once, soon after Listen), then after each
// re-subscription (a reconnect, a failover), after which anything published
// meanwhile may have been missed.
//
// Thread safety: Listen and Unlisten may be called from any thread;
// listeners run on the subscriptions' loop thread, one at a time, never
// inside Listen or Unlisten, and must not block. After Unlisten returns the
// listener may still run once if it was running on another thread.
#ifndef JOBWIRE_BROKER_CORE_QUEUE_EVENT_HUB_H_
#define JOBWIRE_BROKER_CORE_QUEUE_EVENT_HUB_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "broker/base/event_loop.h"
#include "broker/store/job_store.h"
#include "broker/store/queue_events.h"
#include "broker/store/redis_subscriptions.h"

namespace jobwire::core {

class QueueEventHub {
 public:
  using ListenerId = uint64_t;
  // (events of one message, confirmed). `events` is empty when confirmed.
  using Listener = std::function<void(const std::vector<store::QueueEvent>& events, bool confirmed)>;

  // `loop` (the subscriptions' loop), `store` and `subscriptions` must
  // outlive this object.
  QueueEventHub(base::EventLoop* loop, const store::JobStore* store,
                store::RedisSubscriptions* subscriptions);

  // Listens to the events of partition `partition_queue` (a store name:
  // store::PartitionQueue) until Unlisten.
  ListenerId Listen(const std::string& partition_queue, Listener listener);
  // No-op for an id not listening. Unsubscribes a channel nobody listens to.
  void Unlisten(ListenerId id);

  // Partitions subscribed (for tests).
  size_t partitions_subscribed() const;

 private:
  struct Channel {
    bool confirmed = false;
    absl::flat_hash_map<ListenerId, std::shared_ptr<Listener>> listeners;
  };

  void OnMessage(const std::string& partition_queue, const std::string& message)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `id`'s listener with confirmed = true if it still listens.
  void Confirm(const std::string& partition_queue, ListenerId id) ABSL_LOCKS_EXCLUDED(mu_);

  base::EventLoop* const loop_;
  const store::JobStore* const store_;
  store::RedisSubscriptions* const subscriptions_;
  mutable absl::Mutex mu_;
  ListenerId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<std::string, Channel> channels_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<ListenerId, std::string> partition_of_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_QUEUE_EVENT_HUB_H_
