#include "broker/store/job_store.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "broker/base/error_reason.h"
#include "broker/base/logging.h"
#include "broker/store/job_record.h"

namespace jobwire::store {
namespace {

// Per-call randomness: lease token prefixes and jitter seeds.
std::string RandomToken() {
  thread_local absl::BitGen gen;
  uint64_t hi = absl::Uniform<uint64_t>(gen), lo = absl::Uniform<uint64_t>(gen);
  return absl::StrCat(absl::Hex(hi, absl::kZeroPad16), absl::Hex(lo, absl::kZeroPad16));
}

std::string RandomSeed() {
  thread_local absl::BitGen gen;
  return absl::StrCat(absl::Uniform<int32_t>(gen, 1, 1 << 30));
}


// Decodes the {'OK', ...} | {'NOT_FOUND'} | {'STALE'} | {'STATE', s}
// convention of the lifecycle scripts. On OK returns the reply.
absl::StatusOr<RedisReply> CheckScriptStatus(absl::StatusOr<RedisReply> reply,
                                             const std::string& queue, const std::string& id,
                                             absl::string_view wanted_state) {
  if (!reply.ok()) return reply.status();
  if (reply->type != RedisReply::Type::kArray || reply->elements.empty()) {
    return absl::InternalError("unexpected script reply");
  }
  const std::string& code = reply->elements[0].str;
  if (code == "OK") return reply;
  if (code == "NOT_FOUND") return JobNotFound(queue, id);
  if (code == "STALE") {
    return base::WithReason(
        absl::FailedPreconditionError(absl::StrCat(
            "lease_token is not the current lease of ", JobRef(queue, id),
            " (the lease expired or the job was claimed again)")),
        base::reason::kLeaseStale);
  }
  if (code == "CANCEL_REQUESTED") {
    return base::WithReason(
        absl::FailedPreconditionError(absl::StrCat(
            "Cancel asked the run of ", JobRef(queue, id),
            " to stop: stop its handler and Fail it (it becomes dead \"cancelled\")")),
        base::reason::kJobCancelRequested);
  }
  if (code == "TIMED_OUT") {
    return base::WithReason(
        absl::FailedPreconditionError(absl::StrCat(
            "the run of ", JobRef(queue, id),
            " passed its deadline (timeout_ms): the attempt fails with \"timeout\"")),
        base::reason::kRunTimedOut);
  }
  if (code == "CORRUPT" && reply->elements.size() > 1) {
    return base::WithReason(absl::DataLossError(absl::StrCat(JobRef(queue, id), " has no valid ",
                                                             reply->elements[1].str, " field")),
                            base::reason::kJobRecordCorrupt);
  }
  if (code == "STATE" && reply->elements.size() > 1) {
    const std::string& state = reply->elements[1].str;
    return base::WithMetadata(
        base::WithReason(absl::FailedPreconditionError(
                             absl::StrCat(JobRef(queue, id), " is ", state, ", not ", wanted_state)),
                         base::reason::kJobState),
        "state", state);
  }
  return absl::InternalError(absl::StrCat("unexpected script reply: ", code));
}

// claim.lua's reply (also the last element of enqueue.lua's with a
// hand-off), from `script`.
absl::StatusOr<ClaimOutcome> ParseClaimReply(const std::string& queue, const std::string& script,
                                             int64_t lease_ms, const RedisReply& reply) {
  if (reply.type != RedisReply::Type::kArray || reply.elements.size() < 4) {
    return absl::InternalError(absl::StrCat("bad ", script, " claim reply"));
  }
  ClaimOutcome out;
  out.next_due_in_ms = reply.elements[0].AsInt(-1);
  out.more = reply.elements[1].AsInt() == 1;
  LogSkippedJobs(queue, script, reply.elements[2]);
  for (const RedisReply& type : reply.elements[3].elements) out.other_types.push_back(type.str);
  for (size_t i = 4; i + 1 < reply.elements.size(); i += 2) {
    v1::ClaimedJob claimed;
    *claimed.mutable_job() = JobFromReply(queue, reply.elements[i].str, reply.elements[i + 1],
                                          claimed.mutable_lease_token());
    claimed.set_lease_expires_at_ms(claimed.job().lease_expires_at_ms());
    // A run with a timeout got a lease no longer than it (claim_ready).
    const int64_t timeout = claimed.job().timeout_ms();
    claimed.set_lease_ms(timeout > 0 ? std::min(lease_ms, timeout) : lease_ms);
    out.jobs.push_back(std::move(claimed));
  }
  return out;
}

}  // namespace

JobStore::JobStore(RedisCommands* client, const ScriptRunner* scripts, StoreOptions options)
    : client_(client), scripts_(scripts), options_(std::move(options)) {}

std::string JobStore::NotifyChannel(const std::string& queue) const {
  return KeysFor(queue).NotifyChannel();
}

void JobStore::Announce(const std::string& queue, std::string message) const {
  client_->Command({"SPUBLISH", KeysFor(queue).NotifyChannel(), std::move(message)},
                   [](absl::StatusOr<RedisReply>) {});
}

std::string JobStore::EventsChannel(const std::string& queue) const {
  return KeysFor(queue).EventsChannel();
}

void JobStore::CheckRedisSettings() const {
  const std::string marker = Keys::Layout(options_.key_prefix);
  const std::string want = absl::StrCat(kLayoutVersion);
  client_->Command({"GET", marker}, [this, marker, want](absl::StatusOr<RedisReply> reply) {
    if (!reply.ok() || reply->is_error()) return;  // the connection's own errors are logged
    if (reply->type == RedisReply::Type::kString) {
      if (reply->str == want) return;
      if (reply->str == "3") return UpgradeFromLayout3();
      base::Log(base::LogLevel::kError,
                "redis holds jobwire data of another key layout; this broker does not read it "
                "(docs/redis-layout.md, \"Layout versions\")",
                {{"key", marker}, {"layout", reply->str}, {"expected", want}});
      return;
    }
    client_->Command({"SCARD", Keys::Registry(options_.key_prefix)},
                     [this, marker, want](absl::StatusOr<RedisReply> queues) {
                       if (!queues.ok() || queues->is_error()) return;
                       // No queue: a new Redis (RegisterQueue sets the marker).
                       if (queues->integer == 0) return;
                       // Queues but no marker: layout 1 or 2, unless a broker
                       // of layout 3 or later registered one since the GET (it sets
                       // the marker first): NX tells them apart, and leaves
                       // the finding for every later connect to report.
                       const int64_t count = queues->integer;
                       client_->Command(
                           {"SET", marker, "2", "NX"},
                           [marker, want, count](absl::StatusOr<RedisReply> set) {
                             if (!set.ok() || set->type != RedisReply::Type::kStatus) return;
                             base::Log(base::LogLevel::kError,
                                       "redis holds jobwire queues of key layout 1 or 2 (no "
                                       "layout marker; now marked 2); this broker (layout 4) "
                                       "does not read their jobs and drops their ids as missing "
                                       "records: stop it and drain them with a broker of the "
                                       "old version first (docs/redis-layout.md, \"Layout "
                                       "versions\")",
                                       {{"key", marker}, {"queues", count},
                                        {"expected", want}});
                           });
                     });
  });
}

void JobStore::UpgradeFromLayout3() const {
  base::Log(base::LogLevel::kInfo, "upgrading jobwire data from key layout 3 to 4 (indexing "
            "every queue's ready jobs by type)", {});
  client_->Command(
      {"SMEMBERS", Keys::Registry(options_.key_prefix)},
      [this](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok() || reply->type != RedisReply::Type::kArray) return;  // next connect
        auto queues = std::make_shared<std::vector<std::string>>();
        for (const RedisReply& queue : reply->elements) queues->push_back(queue.str);
        IndexByType(std::move(queues), 0, 0);
      });
}

