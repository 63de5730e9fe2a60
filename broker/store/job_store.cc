#include "broker/store/job_store.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
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

// The integer a script answers (release_claim, trim_dead, listen_events);
// INTERNAL naming `script` when the reply is not one.
absl::StatusOr<int64_t> ScriptInteger(absl::StatusOr<RedisReply> reply, absl::string_view script) {
  if (!reply.ok()) return reply.status();
  if (reply->type != RedisReply::Type::kInteger) {
    return absl::InternalError(absl::StrCat("bad ", script, " reply"));
  }
  return reply->integer;
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

namespace {

// enqueue.lua's parents argument of `job`: its depends_on ids, then "#<n>"
// for each depends_on_batch_index (n: the parent's 1-based position in the
// call), space-separated.
std::string Parents(const v1::EnqueueRequest& job) {
  std::string parents = absl::StrJoin(job.depends_on(), " ");
  for (int position : job.depends_on_batch_index()) {
    absl::StrAppend(&parents, parents.empty() ? "#" : " #", position + 1);
  }
  return parents;
}

// Appends enqueue.lua's 15 arguments of `job` to `args`; a job without
// completed_retention_ms gets `default_retention_ms`.
void AppendJobArgs(const v1::EnqueueRequest& r, int64_t default_retention_ms,
                   std::vector<std::string>& args) {
  const int64_t retention =
      r.has_completed_retention_ms() ? r.completed_retention_ms() : default_retention_ms;
  args.insert(args.end(),
              {r.type(), r.payload(), absl::StrCat(r.priority()), absl::StrCat(r.delay_ms()),
               absl::StrCat(r.run_at_ms()), r.idempotency_key(), absl::StrCat(r.max_attempts()),
               absl::StrCat(r.backoff_base_ms()), absl::StrCat(r.backoff_max_ms()),
               absl::StrCat(retention), absl::StrCat(r.timeout_ms()), PackHeaders(r.headers()),
               r.concurrency_key(), Parents(r), r.run_after_failed_dependency() ? "1" : "0"});
}

// The outcomes of the `count` jobs of enqueue.lua's `reply` (a checked
// array: {id, flag} per job first) to store name `queue`.
std::vector<EnqueueOutcome> EnqueueOutcomes(const std::string& queue, const RedisReply& reply,
                                            size_t count) {
  std::vector<EnqueueOutcome> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const RedisReply& id = reply.elements[2 * i];
    const RedisReply& flag = reply.elements[2 * i + 1];
    if (!id.str.empty()) {
      out.push_back(EnqueueOutcome{id.str, flag.AsInt() == 1, absl::OkStatus()});
    } else if (absl::StartsWith(flag.str, "#")) {
      out.push_back(EnqueueOutcome{"", false, BatchParentNotStored()});
    } else {
      out.push_back(EnqueueOutcome{"", false, DependencyNotFound(queue, flag.str)});
    }
  }
  return out;
}

}  // namespace

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
  args.reserve(args.size() + 15 * jobs.size());
  for (const v1::EnqueueRequest& r : jobs) AppendJobArgs(r, options_.completed_retention_ms, args);
  Callback<ClaimOutcome> claimed = hand_off ? std::move(hand_off->claimed) : nullptr;
  const int64_t lease_ms = hand_off ? hand_off->lease_ms : 0;
  scripts_->Eval(
      scripts_->Get("enqueue"),
      {keys.Seq(), keys.Ready(), keys.Scheduled(), keys.Registered(), keys.Jobs(),
       keys.Payloads(), keys.Idempotency(), keys.IdempotencyExpiry(), keys.Active(),
       keys.Paused(), keys.Dead(), keys.Claim(claim_id), keys.ReadyByType(), keys.RateLimit(),
       keys.RateBucket(), keys.MaxActive(), keys.KeyLimit(), keys.KeyActive(),
       keys.KeyWaiting(), keys.Acked(), keys.AckedExpiry(), keys.DepsWaiting(),
       keys.Dependents(), keys.Results(), keys.KeyRateLimit(), keys.KeyTat(),
       keys.KeyRateWake(), keys.DepsUnlinked()},
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
        std::vector<EnqueueOutcome> out = EnqueueOutcomes(queue, *reply, count);
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
       keys.RateBucket(), keys.MaxActive(), keys.KeyLimit(), keys.KeyActive(), keys.KeyWaiting(),
       keys.KeyRateLimit(), keys.KeyTat(), keys.KeyRateWake()},
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
                  keys.ReadyByType(), keys.KeyActive(), keys.KeyWaiting(), keys.KeyLimit()},
                 {claim_id, keys.NotifyChannel()},
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   done(ScriptInteger(std::move(reply), "release_claim"));
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
                  keys.ReadyByType(), keys.KeyActive(), keys.KeyWaiting(), keys.Scheduled(),
                  keys.Dead(), keys.DepsWaiting(), keys.Dependents(), keys.KeyLimit(),
                  keys.RemoteDependents(), keys.DepsOutbox()},
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
       keys.KeyActive(), keys.KeyWaiting(), keys.DepsWaiting(), keys.Dependents(),
       keys.KeyLimit(), keys.RemoteDependents(), keys.DepsOutbox()},
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
                  keys.KeyWaiting(), keys.DepsWaiting(), keys.Dependents(),
                  keys.RemoteDependents(), keys.DepsOutbox()},
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

