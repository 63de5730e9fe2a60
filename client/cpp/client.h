// jobwire C++ client: the producer calls and the per-job calls a worker makes,
// over one gRPC channel. The behaviour shared by every language's client is
// docs/clients.md.
//
//   jobwire::client::Client client({.address = "localhost:50051"});
//   auto id = client.EnqueueJson("emails", "send-email",
//                                nlohmann::json{{"to", "a@example.com"}});
//
// Every call carries the client's deadline. Every failure is an absl::Status
// with the gRPC code and the broker's message unchanged, and the broker's
// error details (ErrorReason and friends, error_details.h); an unreachable
// broker gives UNAVAILABLE or DEADLINE_EXCEEDED after the deadline.
//
// Thread safety: a Client is safe to use from many threads at once.
#ifndef JOBWIRE_CLIENT_CPP_CLIENT_H_
#define JOBWIRE_CLIENT_CPP_CLIENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "error_details.h"
#include "grpcpp/grpcpp.h"
#include "jobwire/v1/broker.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace jobwire::client {

struct ClientOptions {
  // host:port; empty means $JOBWIRE_ADDR, else localhost:50051.
  std::string address;
  // Deadline of every unary call.
  absl::Duration timeout = absl::Seconds(10);
  // Bearer token sent as "authorization: Bearer <token>" on every call;
  // empty means $JOBWIRE_TOKEN, else none.
  std::string token = "";
  // TLS: on when `tls` is true or any tls_* field is set. Each tls_* field
  // holds PEM text (starting with "-----BEGIN") or the path of a PEM file.
  // tls_root_ca: the CA(s) to trust (empty: the system roots);
  // tls_client_cert / tls_client_key: a certificate for mutual TLS. A file
  // that cannot be read makes every call fail with its error (Claim: the
  // stream ends CANCELLED).
  bool tls = false;
  std::string tls_root_ca = "";
  std::string tls_client_cert = "";
  std::string tls_client_key = "";
};

// Unset (zero / empty) fields take the broker's defaults.
struct EnqueueOptions {
  int32_t priority = 0;
  int64_t delay_ms = 0;
  int64_t run_at_ms = 0;
  int32_t max_attempts = 0;
  std::string idempotency_key;
  int64_t backoff_base_ms = 0;
  int64_t backoff_max_ms = 0;
  // How long the job is kept once completed; unset: the broker's
  // --completed_retention_ms. 0 deletes it on ack (GetJob then answers
  // NOT_FOUND). At most the broker's --completed_retention_max_ms.
  std::optional<int64_t> completed_retention_ms;
  // The longest a run may take, 0..604800000 ms; 0: the broker's
  // --default_job_timeout_ms (none out of the box). See Job::deadline.
  int64_t timeout_ms = 0;
  // Metadata that travels with the job to its handler (Job::headers), e.g.
  // W3C trace context; limits in broker.proto (EnqueueRequest.headers).
  std::map<std::string, std::string> headers;
  // Groups the job under the queue's max_active_per_key and key_rate_limit
  // limits (e.g. a customer id); "" for none. At most 128 bytes.
  std::string concurrency_key;
  // Jobs of the same queue (0..20 distinct ids) that must COMPLETE before
  // this job is due (docs/semantics.md, "Dependencies"), or of another
  // queue (or partition), named "<queue>/<id>" ("Parents in other queues":
  // their results and errors are keyed so); until then it is
  // PENDING with dependencies_left() > 0, then its handler gets their results
  // (Job::dependency_results). A parent that ends DEAD (or is deleted) makes
  // this job DEAD "dependency failed: <id>" unless
  // run_after_failed_dependency. An id that names no job of the queue
  // refuses the job: NOT_FOUND, ErrorReason DEPENDENCY_NOT_FOUND
  // (ErrorMetadata "job_id": that id); nothing is stored.
  std::vector<std::string> depends_on;
  // A parent that ends DEAD or is deleted counts as done (without a result)
  // instead of failing this job.
  bool run_after_failed_dependency = false;
  // EnqueueBatch only (Enqueue: INVALID_ARGUMENT): parents among the
  // batch's earlier jobs, by index in `jobs`, as depends_on names stored
  // ones (with depends_on at most 20), so that one call stores a graph
  // (docs/semantics.md, "Dependencies"). A child whose batch parent was
  // refused is refused too (INVALID_ARGUMENT, or NOT_FOUND
  // DEPENDENCY_NOT_FOUND when the parent was not stored), its message
  // naming the parent.
  std::vector<int> depends_on_batch_index;
};

