// JobStore: the only code that reads or changes queue state in Redis. Each
// state change is one method that runs one lua/ script (named in its
// comment); reads are plain commands. All methods are asynchronous: the
// callback runs on the Redis event loop thread and must not block.
//
// Errors common to every method: UNAVAILABLE when Redis cannot be reached
// (the call may or may not have run), INTERNAL for an unexpected reply.
#ifndef JOBWIRE_BROKER_STORE_JOB_STORE_H_
#define JOBWIRE_BROKER_STORE_JOB_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "broker/store/keys.h"
#include "broker/store/redis_commands.h"
#include "broker/store/script_runner.h"
#include "jobwire/v1/admin.pb.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::store {

template <typename T>
using Callback = std::function<void(absl::StatusOr<T>)>;


// The Redis key layout this store reads and writes (docs/redis-layout.md),
// recorded in <p>:layout.
inline constexpr int64_t kLayoutVersion = 4;

// A job deleted on Ack (completed retention 0) leaves a tombstone of its
// lease token until its lease would have ended plus this long, so that a
// worker repeating its Ack (its retries end with the lease, by its own
// estimate, a little after the Redis lease) still gets OK.
inline constexpr int64_t kAckTombstoneGraceMs = 60 * 1000;

// How long after a child with parents elsewhere is stored the broker that
// stored it has to confirm its links (docs/semantics.md, "Parents in other
// queues"); past it, the recovery pass links it again.
inline constexpr int64_t kDependencyLinkGraceMs = 10 * 1000;

struct StoreOptions {
  std::string key_prefix = "jw";
  int64_t dedup_window_ms = 24 * 3600 * 1000;
  // For a job whose Enqueue set no completed_retention_ms.
  int64_t completed_retention_ms = 24 * 3600 * 1000;
  // Bounds on each queue's dead jobs, enforced by the reaper (TrimDead); 0 =
  // none (the default: dead jobs are kept until an operator acts).
  int64_t dead_retention_ms = 0;
  int64_t dead_max_per_queue = 0;
  // A queue empty this long (no job in any state, not paused) is dropped
  // from the registry by the reaper; 0 = never.
  int64_t idle_queue_ttl_ms = 24LL * 3600 * 1000;
};

// One job's outcome: stored (job_id, duplicate when its idempotency key
// named an earlier job), or refused (status: NOT_FOUND naming a depends_on
// id that names no job; job_id empty, nothing stored).
struct EnqueueOutcome {
  std::string job_id;
  bool duplicate = false;
  absl::Status status;
};

// A claim returns at most about this many bytes of payload and error text
// (and at least one job, whatever its size): kept well below Redis' and the
// broker's comfort whatever --max_payload_bytes allows.
inline constexpr int64_t kMaxClaimBytes = 4 << 20;

struct ClaimOutcome {
  std::vector<v1::ClaimedJob> jobs;
  // True when due jobs of the claim's types are left in the queue (the claim
  // stopped at its count or byte bound).
  bool more = false;
  // A claim filtered by type: the other types that have due jobs in the
  // queue (empty for a claim of every type).
  std::vector<std::string> other_types;
  // Meaningful when !more: ms until the earliest scheduled job is due (0 =
  // now), or -1 when none is scheduled.
  int64_t next_due_in_ms = -1;
};

// A claim that rides along an enqueue.lua call: the broker's hand-off of
// the jobs it stores to a stream of its own that waits on the queue
// (Dispatcher::OfferHandOff). The fields are Claim's.
struct HandOff {
  int max_jobs = 1;
  std::vector<std::string> types;  // empty: every type
  int64_t lease_ms = 0;
  std::string worker_id;
  std::string claim_id;
  // The claim's outcome, or the call's error (UNAVAILABLE: it may have run,
  // as for Claim). Runs before the enqueue's own callback.
  Callback<ClaimOutcome> claimed;
};

struct AckOutcome {
  absl::Status status;  // OK, NOT_FOUND or FAILED_PRECONDITION
  bool repeat = false;  // OK for an ack that had been applied before
};

