#include "broker/core/event_feed.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "broker/store/keys.h"

namespace jobwire::core {
namespace {

v1::EventKind KindOf(const std::string& kind) {
  static const auto* const kinds = new absl::flat_hash_map<std::string, v1::EventKind>{
      {"enqueued", v1::EVENT_KIND_ENQUEUED},   {"active", v1::EVENT_KIND_ACTIVE},
      {"completed", v1::EVENT_KIND_COMPLETED}, {"retry", v1::EVENT_KIND_RETRY},
      {"dead", v1::EVENT_KIND_DEAD},           {"cancelled", v1::EVENT_KIND_CANCELLED},
      {"lease_expired", v1::EVENT_KIND_LEASE_EXPIRED},
      {"released", v1::EVENT_KIND_RELEASED},   {"redriven", v1::EVENT_KIND_REDRIVEN},
      {"deleted", v1::EVENT_KIND_DELETED},     {"progress", v1::EVENT_KIND_PROGRESS},
      {"cancel_requested", v1::EVENT_KIND_CANCEL_REQUESTED},
      {"timed_out", v1::EVENT_KIND_TIMED_OUT},
  };
  auto it = kinds->find(kind);
  return it == kinds->end() ? v1::EVENT_KIND_UNSPECIFIED : it->second;
}

bool HasDetails(v1::EventKind kind) {
  return kind == v1::EVENT_KIND_COMPLETED || kind == v1::EVENT_KIND_RETRY ||
         kind == v1::EVENT_KIND_DEAD || kind == v1::EVENT_KIND_PROGRESS;
}

}  // namespace

EventFeed::EventFeed(QueueEventHub* hub, QueuePartitions* partitions,
                     const store::JobStore* store, int64_t max_subscriptions)
    : hub_(hub), partitions_(partitions), store_(store), max_subscriptions_(max_subscriptions) {
  partitions_->AddOnGrown([this](const std::string& queue, int count) { OnGrown(queue, count); });
}

absl::StatusOr<EventFeed::SubscriptionId> EventFeed::Subscribe(const v1::SubscribeRequest& request,
                                                               Sink sink) {
  SubscriptionId id;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      return base::WithReason(absl::UnavailableError("broker is shutting down"),
                              base::reason::kBrokerShuttingDown);
    }
    if (static_cast<int64_t>(subs_.size()) >= max_subscriptions_) {
      return base::TooManyStreamsError(
          absl::StrCat("too many Subscribe streams on this broker (--max_subscriptions=",
                       max_subscriptions_, "); retry later or on another replica"),
          base::reason::kTooManySubscriptions);
    }
    id = next_id_++;
    Subscription& s = subs_[id];
    s.queues.insert(request.queues().begin(), request.queues().end());
    s.kinds.insert(request.kinds().begin(), request.kinds().end());
    s.details = request.include_details();
    s.sink = std::make_shared<Sink>(std::move(sink));
  }
  std::vector<std::string> queues(request.queues().begin(), request.queues().end());
  partitions_->LookupAll(queues, [this, id, queues](absl::StatusOr<std::vector<int>> counts) {
    Start(id, queues, std::move(counts));
  });
  return id;
}

void EventFeed::Start(SubscriptionId id, const std::vector<std::string>& queues,
                      absl::StatusOr<std::vector<int>> counts) {
  std::shared_ptr<Sink> failed;
  {
    absl::MutexLock lock(&mu_);
    auto it = subs_.find(id);
    if (it == subs_.end()) return;
    if (!counts.ok()) {
      failed = EndLocked(id);
    } else {
      Subscription& s = it->second;
      for (size_t i = 0; i < queues.size(); ++i) ListenLocked(id, s, queues[i], 0, (*counts)[i]);
      s.started = true;
    }
  }
  if (failed != nullptr) (*failed)(counts.status());
}

void EventFeed::ListenLocked(SubscriptionId id, Subscription& s, const std::string& queue,
                             int from, int to) {
  for (int p = from; p < to; ++p) {
    std::string partition = store::PartitionQueue(queue, p);
    if (s.partitions.contains(partition)) continue;
    // Confirmation comes later on the loop thread, never inside Listen.
    QueueEventHub::ListenerId listener = hub_->Listen(
        partition, [this, id, partition](const std::vector<store::QueueEvent>& events,
                                         bool confirmed) {
          OnEvents(id, partition, events, confirmed);
        });
    if (!s.subscribed) ++s.unconfirmed;
    s.partitions.emplace(std::move(partition), Subscription::Partition{queue, listener, false});
  }
}

void EventFeed::OnGrown(const std::string& queue, int count) {
  absl::MutexLock lock(&mu_);
  for (auto& [id, s] : subs_) {
    if (s.started && s.queues.contains(queue)) ListenLocked(id, s, queue, 0, count);
  }
}

