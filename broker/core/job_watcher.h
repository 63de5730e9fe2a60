// JobWatcher: follows single jobs for WaitJob. For each queue (partition)
// with a followed job it listens to the queue's events channel
// (QueueEventHub), so that the scripts publish that queue's events
// while, and only while, some job of it is followed; on an event naming a
// followed job (or the whole queue), and whenever the subscription is
// (re)confirmed, it reads the job again and hands it to the follower. No
// timer and no polling: a job nobody changes costs nothing.
//
// Each follow gets the job as read at once, then again each time a read
// after an event finds its state or attempts changed (one read in flight
// per follow; events that arrive during a read cause one more read after
// it). A follow ends by itself with its last update: a COMPLETED or DEAD
// job, or an error. A completed job deleted on Ack (retention 0) reads as
// NOT_FOUND; a follow that saw its "completed" event gets the job as last
// read with state COMPLETED and finished_at_ms of the event instead.
//
// Thread safety: every method may be called from any thread; updates run on
// the event loop thread, one at a time, and must not block.
#ifndef JOBWIRE_BROKER_CORE_JOB_WATCHER_H_
#define JOBWIRE_BROKER_CORE_JOB_WATCHER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/store/job_store.h"
#include "broker/core/queue_event_hub.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::core {

class JobWatcher {
 public:
  using FollowId = uint64_t;
  // The job as read (its queue named as the caller named it), or the error
  // that ended the follow: NOT_FOUND (no such job, or it was deleted),
  // UNAVAILABLE (Redis cannot be reached, or Shutdown), DEADLINE_EXCEEDED
  // with reason WAIT_TIMEOUT (the follow's timeout passed), INTERNAL.
  using Update = std::function<void(absl::StatusOr<v1::Job>)>;

  // `loop`, `store` and `hub` must outlive this object. At most
  // `max_follows` follows at once.
  JobWatcher(base::EventLoop* loop, const store::JobStore* store, QueueEventHub* hub,
             int64_t max_follows);

  // Follows job `job_id` of `queue` (as a client names them; the partition
  // comes from the id) until it finishes, `timeout` passes (InfiniteDuration:
  // never) or Stop. RESOURCE_EXHAUSTED (TOO_MANY_WAITS, with RetryInfo) when
  // max_follows are open, UNAVAILABLE (BROKER_SHUTTING_DOWN) after Shutdown;
  // nothing is followed then.
  absl::StatusOr<FollowId> Follow(const std::string& queue, const std::string& job_id,
                                  absl::Duration timeout, Update update);
  // Ends a follow without a last update (no-op when it has ended): no
  // update starts after it returns. Unsubscribes from a queue nobody
  // follows any more.
  void Stop(FollowId id);
  // Ends every follow with UNAVAILABLE (BROKER_SHUTTING_DOWN) and refuses
  // new ones (the broker drains).
  void Shutdown();

  int64_t follows() const;
  // Queues subscribed for follows (for tests).
  size_t queues_followed() const;

 private:
  struct Followed {
    std::string queue;            // as the caller named it
    std::string partition_queue;  // the store name
    std::string job_id;
    std::shared_ptr<Update> update;
    bool reading = false;
    bool read_again = false;
    int64_t completed_at_ms = 0;  // its "completed" event, when seen
    std::unique_ptr<v1::Job> last;  // the last job sent
    base::EventLoop::TimerId timer = 0;  // the timeout
    int64_t timeout_ms = 0;
  };

  // Reads follow `id`'s job (or marks it to read again after the read in
  // flight).
  void Read(FollowId id) ABSL_LOCKS_EXCLUDED(mu_);
  void ReadDone(FollowId id, absl::StatusOr<v1::Job> job) ABSL_LOCKS_EXCLUDED(mu_);
  void Expire(FollowId id) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes follow `id` (its timer, its queue's subscription when it was
  // the last there); returns its update.
  std::shared_ptr<Update> EndLocked(FollowId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Events of partition `partition_queue` (none, and `confirmed`, when the
  // subscription was (re)confirmed).
  void OnEvents(const std::string& partition_queue, const std::vector<store::QueueEvent>& events,
                bool confirmed) ABSL_LOCKS_EXCLUDED(mu_);

  base::EventLoop* const loop_;
  const store::JobStore* const store_;
  QueueEventHub* const hub_;
  const int64_t max_follows_;
  mutable absl::Mutex mu_;
  FollowId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<FollowId, Followed> follows_ ABSL_GUARDED_BY(mu_);
  struct Partition {
    QueueEventHub::ListenerId listener = 0;
    // Job id -> the follows of that job.
    absl::flat_hash_map<std::string, absl::flat_hash_set<FollowId>> jobs;
  };
  // Store name of a partition -> its follows.
  absl::flat_hash_map<std::string, Partition> by_queue_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_JOB_WATCHER_H_
