// EnqueueCoalescer: turns the concurrent enqueues of one queue into as few
// enqueue.lua calls as it can, the way a Worker's AckCoalescer turns acks
// into AckBatch calls.
//
// Per queue, at most one enqueue.lua call is in flight. An enqueue that finds
// none in flight is sent at once, so an idle broker adds no wait; one that
// finds a call in flight waits for it to answer, and then everything that
// waited meanwhile goes in the next call, in arrival order, up to kMaxJobs
// jobs and kMaxBytes of payload (a single enqueue larger than that goes
// alone). Each caller gets the outcomes of its own jobs in order, or the
// call's error. Because the jobs of one call are stored in arrival order, an
// idempotency key repeated across callers resolves as it would one call after
// another: the later job is a duplicate of the earlier.
//
// One call per batch also means one PUBLISH per batch (enqueue.lua publishes
// once per call), so waiting streams wake once and claim several jobs.
//
// A call that stores a job due now first asks the hand-off source (the
// Dispatcher) for a claim to ride along it: when a stream of this broker
// waits on the queue, the same enqueue.lua call claims for it, with no
// PUBLISH round trip in between (and none at all when it takes every due
// job).
//
// Thread safety: Enqueue may be called from any thread; `done` runs on the
// Redis event loop thread.
#ifndef JOBWIRE_BROKER_CORE_ENQUEUE_COALESCER_H_
#define JOBWIRE_BROKER_CORE_ENQUEUE_COALESCER_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "broker/store/job_store.h"

namespace jobwire::core {

class EnqueueCoalescer {
 public:
  static constexpr size_t kMaxJobs = 1000;
  static constexpr size_t kMaxBytes = 8 << 20;

  // Calls `send` (on the Redis event loop thread) with the hand-off claim
  // for the next call to `queue`, whose jobs due now have the given types,
  // or with none (Dispatcher::OfferHandOff).
  using HandOffSource = std::function<void(const std::string& queue, std::vector<std::string> types,
                                           std::function<void(std::optional<store::HandOff>)> send)>;

  // `store` must outlive this object. Without `hand_off`, no call claims.
  explicit EnqueueCoalescer(const store::JobStore* store, HandOffSource hand_off = nullptr)
      : store_(store), hand_off_(std::move(hand_off)) {}

  // Stores `jobs` (at least one, all of `queue`, validated, defaults
  // applied; depends_on_batch_index are positions in `jobs`) in one call
  // (never split); `done` gets one outcome per job (see JobStore::Enqueue).
  void Enqueue(const std::string& queue, std::vector<v1::EnqueueRequest> jobs,
               store::Callback<std::vector<store::EnqueueOutcome>> done);

 private:
  struct Caller {
    std::vector<v1::EnqueueRequest> jobs;  // empty once sent
    size_t count = 0;                      // jobs.size() before sending
    size_t bytes = 0;                      // payload bytes of jobs
    store::Callback<std::vector<store::EnqueueOutcome>> done;
  };
  struct QueueState {
    bool in_flight = false;
    std::deque<Caller> waiting;
  };

  // Takes the next call's callers from `state.waiting`: at least one.
  static std::vector<Caller> TakeBatch(QueueState& state);
  // Sends one enqueue.lua call with the jobs of `callers`.
  void Send(const std::string& queue, std::vector<Caller> callers);
  // Hands the outcome of a call to its callers, after sending the next one.
  void OnAnswered(const std::string& queue, std::vector<Caller> callers,
                  absl::StatusOr<std::vector<store::EnqueueOutcome>> result);

  const store::JobStore* const store_;
  const HandOffSource hand_off_;
  absl::Mutex mu_;
  // Only queues with a call in flight have an entry.
  absl::flat_hash_map<std::string, QueueState> queues_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_ENQUEUE_COALESCER_H_
