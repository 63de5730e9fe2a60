#include "cli/admin_cli.h"

#include <algorithm>
#include <map>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cli/format.h"
#include "cli/table.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"

namespace jobwire::cli {

AdminCli::AdminCli(client::ClientOptions connection, std::ostream* out, bool json)
    : client_(std::move(connection)),
      out_(out),
      json_(json),
      admin_(v1::AdminService::NewStub(client_.channel())),
      broker_(v1::BrokerService::NewStub(client_.channel())) {}

std::unique_ptr<grpc::ClientContext> AdminCli::Context() const {
  auto context = std::make_unique<grpc::ClientContext>();
  client_.SetDeadline(context.get());
  return context;
}

void AdminCli::PrintJson(const google::protobuf::Message& message) {
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &text, options);
  *out_ << text << "\n";
}

absl::Status AdminCli::Queues() {
  v1::ListQueuesResponse response;
  grpc::Status status = admin_->ListQueues(Context().get(), v1::ListQueuesRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  if (json_) {
    PrintJson(response);
    return absl::OkStatus();
  }
  Table table({"QUEUE", "DUE", "SCHEDULED", "ACTIVE", "COMPLETED", "DEAD", "PAUSED",
               "OLDEST DUE"});
  for (const v1::QueueStats& q : response.queues()) {
    table.AddRow({q.queue(), absl::StrCat(q.pending_due()), absl::StrCat(q.pending_scheduled()),
                  absl::StrCat(q.active()), absl::StrCat(q.completed()), absl::StrCat(q.dead()),
                  q.paused() ? "yes" : "no", Age(q.oldest_due_age_ms())});
  }
  *out_ << table.ToString();
  return absl::OkStatus();
}

absl::Status AdminCli::Stats(const std::string& queue) {
  v1::GetQueueStatsRequest request;
  request.set_queue(queue);
  v1::GetQueueStatsResponse response;
  grpc::Status status = admin_->GetQueueStats(Context().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  const v1::QueueStats& q = response.stats();
  if (json_) {
    PrintJson(q);
    return absl::OkStatus();
  }
  *out_ << "queue:               " << q.queue() << "\n"
        << "pending (due):       " << q.pending_due() << "\n"
        << "pending (scheduled): " << q.pending_scheduled() << "\n"
        << "active:              " << q.active() << "\n"
        << "completed:           " << q.completed() << "\n"
        << "dead:                " << q.dead() << "\n"
        << "paused:              " << (q.paused() ? "yes" : "no") << "\n"
        << "partitions:          " << std::max(1, q.partitions()) << "\n"
        << "default job timeout: "
        << (q.has_default_job_timeout_ms() ? TimeoutText(q.default_job_timeout_ms())
                                            : "the broker's")
        << "\n"
        << "rate limit:          "
        << (q.has_rate_limit() ? RateLimitText(q.rate_limit()) : "none") << "\n"
        << "max active:          "
        << (q.max_active() > 0 ? absl::StrCat(q.max_active()) : "none") << "\n"
        << "max active per key:  "
        << (q.max_active_per_key() > 0 ? absl::StrCat(q.max_active_per_key()) : "none") << "\n"
        << "rate limit per key:  "
        << (q.has_key_rate_limit() ? RateLimitText(q.key_rate_limit()) : "none") << "\n"
        << "oldest due:          " << Age(q.oldest_due_age_ms()) << "\n";
  return absl::OkStatus();
}

absl::Status AdminCli::Jobs(const std::string& queue, const ListJobsOptions& options) {
  v1::ListJobsRequest request;
  request.set_queue(queue);
  v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
  if (!v1::JobState_Parse(absl::StrCat("JOB_STATE_", absl::AsciiStrToUpper(options.state)), &state)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--state: must be pending, active, completed or dead, got \"", options.state, "\""));
  }
  request.set_state(state);
  request.set_page_size(options.limit);
  request.set_oldest_first(options.oldest_first);
  request.set_type(options.type);
  request.set_page_token(options.page_token);
  v1::ListJobsResponse response;
  grpc::Status status = admin_->ListJobs(Context().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  if (json_) {
    PrintJson(response);
    return absl::OkStatus();
  }
  Table table({"ID", "TYPE", "STATE", "ATTEMPTS", "PRIORITY", "DUE", "FINISHED", "ERROR"});
  for (const v1::Job& job : response.jobs()) {
    table.AddRow({job.id(), job.type(), StateName(job.state()),
                  absl::StrCat(job.attempts(), "/", job.max_attempts()),
                  absl::StrCat(job.priority()), Time(job.available_at_ms()),
                  Time(job.finished_at_ms()), Truncate(job.error(), 60)});
  }
  *out_ << table.ToString();
  if (!response.next_page_token().empty()) {
    *out_ << "more: --page-token " << response.next_page_token() << "\n";
  }
  return absl::OkStatus();
}

absl::Status AdminCli::Job(const std::string& queue, const std::string& id,
                           const std::string& idempotency_key) {
  v1::GetJobRequest request;
  request.set_queue(queue);
  request.set_job_id(id);
  request.set_idempotency_key(idempotency_key);
  v1::GetJobResponse response;
  grpc::Status status = broker_->GetJob(Context().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  PrintJob(response.job());
  return absl::OkStatus();
}

absl::Status AdminCli::Wait(const std::string& queue, const std::string& id,
                            int64_t timeout_ms) {
  client::WaitOptions options;
  if (timeout_ms > 0) options.timeout = absl::Milliseconds(timeout_ms);
  options.on_update = [this](const v1::Job& job) {
    if (json_) return;  // the final job only
    *out_ << StateName(job.state()) << " (attempt " << job.attempts() << "/"
          << job.max_attempts() << ")" << std::endl;
  };
  absl::StatusOr<v1::Job> job = client_.WaitJob(queue, id, options);
  if (!job.ok()) return job.status();
  PrintJob(*job);
  if (job->state() == v1::JOB_STATE_DEAD) {
    return absl::FailedPreconditionError(absl::StrCat("job ", id, " is dead: ", job->error()));
  }
  return absl::OkStatus();
}

absl::Status AdminCli::Watch(const std::vector<std::string>& queues,
                             const std::vector<std::string>& kinds, bool details,
                             int64_t count) {
  client::SubscribeOptions options;
  for (const std::string& name : kinds) {
    v1::EventKind kind;
    if (!v1::EventKind_Parse("EVENT_KIND_" + absl::AsciiStrToUpper(name), &kind) ||
        kind == v1::EVENT_KIND_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--kind: unknown event kind \"", name,
          "\" (enqueued, active, completed, retry, dead, cancelled, lease_expired, released, "
          "redriven, deleted, progress, cancel_requested, timed_out)"));
    }
    options.kinds.push_back(kind);
  }
  options.include_details = details;
  int64_t printed = 0;
  options.on_event = [&](const v1::QueueEvent& event) {
    if (json_) {
      PrintJson(event);
    } else {
      std::string kind = v1::EventKind_Name(event.kind()).substr(sizeof("EVENT_KIND_") - 1);
      *out_ << absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(event.at_ms()),
                                absl::UTCTimeZone())
            << "  " << event.queue() << "  " << event.job_id() << "  "
            << absl::AsciiStrToLower(kind) << "  attempt " << event.attempts() << "  type "
            << event.type();
      if (event.has_progress_percent()) *out_ << "  " << event.progress_percent() << "%";
      if (!event.progress_data().empty()) {
        *out_ << "  progress: " << Truncate(Bytes(event.progress_data()), 200);
      }
      if (!event.error().empty()) *out_ << "  error: " << Truncate(event.error(), 200);
      if (!event.result().empty()) *out_ << "  result: " << Truncate(Bytes(event.result()), 200);
      *out_ << "\n";
    }
    out_->flush();
    return count <= 0 || ++printed < count;
  };
  options.on_missed = [this] {
    *out_ << (json_ ? "{\"events_missed\":true}" : "events may have been missed") << std::endl;
    return true;
  };
  return client_.Subscribe(queues, options);
}