void JobStore::IndexByType(std::shared_ptr<std::vector<std::string>> queues, size_t index,
                           int64_t offset) const {
  constexpr int kBatch = 1000;
  if (index == queues->size()) {
    // Every queue is indexed: from now on the data is layout 4 (a repeated
    // upgrade by another broker meanwhile did the same, harmlessly).
    client_->Command({"SET", Keys::Layout(options_.key_prefix), absl::StrCat(kLayoutVersion)},
                     [count = queues->size()](absl::StatusOr<RedisReply> set) {
                       if (!set.ok()) return;
                       base::Log(base::LogLevel::kInfo, "upgraded jobwire data to key layout 4",
                                 {{"queues", count}});
                     });
    return;
  }
  Keys keys = KeysFor((*queues)[index]);
  scripts_->Eval(scripts_->Get("index_by_type"), {keys.Ready(), keys.ReadyByType(), keys.Jobs()},
                 {absl::StrCat(offset), absl::StrCat(kBatch)},
                 [this, queues, index](absl::StatusOr<RedisReply> reply) {
                   // Redis unreachable: the marker still says 3, and the next
                   // connect starts the upgrade again.
                   if (!reply.ok() || reply->type != RedisReply::Type::kInteger) return;
                   if (reply->integer < 0) return IndexByType(queues, index + 1, 0);
                   IndexByType(queues, index, reply->integer);
                 });
}

