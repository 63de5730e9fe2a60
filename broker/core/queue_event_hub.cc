#include "broker/core/queue_event_hub.h"

#include <utility>

#include "broker/base/logging.h"

namespace jobwire::core {

QueueEventHub::QueueEventHub(base::EventLoop* loop, const store::JobStore* store,
                             store::RedisSubscriptions* subscriptions)
    : loop_(loop), store_(store), subscriptions_(subscriptions) {}

QueueEventHub::ListenerId QueueEventHub::Listen(const std::string& partition_queue,
                                                Listener listener) {
  absl::MutexLock lock(&mu_);
  const ListenerId id = next_id_++;
  partition_of_[id] = partition_queue;
  Channel& channel = channels_[partition_queue];
  const bool first = channel.listeners.empty();
  channel.listeners[id] = std::make_shared<Listener>(std::move(listener));
  if (first) {
    // The handler runs on the loop thread, never from inside this call; its
    // first (empty) message confirms the subscription to every listener.
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
  std::vector<store::QueueEvent> events;
  if (!message.empty()) {
    absl::StatusOr<std::vector<store::QueueEvent>> decoded = store::DecodeQueueEvents(message);
    if (!decoded.ok()) {
      base::Log(base::LogLevel::kWarning, "queue event message ignored",
                {{"queue", partition_queue}, {"error", decoded.status().ToString()}});
      return;
    }
    events = *std::move(decoded);
  }
  std::vector<std::shared_ptr<Listener>> listeners;
  {
    absl::MutexLock lock(&mu_);
    auto c = channels_.find(partition_queue);
    if (c == channels_.end()) return;
    if (message.empty()) c->second.confirmed = true;
    listeners.reserve(c->second.listeners.size());
    for (const auto& [id, listener] : c->second.listeners) listeners.push_back(listener);
  }
  for (const auto& listener : listeners) (*listener)(events, message.empty());
}

}  // namespace jobwire::core
