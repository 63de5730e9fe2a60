#include "broker/store/admin_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"
#include "broker/store/job_record.h"
#include "broker/store/job_store.h"

namespace jobwire::store {
namespace {

bool IsArray(const RedisReply& reply, size_t min_size) {
  return reply.type == RedisReply::Type::kArray && reply.elements.size() >= min_size;
}

}  // namespace

AdminStore::AdminStore(RedisCommands* client, const ScriptRunner* scripts, std::string key_prefix)
    : client_(client), scripts_(scripts), key_prefix_(std::move(key_prefix)) {}

void AdminStore::Stats(const std::string& queue, Callback<v1::QueueStats> done) const {
  Keys k = KeysFor(queue);
  scripts_->Eval(scripts_->Get("queue_stats"),
                 {k.Ready(), k.Scheduled(), k.Active(), k.Completed(), k.Dead(), k.Paused(),
                  k.KeyLimit(), k.KeyWaiting(), k.DepsWaiting(), k.KeyRateLimit()},
                 {},
                 [queue, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   if (!IsArray(*reply, 7)) return done(absl::InternalError("bad stats reply"));
                   const auto& e = reply->elements;
                   v1::QueueStats stats;
                   stats.set_queue(queue);
                   stats.set_pending_due(e[0].AsInt());
                   stats.set_pending_scheduled(e[1].AsInt());
                   stats.set_active(e[2].AsInt());
                   stats.set_completed(e[3].AsInt());
                   stats.set_dead(e[4].AsInt());
                   stats.set_paused(e[5].AsInt() == 1);
                   stats.set_oldest_due_age_ms(e[6].AsInt());
                   done(std::move(stats));
                 });
}

void AdminStore::ListJobs(const std::string& queue, const JobPageRequest& request,
                          Callback<JobPage> done) const {
  Keys k = KeysFor(queue);
  std::vector<std::string> keys = {k.Jobs(), k.Payloads(), k.Results()};
  int parked_index = 0;  // list_jobs.lua's ARGV[7]: KEYS index of key_waiting
  switch (request.state) {
    case v1::JOB_STATE_PENDING:
      keys.push_back(k.Ready());
      keys.push_back(k.KeyWaiting());
      keys.push_back(k.Scheduled());
      keys.push_back(k.DepsWaiting());
      parked_index = 5;
      break;
    case v1::JOB_STATE_ACTIVE:
      keys.push_back(k.Active());
      break;
    case v1::JOB_STATE_COMPLETED:
      keys.push_back(k.Completed());
      break;
    default:
      keys.push_back(k.Dead());
      break;
  }
  scripts_->Eval(scripts_->Get("list_jobs"), std::move(keys),
                 {absl::StrCat(request.offset), absl::StrCat(request.page_size),
                  request.newest_first ? "1" : "0", request.type,
                  absl::StrCat(request.scan_limit), absl::StrCat(request.max_bytes),
                  absl::StrCat(parked_index)},
                 [queue, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   if (!IsArray(*reply, 1)) return done(absl::InternalError("bad list reply"));
                   const auto& e = reply->elements;
                   JobPage page;
                   page.next_offset = e[0].AsInt(-1);
                   for (size_t i = 1; i + 1 < e.size(); i += 2) {
                     page.jobs.push_back(JobFromReply(queue, e[i].str, e[i + 1]));
                   }
                   done(std::move(page));
                 });
}

namespace {

Callback<RedisReply> RetryReply(const std::string& queue, Callback<RetryBatch> done) {
  return [queue, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
    if (!reply.ok()) return done(reply.status());
    if (!IsArray(*reply, 4)) return done(absl::InternalError("bad retry_dead reply"));
    LogSkippedJobs(queue, "retry_dead", reply->elements[3]);
    done(RetryBatch{reply->elements[0].AsInt(), reply->elements[1].AsInt(-1),
                    reply->elements[2].str});
  };
}

}  // namespace

void AdminStore::RetryDeadIds(const std::string& queue, const std::vector<std::string>& ids,
                              const std::string& type, Callback<RetryBatch> done) const {
  Keys k = KeysFor(queue);
  std::vector<std::string> args = {k.NotifyChannel(), type, "ids"};
  args.insert(args.end(), ids.begin(), ids.end());
  scripts_->Eval(scripts_->Get("retry_dead"), {k.Dead(), k.Ready(), k.Jobs(), k.ReadyByType()}, std::move(args),
                 RetryReply(queue, std::move(done)));
}

void AdminStore::RetryDeadScan(const std::string& queue, const std::string& type, int64_t offset,
                               int batch, const std::string& bound,
                               Callback<RetryBatch> done) const {
  Keys k = KeysFor(queue);
  scripts_->Eval(scripts_->Get("retry_dead"), {k.Dead(), k.Ready(), k.Jobs(), k.ReadyByType()},
                 {k.NotifyChannel(), type, "scan", absl::StrCat(offset),
                  absl::StrCat(batch), bound},
                 RetryReply(queue, std::move(done)));
}

void AdminStore::DeleteQueue(const std::string& queue, bool force, int batch,
                             Callback<std::pair<int64_t, bool>> done) const {
  RunDeleteQueue(queue, force ? "1" : "0", batch, std::move(done));
}

void AdminStore::DropIfEmpty(const std::string& queue, Callback<bool> done) const {
  RunDeleteQueue(queue, "empty", 1,
                 [done = std::move(done)](absl::StatusOr<std::pair<int64_t, bool>> result) {
                   if (!result.ok()) return done(result.status());
                   done(result->second);
                 });
}

void AdminStore::RunDeleteQueue(const std::string& queue, const std::string& mode, int batch,
                                Callback<std::pair<int64_t, bool>> done) const {
  Keys k = KeysFor(queue);
  scripts_->Eval(
      scripts_->Get("delete_queue"),
      {k.Ready(), k.Scheduled(), k.Active(), k.Completed(), k.Dead(), k.Paused(),
       k.Registered(), k.Jobs(), k.Payloads(), k.Results(), k.Idempotency(),
       k.IdempotencyExpiry(), k.Acked(), k.AckedExpiry(), k.Partitions(), k.ReadyByType(),
       k.JobTimeout(), k.RateLimit(), k.RateBucket(), k.MaxActive(), k.KeyLimit(), k.KeyActive(),
       k.KeyWaiting(), k.DepsWaiting(), k.Dependents(), k.KeyRateLimit(), k.KeyTat(),
       k.KeyRateWake(), k.RemoteDependents(), k.DepsOutbox(), k.DepsUnlinked()},
      {mode, absl::StrCat(batch)},
      [this, queue, done = std::move(done)](absl::StatusOr<RedisReply> reply) mutable {
        if (!reply.ok()) return done(reply.status());
        if (!IsArray(*reply, 2)) return done(absl::InternalError("bad delete_queue reply"));
        const std::string& code = reply->elements[0].str;
        if (code == "ACTIVE") {
          return done(base::WithReason(
              absl::FailedPreconditionError(absl::StrCat(
                  "queue ", queue, " has ", reply->elements[1].AsInt(),
                  " active jobs; set force to delete them too")),
              base::reason::kQueueHasActiveJobs));
        }
        if (code == "BUSY") return done(std::make_pair(int64_t{0}, false));
        const int64_t removed = reply->elements[1].AsInt();
        if (code != "DONE") return done(std::make_pair(removed, false));
        Unregister(queue, [removed, done = std::move(done)](absl::Status s) {
          if (!s.ok()) return done(s);
          done(std::make_pair(removed, true));
        });
      });
}

void AdminStore::Ping(std::function<void(absl::Status)> done) const {
  client_->Command({"PING"}, [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
    done(reply.ok() ? absl::OkStatus() : reply.status());
  });
}

void AdminStore::Unregister(const std::string& queue, std::function<void(absl::Status)> done) const {
  const std::string registry = Keys::Registry(key_prefix_);
  scripts_->Eval(
      scripts_->Get("unregister_queue"), {registry}, {queue},
      [this, queue, registry, done = std::move(done)](absl::StatusOr<RedisReply> removed) mutable {
        if (!removed.ok()) return done(removed.status());
        // An enqueue that registered the queue after delete_queue.lua set
        // its marker again: its entry must stay (JobStore::RegisterQueue).
        client_->Command(
            {"EXISTS", KeysFor(queue).Registered()},
            [this, queue, registry, done = std::move(done)](absl::StatusOr<RedisReply> marker) mutable {
              if (!marker.ok()) return done(marker.status());
              if (marker->AsInt() == 0) return done(absl::OkStatus());
              scripts_->Eval(scripts_->Get("register_queue"), {registry}, {queue},
                             [done = std::move(done)](absl::StatusOr<RedisReply> added) {
                               done(added.status());
                             });
            });
      });
}

void AdminStore::DeleteJob(const std::string& queue, const std::string& job_id,
                           Callback<bool> done) const {
  Keys k = KeysFor(queue);
  scripts_->Eval(
      scripts_->Get("delete_job"),
      {k.Jobs(), k.Ready(), k.Scheduled(), k.Active(), k.Completed(), k.Dead(), k.Payloads(),
       k.Results(), k.Idempotency(), k.IdempotencyExpiry(), k.ReadyByType(), k.KeyActive(),
       k.KeyWaiting(), k.DepsWaiting(), k.Dependents(), k.KeyLimit(), k.RemoteDependents(),
       k.DepsOutbox()},
      {job_id, k.NotifyChannel()},
      [queue, job_id, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok()) return done(reply.status());
        if (!IsArray(*reply, 1)) return done(absl::InternalError("bad delete_job reply"));
        if (reply->elements[0].str == "NOT_FOUND") {
          return done(JobNotFound(queue, job_id));
        }
        done(true);
      });
}

