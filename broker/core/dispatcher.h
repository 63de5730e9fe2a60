// Dispatcher: pushes due jobs to open Claim streams, never polling Redis.
//
// A stream with free slots claims from its queues in order (claim.lua, up to
// its free slots at once); a stream with weights (ClaimSpec::weights)
// claims from each queue up to its share of the free slots (FairShare), and
// fills again while slots stay free and a queue it skipped may have jobs. When every queue comes back short it waits on
// each of its queues. A waiting stream is woken, one per event, when:
//   - a job of the queue becomes due now (the queue's notify channel, which
//     enqueue.lua, fail.lua and reap.lua publish to; every broker replica
//     subscribes to the queues its streams read, and unsubscribes and drops
//     a queue's state when its last stream closes);
//   - the queue's timer fires: a timer per queue is armed for the earliest
//     scheduled job that a claim or a notification told about, and for 1 s
//     after a claim refused because Redis is over its maxmemory
//     (RESOURCE_EXHAUSTED: claim.lua is not allow-oom; docs/guarantees.md);
//   - Redis reconnects (every waiting stream).
// A claim answered UNAVAILABLE may have run with its reply lost (the
// connection dropped after the script): on reconnect its jobs are given back
// by its claim id (JobStore::ReleaseClaim) instead of waiting for their
// leases to expire.
// A stream whose claim left due jobs in the queue (it stopped at its free
// slots or the claim's byte bound), or that was woken for a queue it did
// not drain, passes the wake-up on to the next waiter of that queue.
// A stream may take only some job types (ClaimSpec::types): its claims read
// only those (claim.lua), and report the other types that have due jobs;
// a wake-up for such types goes to the first waiter that takes one of them
// (a wake-up of unknown types, such as a notification, to the first
// waiter), so that jobs no waiting stream takes wake nobody, and a wake-up
// never circles among streams that cannot use it. A
// generation counter per queue closes the race between a claim in flight and
// a notification arriving meanwhile. A slot frees when a job delivered on
// the stream is acked or failed (OnJobsSettled) or its lease runs out by the
// broker's clock (extended by OnLeaseExtended). A worker may send those
// calls to any replica (its channel balances them round_robin): the replica
// that settles or renews a lease it did not grant announces it on the
// partition's notify channel ('settled:' / 'extended:'), and the replica
// that granted it, subscribed there while its stream reads the queue, frees
// or extends the slot as if the call had come to it (a message missed
// while it was not subscribed is caught up when it subscribes again: see
// below; one lost otherwise leaves the slot taken until the lease's end); the
// stream claims again then only if it was full, since a waiting stream
// found its queues short and is woken when they are not; and then only from
// the queues it has not found drained since their last announcement (their
// generation), so a freed slot on an empty queue costs no Redis call.
//
// The notify channel also carries cancel.lua's stop requests for runs that
// Cancel asked to stop: the broker that granted the run's lease, to a stream
// still open, passes it on (JobSink::Stop, ClaimResponse.stops). Whenever
// its subscription to a queue is (re)confirmed (the first time, and after a
// reconnect) it asks Redis where the runs it holds there stand, so that a
// stop, settle or renewal announced while it was not subscribed is not lost.
//
// A partitioned queue (QueuePartitions) is read as all its partitions: the
// stream subscribes to each and claims from them in turn, starting where its
// previous claim of the queue left off (a cursor per stream and queue,
// starting at a partition that rotates per stream), so that every P claims
// of a stream visit all P partitions and none starves (docs/semantics.md,
// "Partitioned queues"). A queue whose count grows (announced on partition
// 0's channel as 'partitions:<P>', or read by QueuePartitions) gains the new
// partitions in every open stream. Delivered jobs name the queue, not the
// partition.
//
// Open admits a stream only while fewer than StreamLimits streams are open,
// in all and from the stream's peer (its client connection), so that a flood
// of Claim calls is refused (RESOURCE_EXHAUSTED) instead of exhausting
// memory; the counts drop as streams Close.
//
// Thread safety: every public method may be called from any thread; all the
// state lives on the event loop thread (the methods post to it), except the
// stream counts (StreamCounts) that Open and Close keep.
//
// The fill path (Fill .. FinishFill, the hand-off) is in dispatcher_fill.cc.
#ifndef JOBWIRE_BROKER_CORE_DISPATCHER_H_
#define JOBWIRE_BROKER_CORE_DISPATCHER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/base/event_loop.h"
#include "broker/core/metrics.h"
#include "broker/core/lease_table.h"
#include "broker/core/fair_share.h"
#include "broker/core/queue_partitions.h"
#include "broker/core/stream_counts.h"
#include "broker/core/stream_queues.h"
#include "broker/store/job_store.h"
#include "broker/store/redis_subscriptions.h"
#include "jobwire/v1/admin.pb.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::core {

