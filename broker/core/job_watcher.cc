#include "broker/core/job_watcher.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "broker/store/keys.h"

namespace jobwire::core {
namespace {

bool Finished(const v1::Job& job) {
  return job.state() == v1::JOB_STATE_COMPLETED || job.state() == v1::JOB_STATE_DEAD;
}

absl::string_view StateName(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_PENDING: return "pending";
    case v1::JOB_STATE_ACTIVE: return "active";
    case v1::JOB_STATE_COMPLETED: return "completed";
    case v1::JOB_STATE_DEAD: return "dead";
    default: return "unknown";
  }
}

}  // namespace

JobWatcher::JobWatcher(base::EventLoop* loop, const store::JobStore* store, QueueEventHub* hub,
                       int64_t max_follows)
    : loop_(loop), store_(store), hub_(hub), max_follows_(max_follows) {}

absl::StatusOr<JobWatcher::FollowId> JobWatcher::Follow(const std::string& queue,
                                                        const std::string& job_id,
                                                        absl::Duration timeout, Update update) {
  FollowId id;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      return base::WithReason(absl::UnavailableError("broker is shutting down"),
                              base::reason::kBrokerShuttingDown);
    }
    if (static_cast<int64_t>(follows_.size()) >= max_follows_) {
      return base::TooManyStreamsError(
          absl::StrCat("too many WaitJob streams on this broker (--max_wait_streams=",
                       max_follows_, "); retry later or on another replica"),
          base::reason::kTooManyWaits);
    }
    id = next_id_++;
    Followed& f = follows_[id];
    f.queue = queue;
    f.partition_queue = store::PartitionQueue(queue, store::PartitionOfJobId(job_id));
    f.job_id = job_id;
    f.update = std::make_shared<Update>(std::move(update));
    if (timeout != absl::InfiniteDuration()) {
      f.timeout_ms = absl::ToInt64Milliseconds(timeout);
      f.timer = loop_->RunAfter(timeout, [this, id] { Expire(id); });
    }
    Partition& partition = by_queue_[f.partition_queue];
    if (partition.jobs.empty()) {
      // The listener runs on the loop thread, never from inside this call.
      partition.listener = hub_->Listen(
          f.partition_queue,
          [this, name = f.partition_queue](const std::vector<store::QueueEvent>& events,
                                           bool confirmed) { OnEvents(name, events, confirmed); });
    }
    partition.jobs[job_id].insert(id);
  }
  // Events published before the subscription is confirmed are missed; the
  // confirmation reads every follow of the queue again.
  Read(id);
  return id;
}

std::shared_ptr<JobWatcher::Update> JobWatcher::EndLocked(FollowId id) {
  auto it = follows_.find(id);
  if (it == follows_.end()) return nullptr;
  loop_->Cancel(it->second.timer);
  auto q = by_queue_.find(it->second.partition_queue);
  if (q != by_queue_.end()) {
    auto j = q->second.jobs.find(it->second.job_id);
    if (j != q->second.jobs.end()) {
      j->second.erase(id);
      if (j->second.empty()) q->second.jobs.erase(j);
    }
    if (q->second.jobs.empty()) {
      hub_->Unlisten(q->second.listener);
      by_queue_.erase(q);
    }
  }
  std::shared_ptr<Update> update = std::move(it->second.update);
  follows_.erase(it);
  return update;
}

void JobWatcher::Stop(FollowId id) {
  absl::MutexLock lock(&mu_);
  EndLocked(id);
}

void JobWatcher::Shutdown() {
  std::vector<std::shared_ptr<Update>> ended;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    std::vector<FollowId> ids;
    for (const auto& [id, f] : follows_) ids.push_back(id);
    for (FollowId id : ids) ended.push_back(EndLocked(id));
  }
  for (auto& update : ended) {
    (*update)(base::WithReason(absl::UnavailableError("broker is shutting down; wait again"),
                               base::reason::kBrokerShuttingDown));
  }
}

int64_t JobWatcher::follows() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(follows_.size());
}

size_t JobWatcher::queues_followed() const {
  absl::MutexLock lock(&mu_);
  return by_queue_.size();
}