void JobStore::Enqueue(const std::string& queue, const std::vector<v1::EnqueueRequest>& jobs,
                       Callback<std::vector<EnqueueOutcome>> done,
                       std::optional<HandOff> hand_off) const {
  Keys keys = KeysFor(queue);
  const std::string claim_id = hand_off ? hand_off->claim_id : "";
  std::vector<std::string> args = {absl::StrCat(options_.dedup_window_ms), keys.NotifyChannel(),
                                   JobIdSuffix(PartitionOfName(queue)),
                                   absl::StrCat(hand_off ? hand_off->max_jobs : 0),
                                   absl::StrCat(hand_off ? hand_off->lease_ms : 0), claim_id,
                                   hand_off ? hand_off->worker_id : "",
                                   absl::StrCat(kMaxClaimBytes)};
  args.push_back(absl::StrCat(hand_off ? hand_off->types.size() : 0));
  if (hand_off) args.insert(args.end(), hand_off->types.begin(), hand_off->types.end());
  args.reserve(args.size() + 12 * jobs.size());
  for (const v1::EnqueueRequest& r : jobs) {
    const int64_t retention = r.has_completed_retention_ms() ? r.completed_retention_ms()
                                                             : options_.completed_retention_ms;
    args.insert(args.end(),
                {r.type(), r.payload(), absl::StrCat(r.priority()), absl::StrCat(r.delay_ms()),
                 absl::StrCat(r.run_at_ms()), r.idempotency_key(), absl::StrCat(r.max_attempts()),
                 absl::StrCat(r.backoff_base_ms()), absl::StrCat(r.backoff_max_ms()),
                 absl::StrCat(retention),
                 absl::StrCat(r.timeout_ms()),
                 PackHeaders(r.headers()), r.concurrency_key()});
  }
  Callback<ClaimOutcome> claimed = hand_off ? std::move(hand_off->claimed) : nullptr;
  const int64_t lease_ms = hand_off ? hand_off->lease_ms : 0;
  scripts_->Eval(
      scripts_->Get("enqueue"),
      {keys.Seq(), keys.Ready(), keys.Scheduled(), keys.Registered(), keys.Jobs(),
       keys.Payloads(), keys.Idempotency(), keys.IdempotencyExpiry(), keys.Active(),
       keys.Paused(), keys.Dead(), keys.Claim(claim_id), keys.ReadyByType(), keys.RateLimit(),
       keys.RateBucket(), keys.MaxActive(), keys.KeyLimit(), keys.KeyActive(),
       keys.KeyWaiting()},
      std::move(args),
      [this, queue, count = jobs.size(), lease_ms, claimed = std::move(claimed),
       done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        const size_t size = 2 * count + 1 + (claimed ? 1 : 0);
        if (reply.ok() && (reply->type != RedisReply::Type::kArray ||
                           reply->elements.size() != size)) {
          reply = absl::InternalError("bad enqueue reply");
        }
        if (claimed) {
          claimed(reply.ok() ? ParseClaimReply(queue, "enqueue", lease_ms,
                                             reply->elements.back())
                             : absl::StatusOr<ClaimOutcome>(reply.status()));
        }
        if (!reply.ok()) return done(reply.status());
        const bool registered = reply->elements[2 * count].AsInt() == 1;
        std::vector<EnqueueOutcome> out;
        out.reserve(count);
        for (size_t i = 0; i < count; ++i) {
          out.push_back(EnqueueOutcome{reply->elements[2 * i].str,
                                       reply->elements[2 * i + 1].AsInt() == 1});
        }
        if (registered) return done(std::move(out));
        // A new queue (or one deleted since): registered before the
        // enqueue answers, so ListQueues and the reaper see it then.
        RegisterQueue(queue, [queue, out = std::move(out), done = std::move(done)](
                                 absl::StatusOr<bool> added) mutable {
          if (!added.ok()) {
            // The jobs are stored; the next enqueue finds the marker
            // missing and registers the queue.
            base::Log(base::LogLevel::kWarning, "queue not registered",
                      {{"queue", queue}, {"error", added.status().ToString()}});
          }
          done(std::move(out));
        });
      });
}