// Where a stream's jobs go. Deliver is called on the loop thread and must
// not block; it returns false when the stream has ended (the Dispatcher then
// gives the jobs back with release.lua).
class JobSink {
 public:
  virtual ~JobSink() = default;
  // Hands `jobs` (claimed together, at least one) to the stream. Returns
  // false, having taken none of them, when the stream has ended.
  virtual bool Deliver(std::vector<v1::ClaimedJob> jobs) = 0;
  // Asks the client to stop the run `stop` names, delivered on this stream
  // (ClaimResponse.stops). Ignored when the stream has ended.
  virtual void Stop(v1::StopRun stop) = 0;
  // Ends the stream with `status` (called at broker shutdown).
  virtual void Close(const absl::Status& status) = 0;
};

struct ClaimSpec {
  std::vector<std::string> queues;  // served in this order (queue names)
  int max_in_flight = 1;
  int64_t lease_ms = 30000;
  std::string worker_id;
  // The job types the stream takes (ClaimRequest.types); empty: every type.
  std::vector<std::string> types;
  // ClaimRequest.weights: empty for strict order, else one per queue
  // (FairShare).
  std::vector<int> weights;
  // The client connection the stream arrived on (grpc peer(), e.g.
  // "ipv4:10.0.0.7:51234"): StreamLimits::max_streams_per_peer counts by it.
  std::string peer;
  // The stream ends with UNAVAILABLE after this long (so that workers
  // reconnect and load rebalances across replicas); jobs delivered keep
  // their leases. InfiniteDuration: never.
  absl::Duration max_age = absl::InfiniteDuration();
};

class Dispatcher {
 public:
  using SessionId = uint64_t;

  // `loop`, `store`, `subscriber` (a connection used only for pub/sub),
  // `partitions` and `metrics` must outlive the dispatcher, which takes
  // `partitions`' growth listener.
  Dispatcher(base::EventLoop* loop, const store::JobStore* store,
             store::RedisSubscriptions* subscriber, QueuePartitions* partitions, Metrics* metrics,
             StreamLimits limits = {});

  // Starts delivering to `sink` until Close. Returns the session's id, or
  // RESOURCE_EXHAUSTED naming the limit when max_streams streams are open,
  // or max_streams_per_peer from spec.peer; then nothing was opened and the
  // caller must not Close.
  absl::StatusOr<SessionId> Open(ClaimSpec spec, std::shared_ptr<JobSink> sink);
  // Stops delivering; the session's outstanding jobs keep their leases.
  // REQUIRES: `id` came from Open and was not closed yet.
  void Close(SessionId id);

  // Jobs a sink accepted (Deliver returned true) but will never send, since
  // its stream ended before they were written: each is given back to its
  // partition (release.lua: pending, due now, attempt undone) unless its lease
  // moved on meanwhile.
  void ReturnUnsent(std::vector<v1::ClaimedJob> jobs);

  // The hand-off of jobs this broker is about to store in partition `queue`
  // (store name), due now and of `types`, to a stream of its own: runs
  // `send` on the loop thread (at once when called there) with a claim for
  // the first stream waiting on that partition with a free slot that takes
  // one of `types`, to ride along the enqueue.lua call
  // (JobStore::Enqueue), or with none when no such stream waits. The stream
  // is then filling, as if woken, until the claim answers; `send` must pass
  // the claim to JobStore::Enqueue, which always answers it.
  void OfferHandOff(const std::string& queue, std::vector<std::string> types,
                    std::function<void(std::optional<store::HandOff>)> send);

  // Called on the loop thread with the expiry (broker clock) of every lease
  // this broker grants (the LeaseReaper's wake-up). Set before the first
  // Open; optional.
  void SetOnLeaseGranted(std::function<void(absl::Time)> fn) {
    on_lease_granted_ = std::move(fn);
  }
  // Called on the loop thread with the partition store name of a queue
  // followed here whose notify channel said 'outbox': a job of it ended
  // with dependents in other queues (DependencyLinks::Drain). Set before the
  // first Open; optional.
  void SetOnDependencyNews(std::function<void(const std::string&)> fn) {
    on_dependency_news_ = std::move(fn);
  }