absl::Status AdminCli::Cancel(const std::string& queue, const std::string& id) {
  absl::StatusOr<bool> requested = client_.Cancel(queue, id);
  if (!requested.ok()) return requested.status();
  *out_ << (*requested ? "cancel requested: the run stops when its worker sees it; the job "
                         "then becomes dead \"cancelled\"\n"
                       : "cancelled: the job is dead\n");
  return absl::OkStatus();
}

void AdminCli::PrintJob(const v1::Job& job) {
  if (json_) {
    PrintJson(job);
    return;
  }
  const std::string timeout = job.timeout_ms() > 0 ? absl::StrCat(job.timeout_ms(), " ms") : "-";
  std::string progress = job.has_progress_percent() ? absl::StrCat(job.progress_percent(), "%") : "";
  if (!job.progress_data().empty()) {
    absl::StrAppend(&progress, progress.empty() ? "" : " ", Truncate(Bytes(job.progress_data()), 200));
  }
  if (progress.empty()) progress = "-";
  *out_ << "id:              " << job.id() << "\n"
        << "queue:           " << job.queue() << "\n"
        << "type:            " << job.type() << "\n"
        << "state:           " << StateName(job.state()) << "\n"
        << "attempts:        " << job.attempts() << "/" << job.max_attempts() << "\n"
        << "priority:        " << job.priority() << "\n"
        << "created:         " << Time(job.created_at_ms()) << "\n"
        << "due:             " << Time(job.available_at_ms()) << "\n"
        << "lease expires:   " << Time(job.lease_expires_at_ms()) << "\n"
        << "finished:        " << Time(job.finished_at_ms()) << "\n"
        << "worker:          " << job.worker_id() << "\n"
        << "idempotency key: " << job.idempotency_key() << "\n"
        << "concurrency key: " << job.concurrency_key() << "\n"
        << "timeout:         " << timeout << "\n"
        << "run deadline:    " << Time(job.run_deadline_ms()) << "\n"
        << "cancel asked:    " << Time(job.cancel_requested_at_ms()) << "\n"
        << "progress:        " << progress << "\n"
        << "error:           " << job.error() << "\n";
  // The error history, oldest first: "run N at TIME: error" per line.
  for (int i = 0; i < job.errors_size(); ++i) {
    const v1::JobError& e = job.errors(i);
    *out_ << (i == 0 ? "errors:          " : "                 ") << "run " << e.attempt()
          << " at " << Time(e.at_ms()) << ": " << Truncate(e.error(), 200) << "\n";
  }
  // Dependencies: the parents, how many have not ended, their results.
  if (job.depends_on_size() > 0) {
    *out_ << "depends on:      " << absl::StrJoin(job.depends_on(), ", ") << " ("
          << job.dependencies_left() << " left"
          << (job.run_after_failed_dependency() ? ", runs after a failed one" : "") << ")\n";
  }
  const std::map<std::string, std::string> results(job.dependency_results().begin(),
                                                   job.dependency_results().end());
  for (const auto& [parent, result] : results) {
    *out_ << "result of " << parent << ": " << Bytes(result) << "\n";
  }
  *out_ << "payload:         " << Bytes(job.payload()) << "\n"
        << "result:          " << Bytes(job.result()) << "\n";
}