struct FailOutcome {
  bool dead = false;
  int64_t next_attempt_at_ms = 0;  // 0 when dead
  bool repeat = false;  // the same token's fail had been applied before
  // When this fail made the job dead: the trace id of its W3C traceparent
  // header (32 hex digits), "" when it has none (trace_id in lua/_lib.lua).
  std::string trace_id;
};

// A queue's settings (set_queue.lua; AdminService CreateQueue / UpdateQueue).
struct QueueSettings {
  int partitions = 1;
  // The timeout of a job enqueued without one; none: the broker's default.
  std::optional<int64_t> default_job_timeout_ms;
  // The queue's rate limit (burst resolved); none: unlimited.
  std::optional<v1::RateLimit> rate_limit;
  // The most active jobs the queue may have at once; none: unlimited.
  std::optional<int32_t> max_active;
  // The most active jobs per concurrency key; none: unlimited.
  std::optional<int32_t> max_active_per_key;
  // The rate limit of each concurrency key (burst resolved); none: unlimited.
  std::optional<v1::RateLimit> key_rate_limit;
};

// A rate limit as Keys::RateLimit holds it: '<count> <interval ms> <burst>'
// (lua/_lib_claim.lua, rate_read). REQUIRES: burst resolved (not 0).
std::string RateLimitValue(const v1::RateLimit& limit);
// The rate limit of a Keys::RateLimit value; nullopt when malformed.
std::optional<v1::RateLimit> ParseRateLimit(absl::string_view value);

// A job whose expired lease Reap settled.
struct ReapedJob {
  std::string id;
  bool dead = false;     // else a retry was scheduled
  std::string trace_id;  // as FailOutcome::trace_id
};

struct ReapOutcome {
  int64_t reaped = 0;
  // ms until the earliest remaining lease expires, -1 when none is active.
  int64_t next_expiry_in_ms = -1;
  // How many of the reaped jobs became dead (the others await a retry).
  int64_t dead = 0;
  // The queue has been empty for StoreOptions::idle_queue_ttl_ms.
  bool idle = false;
  // (check_idle only) The queue's dependency outbox holds news, or a child
  // it stored was not linked within kDependencyLinkGraceMs: the broker's
  // recovery pass has work (core::DependencyLinks::Sweep).
  bool dependency_work = false;
  // The reaped jobs with a whole record (those without one are logged by
  // the store and counted in `reaped` only).
  std::vector<ReapedJob> settled;
};

// Thread safety: every method may be called from any thread.
class JobStore {
 public:
  // `client` and `scripts` must outlive the store.
  JobStore(RedisCommands* client, const ScriptRunner* scripts, StoreOptions options);

  // Checks the layout marker <p>:layout (Keys::Layout; RegisterQueue sets
  // it): when it names version 3, upgrades the data to 4 (UpgradeFromLayout3:
  // adds an index, changes nothing else); when it names another version than
  // kLayoutVersion, logs an error
  // saying so (docs/redis-layout.md, "Layout versions"); when it is missing
  // while queues are registered (data of layout 1 or 2, which this store
  // does not read), sets it to 2 (NX: unless a broker of this layout just
  // registered a queue) and logs an error, so that every later connect
  // reports it too. Writes nothing else. Call after each connect.
  void CheckRedisSettings() const;

  // enqueue.lua: stores `jobs`, every one of them in `queue`, in one script
  // call; one outcome per job, in order. REQUIRES: `jobs` is not empty and
  // each job is valid with max_attempts and backoff resolved (non-zero). A
  // job without completed_retention_ms gets options().completed_retention_ms.
  // A job's depends_on_batch_index are positions in `jobs` of earlier jobs
  // (its parents, as depends_on ids are); a job whose such parent was not
  // stored is refused (BatchParentNotStored).
  // With `hand_off`, the same call then claims as Claim would (after the
  // jobs are stored, in the same script) and answers hand_off->claimed; the
  // queue's wake-up is then published only when due jobs are left.
  void Enqueue(const std::string& queue, const std::vector<v1::EnqueueRequest>& jobs,
               Callback<std::vector<EnqueueOutcome>> done,
               std::optional<HandOff> hand_off = std::nullopt) const;

  // A new claim id: random, unique per Claim call.
  static std::string NewClaimId();