struct Enqueued {
  std::string job_id;
  // True when the idempotency key matched an existing job (job_id is its id).
  bool duplicate = false;
};

struct WaitOptions {
  // How long to wait for the job to finish; InfiniteDuration: no limit.
  absl::Duration timeout = absl::InfiniteDuration();
  // Called with the job as the broker reads it: at once, then on each
  // change of its state or attempts, the last time with the final job.
  std::function<void(const v1::Job&)> on_update;
};

struct SubscribeOptions {
  // The kinds of events wanted; empty: all.
  std::vector<v1::EventKind> kinds;
  // Fill QueueEvent.result (COMPLETED) and error (RETRY, DEAD).
  bool include_details = false;
  // Called once, when the stream is live: every event from then on is seen.
  std::function<void()> on_subscribed;
  // Called with each event; returning false ends Subscribe (OK).
  std::function<bool(const v1::QueueEvent&)> on_event;
  // Called when events may have been lost (the broker re-subscribed to
  // Redis, or this client subscribed again after the stream broke);
  // returning false ends Subscribe (OK).
  std::function<bool()> on_missed;
};

// One job of an EnqueueBatch call.
struct BatchJob {
  std::string type;
  std::string payload;
  EnqueueOptions options;
};

// Converts a gRPC status to the absl::Status with the same code and message,
// and the broker's error details as payloads (error_details.h).
absl::Status FromGrpc(const grpc::Status& status);

// The address a client with `address` connects to (see ClientOptions).
std::string ResolveAddress(absl::string_view address);

class Client {
 public:
  explicit Client(ClientOptions options = {});

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Stores one job with raw payload bytes.
  absl::StatusOr<Enqueued> Enqueue(absl::string_view queue, absl::string_view type,
                                   absl::string_view payload, const EnqueueOptions& options = {});
  // Stores one job whose payload is `payload` encoded as JSON.
  absl::StatusOr<Enqueued> EnqueueJson(absl::string_view queue, absl::string_view type,
                                       const nlohmann::json& payload,
                                       const EnqueueOptions& options = {});

  // Stores up to 1000 jobs; one result per job in order, each an Enqueued or
  // that job's own error. The call fails as a whole only when the batch is
  // rejected (empty or too large) or the broker is unreachable.
  absl::StatusOr<std::vector<absl::StatusOr<Enqueued>>> EnqueueBatch(
      absl::string_view queue, const std::vector<BatchJob>& jobs);

  absl::StatusOr<v1::Job> GetJob(absl::string_view queue, absl::string_view job_id);
  // The job enqueued with idempotency key `key` (EnqueueOptions), while the
  // key's dedup window lasts; NOT_FOUND when none.
  absl::StatusOr<v1::Job> GetJobByIdempotencyKey(absl::string_view queue, absl::string_view key);
  // Cancels a job: a pending one becomes DEAD "cancelled" at once (answers
  // false); an active one is asked to stop (answers true): its Worker's
  // handler is signalled (Job::cancelled) and the job becomes DEAD
  // "cancelled" when the run fails or its lease ends (an Ack that comes
  // first completes it). FAILED_PRECONDITION when completed or dead.
  absl::StatusOr<bool> Cancel(absl::string_view queue, absl::string_view job_id);
  // Records an active run's progress (ReportProgress); Job::Progress calls
  // it with the run's token. See Job::Progress.
  absl::Status ReportProgress(absl::string_view queue, absl::string_view job_id,
                              absl::string_view lease_token, std::optional<int32_t> percent,
                              std::string data = {});
  // Waits for job `job_id` to finish (WaitJob) and returns it COMPLETED (with
  // its result) or DEAD (with its error): check job.state(). The broker
  // pushes changes; nothing polls. DEADLINE_EXCEEDED (ErrorReason
  // WAIT_TIMEOUT) when options.timeout passes first; NOT_FOUND for an
  // unknown job. When the stream breaks with UNAVAILABLE (the broker
  // restarts or drains, Redis is away) or CANCELLED (gRPC's code for a call
  // that reached a broker as it stopped; this client never cancels it) it
  // calls again with the time left, after a backoff of 100 ms to 5 s.
  absl::StatusOr<v1::Job> WaitJob(absl::string_view queue, absl::string_view job_id,
                                  const WaitOptions& options = {});