void JobStore::HeldRuns(const std::string& queue,
                        const std::vector<std::pair<std::string, std::string>>& runs,
                        Callback<std::vector<HeldRun>> done) const {
  std::vector<std::string> args;
  args.reserve(2 * runs.size());
  for (const auto& [job_id, token] : runs) {
    args.push_back(job_id);
    args.push_back(token);
  }
  scripts_->Eval(
      scripts_->Get("held_runs"), {KeysFor(queue).Jobs()}, std::move(args),
      [count = runs.size(), done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok()) return done(reply.status());
        if (reply->type != RedisReply::Type::kArray || reply->elements.size() != count) {
          return done(absl::InternalError("bad held_runs reply"));
        }
        std::vector<HeldRun> held;
        held.reserve(count);
        for (RedisReply& run : reply->elements) {
          if (run.elements.size() != 2) return done(absl::InternalError("bad held_runs reply"));
          HeldRun& h = held.emplace_back();
          const std::string& what = run.elements[0].str;
          h.state = what == "cancel" ? HeldRun::State::kCancelRequested
                    : what == "held" ? HeldRun::State::kHeld
                                     : HeldRun::State::kEnded;
          h.lease_ms_left = run.elements[1].AsInt();
        }
        done(std::move(held));
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

void JobStore::ListenEvents(const std::string& queue, int64_t lease_ms,
                            Callback<bool> done) const {
  scripts_->Eval(scripts_->Get("listen_events"), {KeysFor(queue).Jobs()},
                 {absl::StrCat(lease_ms)},
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   absl::StatusOr<int64_t> lapsed = ScriptInteger(std::move(reply), "listen_events");
                   if (!lapsed.ok()) return done(lapsed.status());
                   done(*lapsed == 1);
                 });
}

void JobStore::Release(const std::string& queue, const std::string& job_id,
                       const std::string& token, Callback<bool> done) const {
  Keys keys = KeysFor(queue);
  scripts_->Eval(scripts_->Get("release"),
                 {keys.Jobs(), keys.Active(), keys.Ready(), keys.ReadyByType(), keys.KeyActive(),
                  keys.KeyWaiting(), keys.KeyLimit()},
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
                  keys.ReadyByType(), keys.KeyActive(), keys.KeyWaiting(), keys.DepsWaiting(),
                  keys.Dependents(), keys.KeyLimit(), keys.RemoteDependents(), keys.DepsOutbox(),
                  keys.DepsUnlinked()},
                 {absl::StrCat(max_jobs), RandomSeed(), keys.NotifyChannel(),
                  absl::StrCat(check_idle ? options_.idle_queue_ttl_ms : 0),
                  absl::StrCat(check_idle ? kDependencyLinkGraceMs : 0)},
                 [queue, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   if (reply->elements.size() != 7) return done(absl::InternalError("bad reap reply"));
                   LogSkippedJobs(queue, "reap", reply->elements[3]);
                   ReapOutcome outcome;
                   outcome.reaped = reply->elements[0].AsInt();
                   outcome.next_expiry_in_ms = reply->elements[1].AsInt(-1);
                   outcome.dead = reply->elements[2].AsInt();
                   outcome.idle = reply->elements[4].AsInt() == 1;
                   outcome.dependency_work = reply->elements[6].AsInt() == 1;
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
                   done(ScriptInteger(std::move(reply), "trim_dead"));
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