absl::Status AdminCli::RetryDead(const std::string& queue, const std::vector<std::string>& ids,
                                 bool all, const std::string& type) {
  v1::RetryDeadRequest request;
  request.set_queue(queue);
  for (const std::string& id : ids) request.add_job_ids(id);
  request.set_all(all);
  request.set_type(type);
  v1::RetryDeadResponse response;
  grpc::Status status = admin_->RetryDead(Context().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  if (json_) {
    PrintJson(response);
  } else {
    *out_ << "moved " << response.moved() << " dead job(s) of " << queue << " back to pending\n";
  }
  return absl::OkStatus();
}

absl::Status AdminCli::PurgeDead(const std::string& queue, int64_t older_than_ms) {
  v1::PurgeDeadRequest request;
  request.set_queue(queue);
  request.set_older_than_ms(older_than_ms);
  v1::PurgeDeadResponse response;
  grpc::Status status = admin_->PurgeDead(Context().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  if (json_) {
    PrintJson(response);
  } else {
    *out_ << "purged " << response.purged() << " dead job(s) of " << queue << "\n";
  }
  return absl::OkStatus();
}

absl::Status AdminCli::DeleteQueue(const std::string& queue, bool force) {
  v1::DeleteQueueRequest request;
  request.set_queue(queue);
  request.set_force(force);
  v1::DeleteQueueResponse response;
  grpc::Status status = admin_->DeleteQueue(Context().get(), request, &response);
  if (!status.ok()) return FromGrpc(status);
  if (json_) {
    PrintJson(response);
  } else {
    *out_ << "deleted queue " << queue << " and " << response.deleted() << " job(s)\n";
  }
  return absl::OkStatus();
}

absl::Status AdminCli::Pause(const std::string& queue, bool paused) {
  grpc::Status status;
  if (paused) {
    v1::PauseQueueRequest request;
    request.set_queue(queue);
    v1::PauseQueueResponse response;
    status = admin_->PauseQueue(Context().get(), request, &response);
  } else {
    v1::ResumeQueueRequest request;
    request.set_queue(queue);
    v1::ResumeQueueResponse response;
    status = admin_->ResumeQueue(Context().get(), request, &response);
  }
  if (!status.ok()) return FromGrpc(status);
  if (json_) {
    *out_ << nlohmann::json{{"queue", queue}, {"paused", paused}}.dump() << "\n";
  } else {
    *out_ << "queue " << queue << (paused ? " paused" : " resumed") << "\n";
  }
  return absl::OkStatus();
}

namespace {

// The text of rate limit flag `flag` (--rate-limit, --key-rate-limit):
// COUNT/INTERVAL_MS[/BURST], or "off" (a RateLimit with count 0: removed)
// when `may_remove`; "": none given.
absl::StatusOr<std::optional<v1::RateLimit>> ParseRateLimitFlag(absl::string_view flag,
                                                                 const std::string& text,
                                                                 bool may_remove) {
  if (text.empty()) return std::nullopt;
  if (may_remove && text == "off") return v1::RateLimit();  // count 0: removed
  std::vector<std::string> parts = absl::StrSplit(text, '/');
  v1::RateLimit limit;
  int32_t count = 0, burst = 0;
  int64_t interval_ms = 0;
  if ((parts.size() != 2 && parts.size() != 3) || !absl::SimpleAtoi(parts[0], &count) ||
      !absl::SimpleAtoi(parts[1], &interval_ms) ||
      (parts.size() == 3 && !absl::SimpleAtoi(parts[2], &burst))) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": must be COUNT/INTERVAL_MS[/BURST]",
                     may_remove ? " or off" : "", ", got ", text));
  }
  limit.set_count(count);
  limit.set_interval_ms(interval_ms);
  limit.set_burst(burst);
  return limit;
}

}  // namespace

