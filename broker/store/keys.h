// Keys: the whole Redis key layout (version 4), in one place.
// docs/redis-layout.md is the written form of this file; change both
// together, and bump the version in both when a key or field changes meaning.
//
// Every key of a queue carries the hash tag {queue}, so a queue lives in one
// Redis Cluster slot, and every script declares in KEYS every key it touches
// (no key is built inside a script):
//   <p>:{<q>}:jobs         hash   job id -> the job's record (cmsgpack; fields in docs)
//   <p>:{<q>}:payloads     hash   job id -> payload (when not empty)
//   <p>:{<q>}:results      hash   job id -> result of a completed job (when not empty)
//   <p>:{<q>}:seq          string job id counter
//   <p>:{<q>}:ready        zset   due pending jobs, by priority then due time
//   <p>:{<q>}:ready_by_type zset  the ready set's index by type (lex order;
//                                 members: type, score, id; scores 0)
//   <p>:{<q>}:scheduled    zset   pending jobs due later, by due time
//   <p>:{<q>}:active       zset   leased jobs, by lease expiry
//   <p>:{<q>}:completed    zset   completed jobs, by expiry (ack time + retention)
//   <p>:{<q>}:acked        hash   job id -> lease token of a job deleted on ack (retention 0)
//   <p>:{<q>}:acked_expiry zset   job id -> the tombstone's expiry
//   <p>:{<q>}:dead         zset   dead jobs, by finish time
//   <p>:{<q>}:idem         hash   idempotency key -> job id
//   <p>:{<q>}:idem_expiry  zset   idempotency key -> its expiry (end of the dedup window)
//   <p>:{<q>}:key_limit    string the most active jobs per concurrency key, when set
//   <p>:{<q>}:key_active   hash   concurrency key -> its active jobs
//   <p>:{<q>}:key_waiting  zset   pending jobs parked at their key's limit (lex
//                                 order; members: key, ready score, id; scores 0)
//   <p>:{<q>}:key_rate_limit string the rate limit of each concurrency key, when set
//   <p>:{<q>}:key_tat      zset   concurrency key -> its bucket's theoretical arrival time
//                                 (ms; a key whose bucket is full has none)
//   <p>:{<q>}:key_rate_wake zset  concurrency key -> when its next token comes (ms),
//                                 while a claim parked its jobs for want of one
//   <p>:{<q>}:deps_waiting zset   pending jobs waiting for parents, by stored at
//   <p>:{<q>}:dependents   hash   parent id -> ids of its waiting children (same slot)
//   <p>:{<q>}:remote_dependents hash parent id -> its waiting children in other slots
//                                 ("<child store queue>,<child id>,<ref>", space-separated)
//   <p>:{<q>}:deps_outbox  list   news of ended parents for children in other slots
//   <p>:{<q>}:deps_unlinked zset  children with parents elsewhere not linked yet
//   <p>:{<q>}:paused       string exists while the queue is paused
//   <p>:{<q>}:registered   string exists while the queue is in the registry
//   <p>:{<q>}:claim:<cid>  string ids leased by one claim.lua call
//   <p>:{<q>}:partitions   string the queue's partition count, when set (> 1)
//   <p>:{<q>}:notify       pub/sub channel: ms until a new pending job is due
//   <p>:{<q>}:events       pub/sub channel: job events, while a broker listens
//   <p>:queues             set    names of queues that have or had jobs
//   <p>:{schedules}:defs   hash   schedule name -> definition (jobwire.v1.Schedule, protobuf bytes)
//   <p>:{schedules}:next   zset   schedule name -> next scheduled instant (ms); none: no more runs
//   <p>:{schedules}:last   hash   schedule name -> "<instant ms> <job id>" of its last run
//   <p>:{schedules}:changed pub/sub channel: a schedule was put (its name)
//   <p>:{workers}:reports  hash   broker replica name -> its report of open Claim streams
//                                 (jobwire.v1.ListWorkersResponse, protobuf bytes)
//   <p>:layout             string the layout version of the data (4)
//
// A queue of P > 1 partitions keeps partition 0 under {<q>} and partition i
// (1..P-1) under {<q>#i}, each a queue of its own in every key above (and in
// the registry, as "<q>#i"); '#' is not allowed in queue names. A job of
// partition i > 0 has the id "<seq>.p<i>", so that the id names its
// partition; ids of partition 0 have no suffix (the ids of a queue that had
// one partition stay valid when it gains more).
#ifndef JOBWIRE_BROKER_STORE_KEYS_H_
#define JOBWIRE_BROKER_STORE_KEYS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace jobwire::store {