std::string JobStore::NewClaimId() { return RandomToken(); }

void JobStore::Claim(const std::string& queue, int max_jobs, int64_t lease_ms,
                     const std::string& worker_id, const std::string& claim_id,
                     const std::vector<std::string>& types, Callback<ClaimOutcome> done) const {
  Keys keys = KeysFor(queue);
  std::vector<std::string> args = {absl::StrCat(max_jobs), absl::StrCat(lease_ms), claim_id,
                                   worker_id, absl::StrCat(kMaxClaimBytes)};
  args.insert(args.end(), types.begin(), types.end());
  scripts_->Eval(
      scripts_->Get("claim"),
      {keys.Ready(), keys.Scheduled(), keys.Active(), keys.Paused(), keys.Dead(),
       keys.Claim(claim_id), keys.Jobs(), keys.Payloads(), keys.ReadyByType(), keys.RateLimit(),
       keys.RateBucket(), keys.MaxActive(), keys.KeyLimit(), keys.KeyActive(), keys.KeyWaiting()},
      std::move(args),
      [queue, lease_ms, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok()) return done(reply.status());
        done(ParseClaimReply(queue, "claim", lease_ms, *reply));
      });
}

void JobStore::ReleaseClaim(const std::string& queue, const std::string& claim_id,
                            Callback<int64_t> done) const {
  Keys keys = KeysFor(queue);
  scripts_->Eval(scripts_->Get("release_claim"),
                 {keys.Claim(claim_id), keys.Active(), keys.Ready(), keys.Jobs(),
                  keys.ReadyByType(), keys.KeyActive(), keys.KeyWaiting()},
                 {claim_id, keys.NotifyChannel()},
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   if (reply->type != RedisReply::Type::kInteger) {
                     return done(absl::InternalError("bad release_claim reply"));
                   }
                   done(reply->integer);
                 });
}

void JobStore::Ack(const std::string& queue, const std::vector<const v1::AckRequest*>& acks,
                   Callback<std::vector<AckOutcome>> done) const {
  Keys keys = KeysFor(queue);
  std::vector<std::string> args = {absl::StrCat(options_.completed_retention_ms),
                                   absl::StrCat(kAckTombstoneGraceMs), keys.NotifyChannel()};
  std::vector<std::string> ids;
  args.reserve(3 + 3 * acks.size());
  ids.reserve(acks.size());
  for (const v1::AckRequest* ack : acks) {
    args.push_back(ack->job_id());
    args.push_back(ack->lease_token());
    args.push_back(ack->result());
    ids.push_back(ack->job_id());
  }
  scripts_->Eval(scripts_->Get("ack"), {keys.Active(), keys.Completed(), keys.Jobs(), keys.Payloads(),
                  keys.Results(), keys.Acked(), keys.AckedExpiry(), keys.Ready(),
                  keys.ReadyByType(), keys.KeyActive(), keys.KeyWaiting()},
                 std::move(args),
                 [queue, ids = std::move(ids), done = std::move(done)](
                     absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   if (reply->type != RedisReply::Type::kArray ||
                       reply->elements.size() != ids.size()) {
                     return done(absl::InternalError("bad ack reply"));
                   }
                   std::vector<AckOutcome> outcomes;
                   outcomes.reserve(ids.size());
                   for (size_t i = 0; i < ids.size(); ++i) {
                     const bool repeat = reply->elements[i].elements.size() == 2 &&
                                         reply->elements[i].elements[1].str == "repeat";
                     outcomes.push_back(AckOutcome{
                         CheckScriptStatus(std::move(reply->elements[i]), queue, ids[i], "active")
                             .status(),
                         repeat});
                   }
                   done(std::move(outcomes));
                 });
}