namespace {

// Sets the fields of CreateQueueRequest or UpdateQueueRequest `request`
// that `flags` give (the rate limits parsed: `limit`, `key_limit`).
template <typename Request>
void SetQueueFields(const AdminCli::QueueFlags& flags,
                    const std::optional<v1::RateLimit>& limit,
                    const std::optional<v1::RateLimit>& key_limit, Request& request) {
  request.set_partitions(flags.partitions);
  if (flags.job_timeout_ms) request.set_default_job_timeout_ms(*flags.job_timeout_ms);
  if (limit) *request.mutable_rate_limit() = *limit;
  if (flags.max_active) request.set_max_active(*flags.max_active);
  if (flags.max_active_per_key) request.set_max_active_per_key(*flags.max_active_per_key);
  if (key_limit) *request.mutable_key_rate_limit() = *key_limit;
}

// The text of a given rate limit flag's value.
std::string RateLimitChange(const v1::RateLimit& limit) {
  return limit.count() == 0 ? "removed" : RateLimitText(ResolvedBurst(limit));
}

}  // namespace

absl::Status AdminCli::SetQueue(const std::string& queue, const QueueFlags& flags, bool create) {
  absl::StatusOr<std::optional<v1::RateLimit>> limit =
      ParseRateLimitFlag("--rate-limit", flags.rate_limit, !create);
  if (!limit.ok()) return limit.status();
  absl::StatusOr<std::optional<v1::RateLimit>> key_limit =
      ParseRateLimitFlag("--key-rate-limit", flags.key_rate_limit, !create);
  if (!key_limit.ok()) return key_limit.status();
  grpc::Status status;
  int before = 0;
  if (create) {
    v1::CreateQueueRequest request;
    request.set_queue(queue);
    SetQueueFields(flags, *limit, *key_limit, request);
    v1::CreateQueueResponse response;
    status = admin_->CreateQueue(Context().get(), request, &response);
  } else {
    v1::UpdateQueueRequest request;
    request.set_queue(queue);
    SetQueueFields(flags, *limit, *key_limit, request);
    v1::UpdateQueueResponse response;
    status = admin_->UpdateQueue(Context().get(), request, &response);
    before = response.previous_partitions();
  }
  if (!status.ok()) return FromGrpc(status);
  const int now = flags.partitions > 0 ? flags.partitions : std::max(1, before);
  if (json_) {
    nlohmann::json out = {{"queue", queue}, {"partitions", now}};
    if (!create) out["previous_partitions"] = before;
    if (flags.job_timeout_ms) out["default_job_timeout_ms"] = *flags.job_timeout_ms;
    if (*limit) out["rate_limit"] = flags.rate_limit;
    if (flags.max_active) out["max_active"] = *flags.max_active;
    if (flags.max_active_per_key) out["max_active_per_key"] = *flags.max_active_per_key;
    if (*key_limit) out["key_rate_limit"] = flags.key_rate_limit;
    *out_ << out.dump() << "\n";
    return absl::OkStatus();
  }
  if (create) {
    *out_ << "created queue " << queue << " with " << now << " partition(s)";
  } else {
    *out_ << "queue " << queue << ": " << before << " -> " << now << " partition(s)";
  }
  if (flags.job_timeout_ms) {
    *out_ << ", default job timeout " << TimeoutText(*flags.job_timeout_ms);
  }
  if (*limit) *out_ << ", rate limit " << RateLimitChange(**limit);
  if (flags.max_active) {
    *out_ << ", max active " << (*flags.max_active == 0 ? "none" : absl::StrCat(*flags.max_active));
  }
  if (flags.max_active_per_key) {
    *out_ << ", max active per key "
          << (*flags.max_active_per_key == 0 ? "none" : absl::StrCat(*flags.max_active_per_key));
  }
  if (*key_limit) *out_ << ", rate limit per key " << RateLimitChange(**key_limit);
  *out_ << "\n";
  return absl::OkStatus();
}