// The most partitions a queue may have.
inline constexpr int kMaxPartitions = 256;
// The largest max_active a queue may have (Admin CreateQueue / UpdateQueue).
inline constexpr int32_t kMaxMaxActive = 1000000;

// The store's name of partition `partition` of `queue`: `queue` itself for
// partition 0, else "<queue>#<partition>".
std::string PartitionQueue(absl::string_view queue, int partition);
// The queue a store name belongs to ("emails" for "emails#3").
absl::string_view QueueOfPartition(absl::string_view name);
// The partition a store name is ("emails#3": 3; "emails": 0).
int PartitionOfName(absl::string_view name);
// The partition a job id names (".p<i>" suffix: i; none: 0), and the
// suffix the ids of a partition carry ("" for 0).
int PartitionOfJobId(absl::string_view job_id);
std::string JobIdSuffix(int partition);
// "job <id> in queue <q>" for messages, naming the queue (and the
// partition, if not 0) of store name `queue`.
std::string JobRef(absl::string_view queue, absl::string_view job_id);
// NOT_FOUND with reason JOB_NOT_FOUND: "<JobRef> not found".
absl::Status JobNotFound(absl::string_view queue, absl::string_view job_id);
// NOT_FOUND with reason DEPENDENCY_NOT_FOUND (metadata "job_id"): the
// depends_on id `parent_id` names no job of `queue`.
absl::Status DependencyNotFound(absl::string_view queue, absl::string_view parent_id);
// NOT_FOUND, reason DEPENDENCY_NOT_FOUND, no metadata: a parent named by
// depends_on_batch_index was not stored.
absl::Status BatchParentNotStored();

// Thread safety: immutable, safe to share.
class Keys {
 public:
  Keys(absl::string_view prefix, absl::string_view queue);