  // Follows the events of `queues` (Subscribe) until a callback returns
  // false (OK) or an error ends it. Errors before the stream is live are
  // returned (INVALID_ARGUMENT, PERMISSION_DENIED, UNAVAILABLE, ...); once
  // live, a stream that breaks with UNAVAILABLE, CANCELLED (as for WaitJob)
  // or RESOURCE_EXHAUSTED (SUBSCRIBER_TOO_SLOW, TOO_MANY_SUBSCRIPTIONS) is
  // opened again after a backoff of 100 ms to 5 s (or the broker's
  // RetryInfo), and on_missed is called once it is live again; any other
  // error is returned. Blocks the calling thread; the callbacks run on it.
  absl::Status Subscribe(const std::vector<std::string>& queues, const SubscribeOptions& options);

  // The per-job calls of a worker (Worker makes them; see broker.proto).
  absl::Status Ack(absl::string_view queue, absl::string_view job_id,
                   absl::string_view lease_token, absl::string_view result);
  // Up to 1000 acks in one call; one status per ack in order. The call fails
  // as a whole only when the batch is rejected (empty, too large, a queue the
  // token may not claim from) or the broker or Redis is unreachable.
  absl::StatusOr<std::vector<absl::Status>> AckBatch(const v1::AckBatchRequest& request);
  absl::StatusOr<v1::FailResponse> Fail(const v1::FailRequest& request);
  // Returns the new lease expiry (epoch ms, Redis clock). The call's deadline
  // is min(timeout, the client's timeout), so that a renewal never outlives
  // the lease it renews.
  absl::StatusOr<int64_t> ExtendLease(absl::string_view queue, absl::string_view job_id,
                                      absl::string_view lease_token, int64_t lease_ms,
                                      absl::Duration timeout = absl::InfiniteDuration());

  // Opens a Claim stream on `context` (which the caller may TryCancel).
  std::unique_ptr<grpc::ClientReader<v1::ClaimResponse>> Claim(
      grpc::ClientContext* context, const v1::ClaimRequest& request);
  // Opens a Work stream on `context` (which the caller may TryCancel); the
  // caller writes its claim first.
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkRequest, v1::WorkResponse>> Work(
      grpc::ClientContext* context);
  // The per-ack statuses of `answer` (an AckBatchResponse's or a
  // WorkAcksAnswer's results), or its error; `acks` acks were sent.
  template <typename Answer>
  static absl::StatusOr<std::vector<absl::Status>> AckResults(const Answer& answer, int acks);

  const std::string& address() const { return address_; }
  absl::Duration timeout() const { return timeout_; }

  // For stubs of other services on the same connection (the CLI's Admin
  // calls): the channel, and SetDeadline for each call's context.
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // Sets the deadline min(timeout, the client's timeout) on `context`, and
  // the authorization metadata.
  void SetDeadline(grpc::ClientContext* context,
                   absl::Duration timeout = absl::InfiniteDuration()) const;
  // Not OK when a TLS file of the options could not be read; then every
  // call of this Client fails with it.
  const absl::Status& config_error() const { return config_error_; }

 private:
  absl::StatusOr<v1::Job> GetJob(const v1::GetJobRequest& request);

  const std::string address_;
  const absl::Duration timeout_;
  const std::string authorization_;  // "Bearer <token>" or empty
  absl::Status config_error_;        // a TLS file that could not be read
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::BrokerService::Stub> stub_;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_CLIENT_H_