  // Jobs of partition store name `queue` (store::PartitionQueue), each a
  // (job id, lease token), were acked (`acked`) or failed through this
  // broker: frees the slot of the session that holds each, if any, and for
  // an ack records the claim-to-ack run time. A session claims once for all
  // the slots a call frees (an AckBatch's acks are settled in one call).
  // The jobs whose lease this broker does not hold are announced on the
  // partition's notify channel (one message), for the replica that does.
  void OnJobsSettled(const std::string& queue,
                     std::vector<std::pair<std::string, std::string>> jobs, bool acked);
  // A lease was renewed through this broker: the slot stays taken for
  // `lease_ms` more. A lease this broker does not hold is announced on the
  // partition's notify channel, for the replica that does.
  void OnLeaseExtended(const std::string& queue, const std::string& job_id,
                       const std::string& token, int64_t lease_ms);
  // Redis is reachable again: the jobs of claims whose reply was lost are
  // given back (release_claim.lua), then every waiting session claims, and
  // the partition counts of the queues read are read again (a growth
  // announced meanwhile was missed).
  void OnRedisReconnected();

  // Broker shutdown: claims nothing more, ends every open stream with
  // UNAVAILABLE (clients reconnect, perhaps to another replica) and every
  // stream opened later. Delivered jobs keep their leases.
  void Shutdown();

  // Number of open sessions (for tests and metrics). Thread-safe.
  int64_t open_sessions() const { return counts_.open(); }
  // Calls `done` (on the loop thread, soon) with the open streams, oldest
  // first, as Admin ListWorkers shows them (every field but `broker`).
  void Streams(std::function<void(std::vector<v1::WorkerStream>)> done);
  // Partitions some open session reads (each with a subscription and
  // state). Loop thread only.
  size_t queues_tracked() const { return queues_.size(); }

 private:
  struct Session {
    ClaimSpec spec;
    absl::flat_hash_set<std::string> types;  // spec.types, for lookups
    // The partitions read; names() is indexed like `waiting` and
    // `start_generation`. Empty until DoResolve.
    StreamQueues queues;
    std::vector<size_t> order;  // this fill's claims: indexes into queues.names()
    // With spec.weights: the split of free slots over the queues, and this
    // fill's share of each queue (by its position in spec.queues): slots
    // left, whether a claim ran and whether one found more due jobs.
    std::optional<FairShare> fair;
    struct Share {
      int slots = 0;
      bool claimed = false;
      bool more = false;
    };
    std::vector<Share> shares;
    std::shared_ptr<JobSink> sink;
    absl::flat_hash_set<std::string> in_flight;  // lease keys held
    bool filling = false;
    bool refill = false;
    std::vector<std::list<SessionId>::iterator> waiting;  // one per queue while waiting
    std::vector<uint64_t> start_generation;
    absl::flat_hash_set<std::string> woken_for;  // queues whose wake-up this fill carries
    absl::flat_hash_set<std::string> drained;    // queues found short in this fill
    base::EventLoop::TimerId max_age_timer = 0;  // ends the stream at spec.max_age
    absl::Time opened_at;
  };
  struct QueueState {
    std::list<SessionId> waiters;
    uint64_t generation = 0;
    int streams = 0;  // open sessions reading the queue; at 0 the state goes
    base::EventLoop::TimerId timer = 0;  // wakes a waiter at timer_deadline
    absl::Time timer_deadline;
  };