void JobStore::Fail(const v1::FailRequest& r, Callback<FailOutcome> done) const {
  Keys keys = KeysFor(r.queue());
  scripts_->Eval(
      scripts_->Get("fail"),
      {keys.Jobs(), keys.Active(), keys.Scheduled(), keys.Dead(), keys.Ready(), keys.ReadyByType(),
       keys.KeyActive(), keys.KeyWaiting()},
      {r.job_id(), r.lease_token(), r.error(), r.non_retryable() ? "1" : "0",
       absl::StrCat(r.retry_after_ms()), RandomSeed(), keys.NotifyChannel(),
       r.keep_attempt() ? "1" : "0"},
      [queue = r.queue(), id = r.job_id(), done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        auto checked = CheckScriptStatus(std::move(reply), queue, id, "active");
        if (!checked.ok()) return done(checked.status());
        if (checked->elements.size() != 5) return done(absl::InternalError("bad fail reply"));
        done(FailOutcome{checked->elements[1].str == "dead", checked->elements[2].AsInt(),
                         checked->elements[3].AsInt() == 1, checked->elements[4].str});
      });
}

void JobStore::ExtendLease(const std::string& queue, const std::string& job_id,
                           const std::string& token, int64_t lease_ms,
                           Callback<Extended> done) const {
  Keys keys = KeysFor(queue);
  scripts_->Eval(scripts_->Get("extend_lease"), {keys.Jobs(), keys.Active()},
                 {job_id, token, absl::StrCat(lease_ms)},
                 [queue, job_id, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   auto checked = CheckScriptStatus(std::move(reply), queue, job_id, "active");
                   if (!checked.ok()) return done(checked.status());
                   if (checked->elements.size() != 3) {
                     return done(absl::InternalError("bad extend_lease reply"));
                   }
                   done(Extended{checked->elements[1].AsInt(), checked->elements[2].AsInt()});
                 });
}

void JobStore::Cancel(const std::string& queue, const std::string& job_id,
                      Callback<bool> done) const {
  Keys keys = KeysFor(queue);
  scripts_->Eval(scripts_->Get("cancel"),
                 {keys.Jobs(), keys.Ready(), keys.Scheduled(), keys.Dead(), keys.ReadyByType(),
                  keys.KeyWaiting()},
                 {job_id, keys.NotifyChannel()},
                 [queue, job_id, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   auto checked =
                       CheckScriptStatus(std::move(reply), queue, job_id, "pending or active");
                   if (!checked.ok()) return done(checked.status());
                   if (checked->elements.size() != 2) {
                     return done(absl::InternalError("bad cancel reply"));
                   }
                   done(checked->elements[1].AsInt() == 1);
                 });
}

void JobStore::ReportProgress(const v1::ReportProgressRequest& r,
                              Callback<bool> done) const {
  Keys keys = KeysFor(r.queue());
  scripts_->Eval(scripts_->Get("report_progress"), {keys.Jobs()},
                 {r.job_id(), r.lease_token(),
                  r.has_percent() ? absl::StrCat(r.percent()) : std::string(), r.data()},
                 [queue = r.queue(), id = r.job_id(),
                  done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   auto checked = CheckScriptStatus(std::move(reply), queue, id, "active");
                   if (!checked.ok()) return done(checked.status());
                   done(true);
                 });
}

void JobStore::Release(const std::string& queue, const std::string& job_id,
                       const std::string& token, Callback<bool> done) const {
  Keys keys = KeysFor(queue);
  scripts_->Eval(scripts_->Get("release"),
                 {keys.Jobs(), keys.Active(), keys.Ready(), keys.ReadyByType(), keys.KeyActive(),
                  keys.KeyWaiting()},
                 {job_id, token, keys.NotifyChannel()},
                 [queue, job_id, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   auto checked = CheckScriptStatus(std::move(reply), queue, job_id, "active");
                   if (!checked.ok()) return done(checked.status());
                   done(true);
                 });
}