void JobWatcher::Read(FollowId id) {
  std::string partition_queue, job_id;
  {
    absl::MutexLock lock(&mu_);
    auto it = follows_.find(id);
    if (it == follows_.end()) return;
    Followed& f = it->second;
    if (f.reading) {
      f.read_again = true;
      return;
    }
    f.reading = true;
    partition_queue = f.partition_queue;
    job_id = f.job_id;
  }
  store_->GetJob(partition_queue, job_id,
                 [this, id](absl::StatusOr<v1::Job> job) { ReadDone(id, std::move(job)); });
}

void JobWatcher::ReadDone(FollowId id, absl::StatusOr<v1::Job> job) {
  std::shared_ptr<Update> update;
  bool again = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = follows_.find(id);
    if (it == follows_.end()) return;
    Followed& f = it->second;
    f.reading = false;
    again = std::exchange(f.read_again, false);
    if (!job.ok() && absl::IsNotFound(job.status()) && f.completed_at_ms > 0 &&
        f.last != nullptr) {
      // Deleted on Ack (completed retention 0): completed, result not kept.
      v1::Job completed = *f.last;
      completed.set_state(v1::JOB_STATE_COMPLETED);
      completed.set_finished_at_ms(f.completed_at_ms);
      completed.set_lease_expires_at_ms(0);
      completed.clear_result();
      job = std::move(completed);
    }
    if (job.ok()) {
      job->set_queue(f.queue);
      const bool changed = f.last == nullptr || f.last->state() != job->state() ||
                           f.last->attempts() != job->attempts() ||
                           f.last->has_progress_percent() != job->has_progress_percent() ||
                           f.last->progress_percent() != job->progress_percent() ||
                           f.last->progress_data() != job->progress_data() ||
                           f.last->cancel_requested_at_ms() != job->cancel_requested_at_ms();
      if (!changed) {
        update = nullptr;
      } else if (Finished(*job)) {
        update = EndLocked(id);
        again = false;
      } else {
        f.last = std::make_unique<v1::Job>(*job);
        update = f.update;
      }
    } else {
      update = EndLocked(id);
      again = false;
    }
  }
  if (update != nullptr) (*update)(std::move(job));
  if (again) Read(id);
}

void JobWatcher::Expire(FollowId id) {
  std::shared_ptr<Update> update;
  std::string message;
  {
    absl::MutexLock lock(&mu_);
    auto it = follows_.find(id);
    if (it == follows_.end()) return;
    const Followed& f = it->second;
    message = absl::StrCat(store::JobRef(f.partition_queue, f.job_id), " did not finish within ",
                           "timeout_ms=", f.timeout_ms, " (it is ",
                           f.last != nullptr ? StateName(f.last->state()) : "unknown", ")");
    it->second.timer = 0;  // fired
    update = EndLocked(id);
  }
  (*update)(base::WithReason(absl::DeadlineExceededError(message), base::reason::kWaitTimeout));
}

void JobWatcher::OnEvents(const std::string& partition_queue,
                          const std::vector<store::QueueEvent>& events, bool confirmed) {
  std::vector<FollowId> to_read;
  {
    absl::MutexLock lock(&mu_);
    auto q = by_queue_.find(partition_queue);
    if (q == by_queue_.end()) return;
    auto read_all = [&] {
      for (const auto& [job_id, ids] : q->second.jobs) {
        to_read.insert(to_read.end(), ids.begin(), ids.end());
      }
    };
    // (Re)subscribed: whatever happened before is unknown.
    if (confirmed) read_all();
    for (const store::QueueEvent& e : events) {
      if (e.job_id.empty()) {
        read_all();  // the whole queue (delete_queue.lua)
        continue;
      }
      auto j = q->second.jobs.find(e.job_id);
      if (j == q->second.jobs.end()) continue;
      for (FollowId id : j->second) {
        if (e.kind == "completed") follows_[id].completed_at_ms = e.at_ms;
        to_read.push_back(id);
      }
    }
  }
  // A follow named by several events of one message is read once more at
  // most (Read merges the requests that arrive while a read is in flight).
  for (FollowId id : to_read) Read(id);
}

}  // namespace jobwire::core
