#include "broker/core/queue_event_hub.h"

#include <utility>

#include "broker/base/logging.h"

namespace jobwire::core {

QueueEventHub::QueueEventHub(base::EventLoop* loop, const store::JobStore* store,
                             store::RedisSubscriptions* subscriptions, absl::Duration renewal)
    : loop_(loop), store_(store), subscriptions_(subscriptions), renewal_(renewal) {}

QueueEventHub::~QueueEventHub() {
  absl::MutexLock lock(&mu_);
  loop_->Cancel(renewal_timer_);
}

QueueEventHub::ListenerId QueueEventHub::Listen(const std::string& partition_queue,
                                                Listener listener) {
  absl::MutexLock lock(&mu_);
  const ListenerId id = next_id_++;
  partition_of_[id] = partition_queue;
  Channel& channel = channels_[partition_queue];
  const bool first = channel.listeners.empty();
  channel.listeners[id] = std::make_shared<Listener>(std::move(listener));
  if (first) {
    if (renewal_timer_ == 0) renewal_timer_ = loop_->RunAfter(renewal_, [this] { Renew(); });
    // The handler runs on the loop thread, never from inside this call; its
    // first (empty) message makes the subscription live (OnMessage).
    subscriptions_->Subscribe(store_->EventsChannel(partition_queue),
                              [this, partition_queue](const std::string&, const std::string& m) {
                                OnMessage(partition_queue, m);
                              });
  } else if (channel.confirmed) {
    loop_->Post([this, partition_queue, id] { Confirm(partition_queue, id); });
  }
  return id;
}

void QueueEventHub::Unlisten(ListenerId id) {
  absl::MutexLock lock(&mu_);
  auto p = partition_of_.find(id);
  if (p == partition_of_.end()) return;
  auto c = channels_.find(p->second);
  if (c != channels_.end()) {
    c->second.listeners.erase(id);
    if (c->second.listeners.empty()) {
      subscriptions_->Unsubscribe(store_->EventsChannel(c->first));
      channels_.erase(c);
    }
  }
  partition_of_.erase(p);
}

size_t QueueEventHub::partitions_subscribed() const {
  absl::MutexLock lock(&mu_);
  return channels_.size();
}

void QueueEventHub::Confirm(const std::string& partition_queue, ListenerId id) {
  std::shared_ptr<Listener> listener;
  {
    absl::MutexLock lock(&mu_);
    auto c = channels_.find(partition_queue);
    if (c == channels_.end()) return;
    auto l = c->second.listeners.find(id);
    if (l == c->second.listeners.end()) return;
    listener = l->second;
  }
  (*listener)({}, /*confirmed=*/true);
}

void QueueEventHub::OnMessage(const std::string& partition_queue, const std::string& message) {
  if (message.empty()) {
    // (Re)subscribed: confirmed to the listeners once the mark is set.
    {
      absl::MutexLock lock(&mu_);
      auto c = channels_.find(partition_queue);
      if (c == channels_.end()) return;
      c->second.live = true;
      c->second.confirmed = false;
    }
    Mark(partition_queue, /*confirm=*/true);
    return;
  }
  absl::StatusOr<std::vector<store::QueueEvent>> events = store::DecodeQueueEvents(message);
  if (!events.ok()) {
    base::Log(base::LogLevel::kWarning, "queue event message ignored",
              {{"queue", partition_queue}, {"error", events.status().ToString()}});
    return;
  }
  std::vector<std::shared_ptr<Listener>> listeners;
  {
    absl::MutexLock lock(&mu_);
    auto c = channels_.find(partition_queue);
    if (c == channels_.end()) return;
    listeners.reserve(c->second.listeners.size());
    for (const auto& [id, listener] : c->second.listeners) listeners.push_back(listener);
  }
  for (const auto& listener : listeners) (*listener)(*events, /*confirmed=*/false);
}

void QueueEventHub::Mark(const std::string& partition_queue, bool confirm) {
  store_->ListenEvents(
      partition_queue, absl::ToInt64Milliseconds(3 * renewal_),
      [this, partition_queue, confirm](absl::StatusOr<bool> lapsed) {
        if (!lapsed.ok()) {
          // The next renewal tries again (and confirms what this did not).
          base::Log(base::LogLevel::kWarning, "queue events listen mark not set",
                    {{"queue", partition_queue}, {"error", lapsed.status().ToString()}});
          return;
        }
        if (!confirm && !*lapsed) return;
        loop_->RunInLoop([this, partition_queue, again = *lapsed] {
          ConfirmAll(partition_queue, again);
        });
      });
}

void QueueEventHub::ConfirmAll(const std::string& partition_queue, bool again) {
  std::vector<std::shared_ptr<Listener>> listeners;
  {
    absl::MutexLock lock(&mu_);
    auto c = channels_.find(partition_queue);
    if (c == channels_.end() || !c->second.live) return;
    if (c->second.confirmed && !again) return;
    c->second.confirmed = true;
    listeners.reserve(c->second.listeners.size());
    for (const auto& [id, listener] : c->second.listeners) listeners.push_back(listener);
  }
  for (const auto& listener : listeners) (*listener)({}, /*confirmed=*/true);
}

void QueueEventHub::Renew() {
  std::vector<std::pair<std::string, bool>> marks;  // partition, confirmed
  {
    absl::MutexLock lock(&mu_);
    renewal_timer_ = 0;
    if (channels_.empty()) return;
    renewal_timer_ = loop_->RunAfter(renewal_, [this] { Renew(); });
    for (const auto& [partition, channel] : channels_) {
      if (channel.live) marks.emplace_back(partition, channel.confirmed);
    }
  }
  for (const auto& [partition, confirmed] : marks) Mark(partition, /*confirm=*/!confirmed);
}

}  // namespace jobwire::core