  // claim.lua: leases up to `max_jobs` due jobs of `queue` of the given
  // `types` (empty: every type), at most about
  // kMaxClaimBytes of them (at least one), under `claim_id` (from
  // NewClaimId; it prefixes their lease tokens). When the answer is
  // UNAVAILABLE the call may have run and its reply been lost: ReleaseClaim
  // with the same id, once Redis is back, gives such jobs back.
  void Claim(const std::string& queue, int max_jobs, int64_t lease_ms, const std::string& worker_id,
             const std::string& claim_id, const std::vector<std::string>& types,
             Callback<ClaimOutcome> done) const;

  // release_claim.lua: gives back every job that the Claim call `claim_id`
  // leased and that is still active under that lease (pending, due now,
  // attempt undone). Returns how many; 0 when the call never ran or its
  // leases have expired.
  void ReleaseClaim(const std::string& queue, const std::string& claim_id,
                    Callback<int64_t> done) const;

  // ack.lua: completes `acks`, every one of them in `queue`, in one script
  // call. On success, one outcome per ack in order: OK (a repeat or not),
  // NOT_FOUND or FAILED_PRECONDITION (stale token, not active). A job with
  // completed retention 0 is deleted; an ack repeated with its token answers
  // OK (repeat) until its lease would have ended plus kAckTombstoneGraceMs,
  // NOT_FOUND after that. REQUIRES:
  // `acks` is not empty; the pointers need only live until the call returns.
  void Ack(const std::string& queue, const std::vector<const v1::AckRequest*>& acks,
           Callback<std::vector<AckOutcome>> done) const;

  // fail.lua. NOT_FOUND, FAILED_PRECONDITION (stale token, not active). A
  // repeated fail answers the outcome the token's first fail got.
  void Fail(const v1::FailRequest& request, Callback<FailOutcome> done) const;

  // extend_lease.lua; returns the new expiry (Redis ms) and the lease
  // granted (`lease_ms`, or less: up to the run's deadline). NOT_FOUND,
  // FAILED_PRECONDITION.
  struct Extended {
    int64_t expires_at_ms = 0;
    int64_t lease_ms = 0;
  };
  void ExtendLease(const std::string& queue, const std::string& job_id, const std::string& token,
                   int64_t lease_ms, Callback<Extended> done) const;

  // extend_lease.lua refuses a run that Cancel asked to stop
  // (FAILED_PRECONDITION, reason JOB_CANCEL_REQUESTED) or past its deadline
  // (RUN_TIMED_OUT); ack.lua refuses the latter too.

  // cancel.lua: true when the job was active (its run was asked to stop),
  // false when it was pending (now dead). NOT_FOUND, FAILED_PRECONDITION
  // (completed or dead).
  void Cancel(const std::string& queue, const std::string& job_id, Callback<bool> done) const;
  // held_runs.lua: where each of `runs` ((job id, lease token) of runs of
  // store queue `queue`) stands, one HeldRun per run in the order given: for
  // a broker that may have missed the notify channel's messages about the
  // runs it holds (its subscription was just confirmed).
  struct HeldRun {
    enum class State { kEnded, kCancelRequested, kHeld };
    State state = State::kEnded;
    int64_t lease_ms_left = 0;  // by the Redis clock; 0 when ended
  };
  void HeldRuns(const std::string& queue,
                const std::vector<std::pair<std::string, std::string>>& runs,
                Callback<std::vector<HeldRun>> done) const;

  // report_progress.lua for partition `request.queue()`. NOT_FOUND,
  // FAILED_PRECONDITION (stale token, not active, JOB_CANCEL_REQUESTED,
  // RUN_TIMED_OUT).
  void ReportProgress(const v1::ReportProgressRequest& request, Callback<bool> done) const;

  // release.lua: gives back a claim that was never delivered (pending, due
  // now, attempt undone). NOT_FOUND, FAILED_PRECONDITION (the job moved on),
  // DATA_LOSS (its record lacks a field the release needs; nothing written).
  void Release(const std::string& queue, const std::string& job_id, const std::string& token,
               Callback<bool> done) const;