void JobStore::Reap(const std::string& queue, int max_jobs, Callback<ReapOutcome> done,
                    bool check_idle) const {
  Keys keys = KeysFor(queue);
  scripts_->Eval(scripts_->Get("reap"),
                 {keys.Active(), keys.Scheduled(), keys.Dead(), keys.Completed(), keys.Ready(),
                  keys.Paused(), keys.Registered(), keys.Jobs(), keys.Payloads(), keys.Results(),
                  keys.Idempotency(), keys.IdempotencyExpiry(), keys.Acked(), keys.AckedExpiry(),
                  keys.ReadyByType(), keys.KeyActive(), keys.KeyWaiting()},
                 {absl::StrCat(max_jobs), RandomSeed(), keys.NotifyChannel(),
                  absl::StrCat(check_idle ? options_.idle_queue_ttl_ms : 0)},
                 [queue, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   if (reply->elements.size() != 6) return done(absl::InternalError("bad reap reply"));
                   LogSkippedJobs(queue, "reap", reply->elements[3]);
                   ReapOutcome outcome;
                   outcome.reaped = reply->elements[0].AsInt();
                   outcome.next_expiry_in_ms = reply->elements[1].AsInt(-1);
                   outcome.dead = reply->elements[2].AsInt();
                   outcome.idle = reply->elements[4].AsInt() == 1;
                   const std::vector<RedisReply>& settled = reply->elements[5].elements;
                   for (size_t i = 0; i + 2 < settled.size(); i += 3) {
                     outcome.settled.push_back(ReapedJob{settled[i].str, settled[i + 1].str == "dead",
                                                         settled[i + 2].str});
                   }
                   done(std::move(outcome));
                 });
}

void JobStore::TrimDead(const std::string& queue, int batch, Callback<int64_t> done) const {
  Keys keys = KeysFor(queue);
  scripts_->Eval(scripts_->Get("trim_dead"),
                 {keys.Dead(), keys.Jobs(), keys.Payloads(), keys.Results(), keys.Idempotency(),
                  keys.IdempotencyExpiry()},
                 {absl::StrCat(options_.dead_retention_ms),
                  absl::StrCat(options_.dead_max_per_queue), absl::StrCat(batch)},
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   if (reply->type != RedisReply::Type::kInteger) {
                     return done(absl::InternalError("bad trim_dead reply"));
                   }
                   done(reply->integer);
                 });
}

void JobStore::RegisterQueue(const std::string& queue, Callback<bool> done) const {
  // The marker only once the registry entry is written, so that a set marker
  // implies the entry. It lives in the queue's slot, where enqueue.lua reads
  // it. The layout marker goes first, on the same connection, so that a
  // registered queue implies it (CheckRedisSettings).
  client_->Command({"SET", Keys::Layout(options_.key_prefix), absl::StrCat(kLayoutVersion), "NX"},
                   [](absl::StatusOr<RedisReply>) {});
  scripts_->Eval(
      scripts_->Get("register_queue"), {Keys::Registry(options_.key_prefix)}, {queue},
      [this, queue, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok()) return done(reply.status());
        const bool added = reply->AsInt() == 1;
        // Once more after the marker: a DeleteQueue whose unregister_queue.lua
        // ran between the first SADD and the marker re-adds the entry only
        // if it sees the marker, which may be set just after it looked.
        // Whichever runs last, this SADD or its check, leaves the entry.
        client_->Command(
            {"SET", KeysFor(queue).Registered(), "1"},
            [this, queue, added, done = std::move(done)](absl::StatusOr<RedisReply> set) mutable {
              if (!set.ok()) return done(set.status());
              scripts_->Eval(scripts_->Get("register_queue"), {Keys::Registry(options_.key_prefix)},
                             {queue},
                             [added, done = std::move(done)](absl::StatusOr<RedisReply> again) {
                               if (!again.ok()) return done(again.status());
                               done(added);
                             });
            });
      });
}

void JobStore::GetJob(const std::string& queue, const std::string& job_id,
                      Callback<v1::Job> done) const {
  ReadJob(queue, job_id, "", std::move(done));
}

void JobStore::GetJobByIdempotencyKey(const std::string& queue, const std::string& key,
                                      Callback<v1::Job> done) const {
  ReadJob(queue, "", key, std::move(done));
}

