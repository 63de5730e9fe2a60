// AdminCli: the commands of the `jobwire` CLI, one method each, over the
// Admin and Broker services of one broker. Each method prints its result to
// `out` (a table or key: value lines, or JSON with `json`) and returns the
// broker's status unchanged on failure (main prints it and exits non-zero).
//
// Thread safety: one command at a time.
#ifndef JOBWIRE_CLI_ADMIN_CLI_H_
#define JOBWIRE_CLI_ADMIN_CLI_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "jobwire/v1/admin.grpc.pb.h"
#include "jobwire/v1/broker.grpc.pb.h"

namespace jobwire::cli {

struct ListJobsOptions {
  std::string state = "pending";  // pending | active | completed | dead
  std::string type;
  int limit = 50;
  bool oldest_first = false;
  std::string page_token;
};

// A schedule's timing and options (the job's fields come from an
// EnqueueOptions).
struct ScheduleOptions {
  std::string cron;
  std::string time_zone;
  int64_t interval_ms = 0;
  int64_t jitter_ms = 0;
  int64_t start_at_ms = 0;
  int64_t end_at_ms = 0;
  std::string catch_up = "skip";  // skip | once
};

struct EnqueueOptions {
  std::string json;     // payload as JSON (checked and compacted)
  std::string payload;  // raw payload, when json is empty
  int32_t priority = 0;
  int64_t delay_ms = 0;
  int32_t max_attempts = 0;
  std::string idempotency_key;
  std::string concurrency_key;
  int64_t timeout_ms = 0;
  std::vector<std::string> depends_on;  // parent job ids (enqueue only)
  bool run_after_failed_dependency = false;
};

class AdminCli {
 public:
  // The connection (address, deadline of every call, token, TLS) is
  // `connection`'s, as for the C++ client.
  AdminCli(client::ClientOptions connection, std::ostream* out, bool json);

  // Not OK when a TLS file of the connection options cannot be read.
  const absl::Status& config_error() const { return client_.config_error(); }

  absl::Status Queues();
  absl::Status Stats(const std::string& queue);
  absl::Status Jobs(const std::string& queue, const ListJobsOptions& options);
  // Job `id`, or (id empty) the job enqueued with `idempotency_key`; the
  // broker refuses neither or both (INVALID_ARGUMENT).
  absl::Status Job(const std::string& queue, const std::string& id,
                   const std::string& idempotency_key = "");
  // Cancels job `id`; prints whether it is dead now (it was pending) or its
  // run was asked to stop.
  absl::Status Cancel(const std::string& queue, const std::string& id);
  // Follows job `id` until it finishes (WaitJob), printing each state it
  // reaches, then the job in full. FAILED_PRECONDITION when it ends DEAD;
  // DEADLINE_EXCEEDED after `timeout_ms` (> 0).
  absl::Status Wait(const std::string& queue, const std::string& id, int64_t timeout_ms);
  // Prints the events of `queues` (Subscribe), one line each, until
  // `count` (> 0) were printed or forever. `kinds`: event kind names
  // ("completed", "lease_expired", ...; empty: all), INVALID_ARGUMENT for an
  // unknown one. Lost events print a line "events may have been missed".
  absl::Status Watch(const std::vector<std::string>& queues, const std::vector<std::string>& kinds,
                     bool details, int64_t count);
  absl::Status RetryDead(const std::string& queue, const std::vector<std::string>& ids, bool all,
                         const std::string& type);
  absl::Status PurgeDead(const std::string& queue, int64_t older_than_ms);
  absl::Status DeleteQueue(const std::string& queue, bool force);
  absl::Status Pause(const std::string& queue, bool paused);
  // The settings flags of create-queue and update-queue.
  struct QueueFlags {
    int partitions = 0;  // 0: unchanged (update only)
    // nullopt: none / unchanged; -1 on update: removed.
    std::optional<int64_t> job_timeout_ms;
    // "COUNT/INTERVAL_MS[/BURST]"; "": none / unchanged; "off" on update:
    // removed.
    std::string rate_limit;
    // Each nullopt: none / unchanged; 0 on update: removed.
    std::optional<int32_t> max_active;
    std::optional<int32_t> max_active_per_key;
    // The rate limit of each concurrency key, as rate_limit.
    std::string key_rate_limit;
  };
  // CreateQueue (with `create`) or UpdateQueue with `flags`;
  // INVALID_ARGUMENT naming --rate-limit or --key-rate-limit when one is
  // malformed.
  absl::Status SetQueue(const std::string& queue, const QueueFlags& flags, bool create);
  absl::Status Enqueue(const std::string& queue, const std::string& type,
                       const EnqueueOptions& options);
  // PutSchedule `name`, whose runs enqueue a job of `type` to `queue`.
  absl::Status PutSchedule(const std::string& name, const std::string& queue,
                           const std::string& type, const ScheduleOptions& schedule,
                           const EnqueueOptions& job);
  absl::Status Schedules();
  // Admin ListWorkers: the Claim streams open on every replica.
  absl::Status Workers();
  absl::Status DeleteSchedule(const std::string& name);

 private:
  std::unique_ptr<grpc::ClientContext> Context() const;
  // Prints `job` in full (as JSON when json_ is set).
  void PrintJob(const v1::Job& job);
  // The request of an enqueue of `type` to `queue` with `options`;
  // INVALID_ARGUMENT when options.json is not JSON.
  static absl::StatusOr<v1::EnqueueRequest> MakeEnqueue(const std::string& queue,
                                                        const std::string& type,
                                                        const EnqueueOptions& options);
  // Prints `message` as JSON (proto field names) when json_ is set.
  void PrintJson(const google::protobuf::Message& message);

  client::Client client_;
  std::ostream* const out_;
  const bool json_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
  std::unique_ptr<v1::BrokerService::Stub> broker_;
};

}  // namespace jobwire::cli

#endif  // JOBWIRE_CLI_ADMIN_CLI_H_