  std::string Jobs() const { return base_ + "jobs"; }
  std::string Payloads() const { return base_ + "payloads"; }
  std::string Results() const { return base_ + "results"; }
  std::string Seq() const { return base_ + "seq"; }
  std::string Ready() const { return base_ + "ready"; }
  // The ready set's index by job type (claims that filter by type).
  std::string ReadyByType() const { return base_ + "ready_by_type"; }
  std::string Scheduled() const { return base_ + "scheduled"; }
  std::string Active() const { return base_ + "active"; }
  std::string Completed() const { return base_ + "completed"; }
  std::string Dead() const { return base_ + "dead"; }
  std::string Idempotency() const { return base_ + "idem"; }
  std::string IdempotencyExpiry() const { return base_ + "idem_expiry"; }
  // Tombstones of jobs deleted on ack: job id -> lease token, and their expiry.
  std::string Acked() const { return base_ + "acked"; }
  std::string AckedExpiry() const { return base_ + "acked_expiry"; }
  std::string Paused() const { return base_ + "paused"; }
  std::string Registered() const { return base_ + "registered"; }
  // The record of one claim.lua call, by its claim id (release_claim.lua).
  std::string Claim(absl::string_view claim_id) const {
    return base_ + "claim:" + std::string(claim_id);
  }
  std::string NotifyChannel() const { return base_ + "notify"; }
  // The queue's events (job state changes), published by the scripts while
  // a broker listens (queue_events.h).
  std::string EventsChannel() const { return base_ + "events"; }
  // Partition 0 only: the partition count, when set.
  std::string Partitions() const { return base_ + "partitions"; }
  // Partition 0 only: the queue's default job timeout in ms, when set.
  std::string JobTimeout() const { return base_ + "job_timeout"; }
  // The queue's rate limit, when set ('<count> <interval ms> <burst>'), and
  // its token bucket ('<units> <at ms>'): claim.lua's. Queues of one
  // partition only (set_queue.lua refuses a limit with more).
  std::string RateLimit() const { return base_ + "rate_limit"; }
  std::string RateBucket() const { return base_ + "rate_bucket"; }
  // The most active jobs the queue may have at once, when set (claim.lua).
  // Queues of one partition only, as RateLimit.
  std::string MaxActive() const { return base_ + "max_active"; }
  // Concurrency keys (docs/semantics.md, "Concurrency per key"): the most
  // active jobs per key, when set (claim.lua; one partition only, as
  // MaxActive); each key's active jobs (hash: key -> count); and the
  // pending jobs a claim parked at their key's limit (zset of scores 0:
  // members <len:3><key><ready score:16><id>).
  std::string KeyLimit() const { return base_ + "key_limit"; }
  std::string KeyActive() const { return base_ + "key_active"; }
  std::string KeyWaiting() const { return base_ + "key_waiting"; }
  // Rate limits per concurrency key (docs/semantics.md, "Rate limits per
  // key"): the limit, when set ('<count> <interval ms> <burst>', as
  // RateLimit; one partition only); each key's bucket as a theoretical
  // arrival time (zset: key -> ms, GCRA; a full bucket has no entry); and the
  // keys whose jobs a claim parked in KeyWaiting for want of a token (zset:
  // key -> ms when its next token comes).
  std::string KeyRateLimit() const { return base_ + "key_rate_limit"; }
  std::string KeyTat() const { return base_ + "key_tat"; }
  std::string KeyRateWake() const { return base_ + "key_rate_wake"; }
  // Dependencies (docs/semantics.md, "Dependencies"): pending jobs waiting
  // for parents (zset: id -> created at ms), and each unfinished parent's
  // waiting dependents (hash: parent id -> ids, space-separated).
  std::string DepsWaiting() const { return base_ + "deps_waiting"; }
  std::string Dependents() const { return base_ + "dependents"; }
  // Parents in other queues or partitions (docs/semantics.md, "Parents in
  // other queues"): each unfinished parent's dependents elsewhere (hash:
  // parent id -> "<child store queue>,<child id>,<ref>" entries,
  // space-separated), the news of parents that ended, for those dependents
  // (list: "<child store queue> <child id> <ref> <ok|dead> <result>", drained
  // by the brokers into the children's slots), and the children stored with
  // such parents whose links the broker has not confirmed yet (zset: id ->
  // stored at ms; a recovery pass links those left behind).
  std::string RemoteDependents() const { return base_ + "remote_dependents"; }
  std::string DepsOutbox() const { return base_ + "deps_outbox"; }
  std::string DepsUnlinked() const { return base_ + "deps_unlinked"; }

  // <p>:queues, the registry of queue names (not tied to one queue).
  static std::string Registry(absl::string_view prefix);
  // <p>:layout, the version of the layout the data follows (not tied to one
  // queue).
  static std::string Layout(absl::string_view prefix);
  // The schedules (Admin.PutSchedule), under one hash tag of their own so
  // that one script sees all three.
  static std::string ScheduleDefs(absl::string_view prefix);
  static std::string ScheduleNext(absl::string_view prefix);
  static std::string ScheduleLast(absl::string_view prefix);
  static std::string ScheduleChannel(absl::string_view prefix);
  // The replicas' reports of their Claim streams (WorkerReportStore).
  static std::string WorkerReports(absl::string_view prefix);

 private:
  std::string base_;  // <p>:{<q>}:
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_KEYS_H_