void JobStore::ReadJob(const std::string& queue, const std::string& job_id,
                       const std::string& idempotency_key, Callback<v1::Job> done) const {
  Keys keys = KeysFor(queue);
  scripts_->Eval(
      scripts_->Get("get_job"),
      {keys.Jobs(), keys.Payloads(), keys.Results(), keys.Completed(), keys.Idempotency(),
       keys.IdempotencyExpiry()},
      {job_id, idempotency_key},
      [queue, job_id, idempotency_key, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok()) return done(reply.status());
        if (reply->type != RedisReply::Type::kArray ||
            (!reply->elements.empty() && reply->elements.size() != 4)) {
          return done(absl::InternalError("bad get_job reply"));
        }
        if (reply->elements.empty()) {
          if (job_id.empty()) {
            return done(base::WithReason(
                absl::NotFoundError(absl::StrCat("no job in queue ", QueueOfPartition(queue),
                                                 " holds idempotency key ", idempotency_key)),
                base::reason::kJobNotFound));
          }
          return done(JobNotFound(queue, job_id));
        }
        // {record, payload, result, id}: JobFromReply reads the first three.
        const std::string id = reply->elements[3].str;
        reply->elements.pop_back();
        done(JobFromReply(queue, id, *reply));
      });
}

void JobStore::GetQueueSettings(const std::string& queue, Callback<QueueSettings> done) const {
  const Keys keys = KeysFor(queue);
  client_->Command(
      {"MGET", keys.Partitions(), keys.JobTimeout(), keys.RateLimit(), keys.MaxActive(),
       keys.KeyLimit()},
      [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok()) return done(reply.status());
        if (reply->elements.size() != 5) return done(absl::InternalError("bad MGET reply"));
        QueueSettings settings;
        const RedisReply& count = reply->elements[0];
        if (!count.is_nil()) {
          const int64_t n = count.AsInt(-1);
          if (n < 1 || n > kMaxPartitions) {
            return done(absl::InternalError("bad partition count in redis"));
          }
          settings.partitions = static_cast<int>(n);
        }
        const RedisReply& timeout = reply->elements[1];
        if (!timeout.is_nil()) {
          const int64_t ms = timeout.AsInt(-1);
          if (ms < 0) return done(absl::InternalError("bad default job timeout in redis"));
          settings.default_job_timeout_ms = ms;
        }
        const RedisReply& limit = reply->elements[2];
        if (!limit.is_nil()) {
          settings.rate_limit = ParseRateLimit(limit.str);
          if (!settings.rate_limit) return done(absl::InternalError("bad rate limit in redis"));
        }
        for (auto [i, limit] : {std::pair{3, &settings.max_active},
                                std::pair{4, &settings.max_active_per_key}}) {
          const RedisReply& value = reply->elements[i];
          if (value.is_nil()) continue;
          const int64_t n = value.AsInt(-1);
          if (n < 1 || n > kMaxMaxActive) {
            return done(absl::InternalError(i == 3 ? "bad max_active in redis"
                                                   : "bad key_limit in redis"));
          }
          *limit = static_cast<int32_t>(n);
        }
        done(settings);
      });
}

std::string RateLimitValue(const v1::RateLimit& limit) {
  return absl::StrCat(limit.count(), " ", limit.interval_ms(), " ", limit.burst());
}

std::optional<v1::RateLimit> ParseRateLimit(absl::string_view value) {
  std::vector<absl::string_view> parts = absl::StrSplit(value, ' ');
  int32_t count = 0, burst = 0;
  int64_t interval_ms = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &count) ||
      !absl::SimpleAtoi(parts[1], &interval_ms) || !absl::SimpleAtoi(parts[2], &burst) ||
      count < 1 || interval_ms < 1 || burst < 1) {
    return std::nullopt;
  }
  v1::RateLimit limit;
  limit.set_count(count);
  limit.set_interval_ms(interval_ms);
  limit.set_burst(burst);
  return limit;
}

void JobStore::ListQueues(Callback<std::vector<std::string>> done) const {
  client_->Command({"SMEMBERS", Keys::Registry(options_.key_prefix)},
                   [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                     if (!reply.ok()) return done(reply.status());
                     std::vector<std::string> queues;
                     for (const auto& e : reply->elements) queues.push_back(e.str);
                     done(std::move(queues));
                   });
}

void LogSkippedJobs(const std::string& queue, const std::string& script, const RedisReply& ids) {
  if (ids.elements.empty()) return;
  std::vector<std::string> names;
  for (const RedisReply& id : ids.elements) names.push_back(id.str);
  base::Log(base::LogLevel::kWarning, "job record missing or partial; job skipped",
            {{"queue", queue},
             {"script", script},
             {"jobs", absl::StrJoin(names, ",")},
             {"count", names.size()}});
}

}  // namespace jobwire::store
