// QueueEventHub: one subscription per queue partition to its events channel
// (store/queue_events.h), shared by everything in the broker that listens
// there (JobWatcher for WaitJob, EventFeed for Subscribe). The channel is
// subscribed while at least one listener listens; each message is decoded
// once and handed to every listener. The scripts publish a partition's
// events only while its listen mark is in the future
// (JobStore::ListenEvents): the hub sets it once the subscription is live
// and renews it every `renewal` for a lease of three renewals, so one
// renewal lost to a slow or failing Redis costs nothing.
//
// A listener is called with the events of each message, in the order Redis
// delivered them, and with `confirmed` set (and no events) when the
// subscription is confirmed: first when it becomes live and the mark is
// set (for a listener that joins a live subscription: once, soon after
// Listen), then after each re-subscription (a reconnect, a failover) and
// after a renewal that found the mark lapsed, after which anything
// published meanwhile may have been missed (the listener catches up).
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
#include "absl/time/time.h"
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
                store::RedisSubscriptions* subscriptions,
                absl::Duration renewal = absl::Seconds(10));
  // Cancels the renewal timer. REQUIRES: the loop has stopped or runs no
  // callback of this hub's (store calls in flight capture it).
  ~QueueEventHub();

  // Listens to the events of partition `partition_queue` (a store name:
  // store::PartitionQueue) until Unlisten.
  ListenerId Listen(const std::string& partition_queue, Listener listener);
  // No-op for an id not listening. Unsubscribes a channel nobody listens to.
  void Unlisten(ListenerId id);

  // Partitions subscribed (for tests).
  size_t partitions_subscribed() const;

 private:
  struct Channel {
    // Redis confirmed the subscription.
    bool live = false;
    // The listen mark was set since: the listeners were confirmed.
    bool confirmed = false;
    absl::flat_hash_map<ListenerId, std::shared_ptr<Listener>> listeners;
  };

  void OnMessage(const std::string& partition_queue, const std::string& message)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `id`'s listener with confirmed = true if it still listens.
  void Confirm(const std::string& partition_queue, ListenerId id) ABSL_LOCKS_EXCLUDED(mu_);
  // Sets `partition_queue`'s listen mark; then confirms every listener of
  // its live subscription: when the mark had lapsed (again, if they were
  // confirmed already), or else when `confirm` and they were not.
  void Mark(const std::string& partition_queue, bool confirm);
  void ConfirmAll(const std::string& partition_queue, bool again) ABSL_LOCKS_EXCLUDED(mu_);
  // The renewal timer's pass: marks every live partition again.
  void Renew() ABSL_LOCKS_EXCLUDED(mu_);

  base::EventLoop* const loop_;
  const store::JobStore* const store_;
  store::RedisSubscriptions* const subscriptions_;
  const absl::Duration renewal_;
  mutable absl::Mutex mu_;
  // Armed while a channel is subscribed.
  base::EventLoop::TimerId renewal_timer_ ABSL_GUARDED_BY(mu_) = 0;
  ListenerId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<std::string, Channel> channels_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<ListenerId, std::string> partition_of_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_QUEUE_EVENT_HUB_H_