absl::StatusOr<v1::EnqueueRequest> AdminCli::MakeEnqueue(const std::string& queue,
                                                       const std::string& type,
                                                       const EnqueueOptions& options) {
  v1::EnqueueRequest request;
  request.set_queue(queue);
  request.set_type(type);
  if (!options.json.empty()) {
    nlohmann::json payload = nlohmann::json::parse(options.json, nullptr, false);
    if (payload.is_discarded()) {
      return absl::InvalidArgumentError("--json: is not valid JSON");
    }
    request.set_payload(payload.dump());
  } else {
    request.set_payload(options.payload);
  }
  request.set_priority(options.priority);
  request.set_delay_ms(options.delay_ms);
  request.set_max_attempts(options.max_attempts);
  request.set_idempotency_key(options.idempotency_key);
  request.set_concurrency_key(options.concurrency_key);
  request.set_timeout_ms(options.timeout_ms);
  for (const std::string& id : options.depends_on) request.add_depends_on(id);
  request.set_run_after_failed_dependency(options.run_after_failed_dependency);
  return request;
}

absl::Status AdminCli::Enqueue(const std::string& queue, const std::string& type,
                               const EnqueueOptions& options) {
  absl::StatusOr<v1::EnqueueRequest> request = MakeEnqueue(queue, type, options);
  if (!request.ok()) return request.status();
  v1::EnqueueResponse response;
  grpc::Status status = broker_->Enqueue(Context().get(), *request, &response);
  if (!status.ok()) return FromGrpc(status);
  *out_ << response.job_id() << (response.duplicate() ? " (duplicate)" : "") << "\n";
  return absl::OkStatus();
}

}  // namespace jobwire::cli
