// EventFeed: the queue event streams of Subscribe. Each subscription
// listens (QueueEventHub) to every partition of the queues it names,
// including partitions added while it is open (QueuePartitions growth), and
// hands its sink one v1::SubscribeResponse per events message that has
// events of the kinds it wants, in the order the hub delivered them:
// - first, once every partition's subscription is confirmed, a message with
//   `subscribed` set and no events (events of partitions confirmed earlier
//   wait behind it);
// - after a partition's subscription is confirmed again (Redis reconnect or
//   failover), a message with `events_missed` set.
// With include_details, each COMPLETED, RETRY and DEAD event waits for one
// read of its job (result / error as read then), and later messages of the
// subscription wait behind it. Nothing here bounds what the sink buffers:
// the caller cuts off a slow reader.
//
// A subscription ends only by Unsubscribe, or with an error handed to its
// sink (nothing after it): UNAVAILABLE when the queues' partition counts
// cannot be read at the start, or at Shutdown (BROKER_SHUTTING_DOWN).
//
// Thread safety: every method may be called from any thread. Sinks run on
// the Redis loop thread (or, for an error at the start, the caller's), one
// at a time per subscription, never under this object's lock, and must not
// block.
#ifndef JOBWIRE_BROKER_CORE_EVENT_FEED_H_
#define JOBWIRE_BROKER_CORE_EVENT_FEED_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "broker/core/queue_event_hub.h"
#include "broker/core/queue_partitions.h"
#include "broker/store/job_store.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::core {

class EventFeed {
 public:
  using SubscriptionId = uint64_t;
  using Sink = std::function<void(absl::StatusOr<v1::SubscribeResponse>)>;

  // Everything must outlive this object. At most `max_subscriptions` at once.
  EventFeed(QueueEventHub* hub, QueuePartitions* partitions, const store::JobStore* store,
            int64_t max_subscriptions);

  // Starts a subscription for a validated `request` (queue names valid, no
  // repeats; kinds known). RESOURCE_EXHAUSTED (TOO_MANY_SUBSCRIPTIONS, with
  // RetryInfo) when max_subscriptions are open; UNAVAILABLE
  // (BROKER_SHUTTING_DOWN) after Shutdown.
  absl::StatusOr<SubscriptionId> Subscribe(const v1::SubscribeRequest& request, Sink sink);
  // Ends a subscription without a last message: no sink call starts after
  // it returns except one already running. No-op once ended.
  void Unsubscribe(SubscriptionId id);
  // Ends every subscription with UNAVAILABLE (BROKER_SHUTTING_DOWN) and
  // refuses new ones.
  void Shutdown();

  int64_t subscriptions() const;

 private:
  // A message being prepared: sent once no read of it is pending.
  struct Outgoing {
    v1::SubscribeResponse message;
    int reads_left = 0;
  };
  struct Subscription {
    absl::flat_hash_set<std::string> queues;  // as the client named them
    absl::flat_hash_set<int> kinds;           // empty: all
    bool details = false;
    std::shared_ptr<Sink> sink;
    bool started = false;     // partitions listened to
    bool subscribed = false;  // the first message is queued
    struct Partition {
      std::string queue;  // as the client named it
      QueueEventHub::ListenerId listener = 0;
      bool confirmed = false;  // its subscription was live once
    };
    // Partition store name -> its state.
    absl::flat_hash_map<std::string, Partition> partitions;
    int unconfirmed = 0;  // partitions never confirmed, before `subscribed`
    std::deque<Outgoing> outgoing;
    uint64_t first_seq = 1;  // sequence number of outgoing.front()
  };
  using Delivery = std::pair<std::shared_ptr<Sink>, absl::StatusOr<v1::SubscribeResponse>>;

  void Start(SubscriptionId id, const std::vector<std::string>& queues,
             absl::StatusOr<std::vector<int>> counts) ABSL_LOCKS_EXCLUDED(mu_);
  // Listens to partitions [from, to) of `queue` for subscription `s`.
  void ListenLocked(SubscriptionId id, Subscription& s, const std::string& queue, int from, int to)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnEvents(SubscriptionId id, const std::string& partition_queue,
                const std::vector<store::QueueEvent>& events, bool confirmed)
      ABSL_LOCKS_EXCLUDED(mu_);
  void OnDetails(SubscriptionId id, uint64_t seq, int index, absl::StatusOr<v1::Job> job)
      ABSL_LOCKS_EXCLUDED(mu_);
  void OnGrown(const std::string& queue, int count) ABSL_LOCKS_EXCLUDED(mu_);
  // Moves the ready messages at the front of `s.outgoing` to `out`.
  static void TakeReady(Subscription& s, std::vector<Delivery>& out);
  // Removes subscription `id`; returns its sink (nullptr when gone).
  std::shared_ptr<Sink> EndLocked(SubscriptionId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Deliver(std::vector<Delivery> deliveries);

  QueueEventHub* const hub_;
  QueuePartitions* const partitions_;
  const store::JobStore* const store_;
  const int64_t max_subscriptions_;
  mutable absl::Mutex mu_;
  SubscriptionId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<SubscriptionId, Subscription> subs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_EVENT_FEED_H_