void AdminStore::PurgeDead(const std::string& queue, int64_t older_than_ms, int batch,
                           Callback<int64_t> done) const {
  Keys k = KeysFor(queue);
  scripts_->Eval(scripts_->Get("purge_dead"),
                 {k.Dead(), k.Jobs(), k.Payloads(), k.Results(), k.Idempotency(),
                  k.IdempotencyExpiry()},
                 {absl::StrCat(older_than_ms), absl::StrCat(batch)},
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   done(reply->AsInt());
                 });
}

void AdminStore::SetPaused(const std::string& queue, bool paused, Callback<bool> done) const {
  Keys k = KeysFor(queue);
  scripts_->Eval(scripts_->Get("set_paused"), {k.Paused()},
                 {paused ? "1" : "0", k.NotifyChannel()},
                 [done = std::move(done)](absl::StatusOr<RedisReply> reply) {
                   if (!reply.ok()) return done(reply.status());
                   done(reply->AsInt() == 1);
                 });
}

void AdminStore::SetQueue(const std::string& queue, bool create,
                          const QueueSettingsChange& change, Callback<int> done) const {
  Keys k = KeysFor(queue);
  std::string limit;  // '' unchanged, '-' removed
  if (change.rate_limit) {
    limit = change.rate_limit->count() == 0 ? "-" : RateLimitValue(*change.rate_limit);
  }
  std::string key_limit;  // the same for key_rate_limit
  if (change.key_rate_limit) {
    key_limit =
        change.key_rate_limit->count() == 0 ? "-" : RateLimitValue(*change.key_rate_limit);
  }
  const int partitions = change.partitions;
  scripts_->Eval(
      scripts_->Get("set_queue"),
      {k.Partitions(), k.Registered(), k.JobTimeout(), k.RateLimit(), k.RateBucket(),
       k.MaxActive(), k.KeyLimit(), k.KeyWaiting(), k.Ready(), k.ReadyByType(), k.Jobs(),
       k.KeyRateLimit(), k.KeyTat(), k.KeyRateWake()},
      {absl::StrCat(partitions), create ? "create" : "update", k.NotifyChannel(),
       change.job_timeout_ms ? absl::StrCat(*change.job_timeout_ms) : "", std::move(limit),
       change.max_active ? absl::StrCat(*change.max_active) : "",
       change.max_active_per_key ? absl::StrCat(*change.max_active_per_key) : "",
       std::move(key_limit)},
      [queue, partitions, done = std::move(done)](absl::StatusOr<RedisReply> reply) {
        if (!reply.ok()) return done(reply.status());
        if (!IsArray(*reply, 2)) return done(absl::InternalError("bad set_queue reply"));
        const std::string& code = reply->elements[0].str;
        const int64_t count = reply->elements[1].AsInt();
        if (code == "OK") return done(static_cast<int>(count));
        if (code == "EXISTS") {
          return done(base::WithReason(
              absl::AlreadyExistsError(absl::StrCat(
                  "queue ", queue, " exists (", count, " partitions); UpdateQueue changes it")),
              base::reason::kQueueExists));
        }
        if (code == "MISSING") {
          return done(base::WithReason(
              absl::NotFoundError(absl::StrCat("queue ", queue, " not found; CreateQueue creates it")),
              base::reason::kQueueNotFound));
        }
        if (code == "LIMITED" && reply->elements.size() == 3) {
          const std::string& field = reply->elements[2].str;  // rate_limit | max_active | max_active_per_key | key_rate_limit
          return done(absl::FailedPreconditionError(absl::StrCat(
              field, ": queue ", queue, " would have ",
              std::max(partitions, static_cast<int>(count)), " partitions and a ", field,
              "; a limited queue has one partition")));
        }
        if (code == "SHRINK") {
          return done(base::WithReason(
              absl::FailedPreconditionError(absl::StrCat(
                  "partitions: queue ", queue, " has ", count, " partitions and cannot shrink to ",
                  partitions, " (the jobs of a dropped partition would be stranded)")),
              base::reason::kPartitionsDecrease));
        }
        done(absl::InternalError(absl::StrCat("unexpected set_queue reply: ", code)));
      });
}

}  // namespace jobwire::store