void EventFeed::OnEvents(SubscriptionId id, const std::string& partition_queue,
                         const std::vector<store::QueueEvent>& events, bool confirmed) {
  std::vector<Delivery> deliveries;
  std::vector<std::pair<uint64_t, std::pair<int, std::string>>> reads;  // seq, (index, job id)
  {
    absl::MutexLock lock(&mu_);
    auto it = subs_.find(id);
    if (it == subs_.end()) return;
    Subscription& s = it->second;
    auto p = s.partitions.find(partition_queue);
    if (p == s.partitions.end()) return;
    Subscription::Partition& partition = p->second;
    if (confirmed && !partition.confirmed) {
      // Live now. (A partition added after the first message is followed
      // from here on, like the others from the first message.)
      partition.confirmed = true;
      if (!s.subscribed && --s.unconfirmed == 0) {
        s.subscribed = true;
        Outgoing first;
        first.message.set_subscribed(true);
        s.outgoing.push_front(std::move(first));
        --s.first_seq;
      }
    } else if (confirmed && s.subscribed) {
      // Re-subscribed after losing the subscription: a gap.
      Outgoing missed;
      missed.message.set_events_missed(true);
      s.outgoing.push_back(std::move(missed));
    }
    Outgoing out;
    const uint64_t seq = s.first_seq + s.outgoing.size();
    for (const store::QueueEvent& e : events) {
      const v1::EventKind kind = KindOf(e.kind);
      if (kind == v1::EVENT_KIND_UNSPECIFIED) continue;  // a kind newer than this broker
      if (!s.kinds.empty() && !s.kinds.contains(kind)) continue;
      v1::QueueEvent* event = out.message.add_events();
      event->set_kind(kind);
      event->set_queue(partition.queue);
      event->set_job_id(e.job_id);
      event->set_type(e.type);
      event->set_attempts(e.attempts);
      event->set_at_ms(e.at_ms);
      if (e.percent >= 0) event->set_progress_percent(e.percent);
      if (s.details && HasDetails(kind) && !e.job_id.empty()) {
        ++out.reads_left;
        reads.push_back({seq, {out.message.events_size() - 1, e.job_id}});
      }
    }
    if (out.message.events_size() > 0) s.outgoing.push_back(std::move(out));
    if (s.subscribed) TakeReady(s, deliveries);
  }
  for (auto& [seq, read] : reads) {
    store_->GetJob(partition_queue, read.second,
                   [this, id, seq = seq, index = read.first](absl::StatusOr<v1::Job> job) {
                     OnDetails(id, seq, index, std::move(job));
                   });
  }
  Deliver(std::move(deliveries));
}

void EventFeed::OnDetails(SubscriptionId id, uint64_t seq, int index,
                          absl::StatusOr<v1::Job> job) {
  std::vector<Delivery> deliveries;
  {
    absl::MutexLock lock(&mu_);
    auto it = subs_.find(id);
    if (it == subs_.end()) return;
    Subscription& s = it->second;
    if (seq < s.first_seq || seq - s.first_seq >= s.outgoing.size()) return;
    Outgoing& out = s.outgoing[seq - s.first_seq];
    // A job gone by now (deleted on Ack, or since) has no details to give.
    if (job.ok()) {
      v1::QueueEvent* event = out.message.mutable_events(index);
      if (event->kind() == v1::EVENT_KIND_COMPLETED) {
        event->set_result(job->result());
      } else if (event->kind() == v1::EVENT_KIND_PROGRESS) {
        event->set_progress_data(job->progress_data());
      } else {
        event->set_error(job->error());
      }
    }
    --out.reads_left;
    if (s.subscribed) TakeReady(s, deliveries);
  }
  Deliver(std::move(deliveries));
}

void EventFeed::TakeReady(Subscription& s, std::vector<Delivery>& out) {
  while (!s.outgoing.empty() && s.outgoing.front().reads_left == 0) {
    out.emplace_back(s.sink, std::move(s.outgoing.front().message));
    s.outgoing.pop_front();
    ++s.first_seq;
  }
}

void EventFeed::Deliver(std::vector<Delivery> deliveries) {
  for (auto& [sink, message] : deliveries) (*sink)(std::move(message));
}

std::shared_ptr<EventFeed::Sink> EventFeed::EndLocked(SubscriptionId id) {
  auto it = subs_.find(id);
  if (it == subs_.end()) return nullptr;
  for (const auto& [name, partition] : it->second.partitions) hub_->Unlisten(partition.listener);
  std::shared_ptr<Sink> sink = std::move(it->second.sink);
  subs_.erase(it);
  return sink;
}

void EventFeed::Unsubscribe(SubscriptionId id) {
  absl::MutexLock lock(&mu_);
  EndLocked(id);
}

void EventFeed::Shutdown() {
  std::vector<std::shared_ptr<Sink>> ended;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    std::vector<SubscriptionId> ids;
    for (const auto& [id, s] : subs_) ids.push_back(id);
    for (SubscriptionId id : ids) ended.push_back(EndLocked(id));
  }
  for (auto& sink : ended) {
    (*sink)(base::WithReason(absl::UnavailableError("broker is shutting down; subscribe again"),
                             base::reason::kBrokerShuttingDown));
  }
}

int64_t EventFeed::subscriptions() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(subs_.size());
}

}  // namespace jobwire::core