  // reap.lua: settles up to `max_jobs` expired leases of `queue`, deletes up
  // to 1000 completed jobs past their retention and trims up to 1000 expired
  // idempotency keys and ack tombstones, and, when `check_idle`, tells
  // whether the queue has been empty for options().idle_queue_ttl_ms (when
  // set; the check costs up to 7 Redis commands; without it
  // ReapOutcome::idle is false and the queue's empty-since mark is left as
  // it is) and whether its dependency recovery has work
  // (ReapOutcome::dependency_work, 2 commands).
  void Reap(const std::string& queue, int max_jobs, Callback<ReapOutcome> done,
            bool check_idle = true) const;

  // trim_dead.lua: removes up to `batch` dead jobs of `queue` past
  // options().dead_retention_ms or beyond options().dead_max_per_queue
  // (oldest first); returns how many. REQUIRES: one of them is set.
  void TrimDead(const std::string& queue, int batch, Callback<int64_t> done) const;

  // register_queue.lua: records `queue` in the registry (after setting the
  // layout marker <p>:layout when missing), then sets the queue's
  // registered marker. Enqueue calls it by itself whenever
  // enqueue.lua finds the marker missing (a new queue, or one deleted
  // since), so no broker needs to remember which queues it registered.
  void RegisterQueue(const std::string& queue, Callback<bool> done) const;

  // get_job.lua: the job. NOT_FOUND when it has no record, or is completed
  // and past its retention (not trimmed yet).
  void GetJob(const std::string& queue, const std::string& job_id, Callback<v1::Job> done) const;
  // get_job.lua by idempotency key: the job `key` maps to while its dedup
  // window lasts. NOT_FOUND when the key maps to no job (or to one GetJob
  // would not find).
  void GetJobByIdempotencyKey(const std::string& queue, const std::string& key,
                              Callback<v1::Job> done) const;

  // The settings of `queue` (MGET of Keys::Partitions, JobTimeout,
  // RateLimit and MaxActive; partitions 1 when unset).
  void GetQueueSettings(const std::string& queue, Callback<QueueSettings> done) const;

  // SMEMBERS of the registry: store names, so a partitioned queue appears
  // as "<q>" and "<q>#i" (QueueOfPartition).
  void ListQueues(Callback<std::vector<std::string>> done) const;

  // The pub/sub channel on which `queue` announces new pending jobs (payload:
  // ms until due, decimal).
  std::string NotifyChannel(const std::string& queue) const;
  // SPUBLISH of `message` on `queue`'s notify channel, for the brokers that
  // subscribe to it (the Dispatcher's messages about leases granted by
  // another replica). Best effort: a failure is dropped, as is a message
  // nobody receives. Changes no queue state.
  void Announce(const std::string& queue, std::string message) const;
  // The pub/sub channel of `queue`'s job events (store/queue_events.h).
  std::string EventsChannel(const std::string& queue) const;
  // listen_events.lua: the scripts publish `queue`'s events for at least
  // `lease_ms` from now (the queue's listen mark; a broker that follows
  // the queue renews it well before that). True when the mark had lapsed:
  // events of the queue since then were not published.
  void ListenEvents(const std::string& queue, int64_t lease_ms, Callback<bool> done) const;

  const StoreOptions& options() const { return options_; }

 private:
  // get_job.lua: by `job_id`, or (job_id empty) by `idempotency_key`.
  void ReadJob(const std::string& queue, const std::string& job_id,
               const std::string& idempotency_key, Callback<v1::Job> done) const;
  Keys KeysFor(const std::string& queue) const { return Keys(options_.key_prefix, queue); }
  // Data of layout 3 lacks the ready sets' index by type: index_by_type.lua
  // builds it for every registered queue, a batch at a time, then the marker
  // is set to 4 (CheckRedisSettings).
  void UpgradeFromLayout3() const;
  void IndexByType(std::shared_ptr<std::vector<std::string>> queues, size_t index,
                   int64_t offset) const;

  RedisCommands* const client_;
  const ScriptRunner* const scripts_;
  const StoreOptions options_;
};

// Logs a warning naming the ids a script (`script`) skipped in `queue` for a
// missing or partial job record: `ids` is the script's array of them (nothing
// when empty).
void LogSkippedJobs(const std::string& queue, const std::string& script, const RedisReply& ids);

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_JOB_STORE_H_