  // Loop thread only.
  void DoOpen(SessionId id, ClaimSpec spec, std::shared_ptr<JobSink> sink);
  // The partition counts of the session's queues are known (or could not be
  // read: the stream ends with `error`): it reads them and claims.
  void DoResolve(SessionId id, const absl::StatusOr<std::vector<int>>& partitions);
  // One more session reads each of `partitions` (subscribing to a
  // partition's channel when it is the first).
  void Subscribe(const std::vector<std::string>& partitions);
  // A queue's partition count grew to `count`: every session reading it
  // reads the new partitions too.
  void OnPartitionsGrown(const std::string& queue, int count);
  void DoClose(SessionId id);
  void Fill(SessionId id);
  // Slots of sessions `ids` were freed. A session waiting on its queues had
  // free slots and found every queue short, so more slots change nothing (a
  // job that becomes due wakes it); only a session that is not waiting (it
  // was full, or is filling) claims again, once for all its freed slots.
  void OnSlotsFreed(const absl::flat_hash_set<SessionId>& ids);
  // Claims from the partition at position `pos` of the fill's order.
  void ClaimFrom(SessionId id, size_t pos);
  // A claim of session `id` from partition `queue` (order[pos]) answered,
  // or failed: UNAVAILABLE records it as possibly run (ReleaseLostClaims).
  void OnClaimAnswered(SessionId id, const std::string& queue, size_t pos,
                       const std::string& claim_id, absl::StatusOr<store::ClaimOutcome> outcome);
  // Loop thread: the hand-off claim for OfferHandOff, if a stream waits.
  std::optional<store::HandOff> TakeHandOff(const std::string& queue,
                                            const std::vector<std::string>& types);
  // Whether session `s` takes a job of one of `types` (empty: of types not
  // known, which any session may take).
  static bool Takes(const Session& s, const std::vector<std::string>& types);
  // Hands a claimed job that no stream will deliver back to its queue
  // (release.lua) and forgets its lease.
  void GiveBack(const std::string& queue, const std::string& job_id,
                const std::string& lease_token);
  void OnClaimed(SessionId id, const std::string& queue, size_t pos,
                 absl::StatusOr<store::ClaimOutcome> outcome);
  // Records the leases of `jobs` (claimed from `queue`, at least one) for
  // session `s` and hands them to its stream. When the stream has ended,
  // gives them back (GiveBack) and returns false.
  bool GrantAndDeliver(SessionId id, Session& s, const std::string& queue,
                       std::vector<v1::ClaimedJob> jobs);
  void FinishFill(SessionId id, Session& s);
  // With weights: this fill's shares, `free` slots split over the queues
  // of s.order (all to `only` when given: a hand-off), and their
  // settlement at the end of the fill.
  static void StartShares(Session& s, int free, std::optional<size_t> only = std::nullopt);
  static void SettleShares(Session& s);
  void Wait(SessionId id, Session& s);
  void Unwait(Session& s);
  // Announces new due jobs in `queue` (its generation) and wakes the first
  // waiter that takes one of `types` (empty: the first waiter).
  void WakeOne(const std::string& queue, const std::vector<std::string>& types = {});
  void OnNotify(const std::string& queue, const std::string& message);
  // Frees the slots of the leases of `jobs` (job id, lease token) this
  // broker holds, as OnJobsSettled says; returns the others.
  std::vector<std::pair<std::string, std::string>> FreeSettled(
      const std::string& queue, const std::vector<std::pair<std::string, std::string>>& jobs,
      bool acked);
  // Moves the deadline of the lease (job id, token) to `lease_ms` from now;
  // false when this broker does not hold it.
  bool ExtendHeld(const std::string& queue, const std::string& job_id, const std::string& token,
                  int64_t lease_ms);
  // Another replica settled or renewed leases (its 'settled:' / 'extended:'
  // message): frees or extends those this broker holds, and announces
  // nothing.
  void OnSettledElsewhere(const std::string& queue, absl::string_view message);
  // cancel.lua asked run (`job_id`, `token`) of partition `queue` to stop:
  // tells the stream holding its lease, if this broker granted it and the
  // stream is open.
  void StopRun(const std::string& queue, const std::string& job_id, const std::string& token);
  // The subscription to `queue`'s notify channel was (re)confirmed: messages
  // published before it were missed, so asks Redis where the runs this
  // broker holds in `queue` stand (held_runs.lua) and does what the missed
  // messages would have: frees the slots of runs that ended, stops those
  // Cancel asked to stop, and moves lease deadlines to the stored ones when
  // later.
  void CatchUpRuns(const std::string& queue);
  void ArmQueueTimer(const std::string& queue, int64_t delay_ms);
  // Arms the one lease timer at the earliest lease deadline, unless it is
  // armed that early already.
  void ArmExpiryTimer();
  // Frees the slots of every lease past its deadline, then re-arms.
  void OnLeasesExpired();
  // Runs release_claim.lua for every claim in lost_claims_.
  void ReleaseLostClaims();
  // Forgets a lease: its slot in the session and its deadline.
  void ReleaseLease(const std::string& key);
  Session* Find(SessionId id);

  static std::string LeaseKey(const std::string& queue, const std::string& job_id);

  base::EventLoop* const loop_;
  const store::JobStore* const store_;
  store::RedisSubscriptions* const subscriber_;
  QueuePartitions* const partitions_;
  Metrics* const metrics_;
  std::function<void(absl::Time)> on_lease_granted_;
  std::function<void(const std::string&)> on_dependency_news_;

  std::atomic<SessionId> next_id_{1};
  size_t next_cursor_ = 0;  // loop thread only: rotates each stream's first partition

  StreamCounts counts_;

  // Loop thread only.
  bool shutting_down_ = false;
  absl::flat_hash_map<SessionId, std::unique_ptr<Session>> sessions_;
  absl::flat_hash_map<std::string, QueueState> queues_;
  // By LeaseKey; one timer (expiry_timer_*) fires at the earliest
  // deadline, so the pending timers do not grow with the claim rate.
  LeaseTable leases_;
  // (queue, claim id) of claims answered UNAVAILABLE: each may have run with
  // its reply lost. Released on the next reconnect; at most one per session
  // and queue, since a session claims again only after a reconnect.
  std::vector<std::pair<std::string, std::string>> lost_claims_;
  absl::Time expiry_timer_at_ = absl::InfiniteFuture();
  base::EventLoop::TimerId expiry_timer_ = 0;
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_DISPATCHER_H_
