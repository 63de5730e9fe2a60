// jobwire C++ worker: runs registered handlers on jobs pushed over a Claim
// stream, with the behaviour every client shares (docs/clients.md):
// max_in_flight = free handler slots, lease renewal every lease / 3 from
// delivery until the job is settled (a lost lease is signalled to the handler:
// Job::lease_lost, Job::stop_token), Ack / Fail retried on UNAVAILABLE,
// DEADLINE_EXCEEDED and CANCELLED (never caused by this client) until
// the lease ends (ack_unknown / fail_unknown when still unanswered then; sent
// only once when the lease is already known lost),
// deliveries whose lease has ended before their handler starts dropped,
// stream reconnect with exponential backoff (100 ms to 5 s, full jitter),
// graceful Stop that abandons handlers still running after the grace.
//
//   jobwire::client::Worker worker({.queues = {"emails"}, .concurrency = 8});
//   worker.Register("send-email", [](const jobwire::client::Job& job)
//                                     -> absl::StatusOr<std::string> {
//     Send(job.Json()["to"]);
//     return std::string("sent");
//   });
//   absl::Status status = worker.Run();  // until Stop()
//
// Thread safety: Register before Run. Stop may be called from any thread.
// Handlers and on_outcome run on the worker's handler threads, up to
// `concurrency` at once, so they must be thread-safe. No on_outcome or log
// call is made after Run has returned.
#ifndef JOBWIRE_CLIENT_CPP_WORKER_H_
#define JOBWIRE_CLIENT_CPP_WORKER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
// Beside this header, in the tree (client/cpp/) and installed (include/jobwire/).
#include "client.h"
#include "job.h"
#include "trace_context.h"

namespace jobwire::client {

// A handler returns the result bytes to Ack with, or an error to Fail with
// (text "<CODE>: <message>"; see NonRetryable and RetryAfter). A thrown
// exception fails the job with "<exception type>: <what()>". The error text
// is cut to kMaxErrorBytes at a UTF-8 character boundary.
using Handler = std::function<absl::StatusOr<std::string>(const Job&)>;

// Wraps every handler of a Worker (as asynq's mux.Use): it gets the job and
// the next layer (the next middleware, or the handler), and what it returns
// is what the worker settles, so it may run code around the call, change the
// result or the error, or not call `next` at all. Exceptions it throws fail
// the job like a handler's. Runs on the handler thread.
//
//   worker.Use([](const Job& job, const Handler& next) {
//     auto trace = jobwire::client::TraceContext::FromHeaders(job.headers);
//     LOG(INFO) << "job " << job.id << " trace " << (trace ? trace->trace_id : "-");
//     return next(job);
//   });
using Middleware = std::function<absl::StatusOr<std::string>(const Job&, const Handler& next)>;

// Marks `status` so that the job fails straight to DEAD (non_retryable).
absl::Status NonRetryable(absl::Status status);
bool IsNonRetryable(const absl::Status& status);

// The longest delay RetryAfter sends: the broker's limit, 7 days.
inline constexpr int64_t kMaxRetryAfterMs = 604800000;

// Marks `status` so that the job is retried after exactly `delay` instead of
// the backoff (FailRequest.retry_after_ms): `delay` rounded up to a whole ms,
// at least 1 ms, at most kMaxRetryAfterMs. The mark is a payload on the
// status (type URL "type.jobwire.dev/retry_after_ms", the decimal ms).
//
// With `keep_attempt` the run was turned away rather than failed (a
// downstream answered "rate limited, retry after X"): the Fail also carries
// keep_attempt, so this run does not count as an attempt and never uses up
// max_attempts (docs/semantics.md, "Retries and backoff"); a run that Cancel
// asked to stop, or past its deadline, counts anyway. Its mark is the
// payload "type.jobwire.dev/keep_attempt"; without it, any such mark already
// on `status` is removed (the last RetryAfter decides).
//
// A status also marked NonRetryable goes to DEAD: non_retryable wins, and
// neither retry_after_ms nor keep_attempt is sent.
//
//   return RetryAfter(absl::UnavailableError("rate limited"), absl::Seconds(30),
//                     /*keep_attempt=*/true);
absl::Status RetryAfter(absl::Status status, absl::Duration delay, bool keep_attempt = false);
// The delay of a status marked by RetryAfter, in ms (1..kMaxRetryAfterMs),
// or 0 when it is not marked.
int64_t RetryAfterMs(const absl::Status& status);
// Whether `status` was marked by RetryAfter with keep_attempt.
bool KeepsAttempt(const absl::Status& status);

// The longest Fail error text, in bytes: the broker's limit, 64 KiB.
inline constexpr size_t kMaxErrorBytes = 65536;

// The final outcome of one delivered job, as reported to on_outcome.
struct Outcome {
  // "ack_ok", "ack_error", "ack_unknown", "fail_ok", "fail_error",
  // "fail_unknown" or "expired_dropped". *_error: the broker refused the Ack
  // / Fail. *_unknown: it was still answered UNAVAILABLE / DEADLINE_EXCEEDED
  // / CANCELLED when the lease ended, or its one attempt made while the lease was known
  // lost was (not sent again), so it may or may not have been stored.
  // expired_dropped: the delivery's lease had ended before its handler could
  // start; no handler ran and nothing was sent (the broker delivers the job
  // again).
  std::string kind;
  // For *_error and *_unknown the status code name of the last answer (e.g.
  // "FAILED_PRECONDITION", "UNAVAILABLE"); for fail_ok "RETRY_SCHEDULED" or
  // "DEAD"; empty for ack_ok and expired_dropped.
  std::string detail;
};

// Counters of a Worker (Worker::stats()).
struct WorkerStats {
  // Deliveries whose lease had ended before their handler could start
  // (dropped: no handler, no Ack / Fail).
  int64_t expired_deliveries_dropped = 0;
};

struct WorkerOptions {
  // host:port; empty means $JOBWIRE_ADDR, else localhost:50051.
  std::string address;
  // Queues to consume, earlier first. REQUIRES: not empty.
  std::vector<std::string> queues;
  // Weighted fair claiming (ClaimRequest.weights): empty, the default, for
  // strict order (free slots go to the first queue with due jobs); else a
  // weight 1..1000 for every queue of `queues` and no other: while several
  // queues have due jobs, free slots split between them in proportion to
  // their weights, and a queue without due jobs leaves its share to the
  // others. Run returns INVALID_ARGUMENT for any other map.
  std::map<std::string, int> weights;
  // Handlers running at once. REQUIRES: >= 1.
  int concurrency = 1;
  // Lease per job, 1000..43200000 ms; 0 means the broker's default lease
  // (30 s out of the box). Each job's lease length is the one the broker
  // granted (ClaimedJob.lease_ms, Job::lease_ms), and renewals ask for it
  // again. Only from a broker older than that field (lease_ms 0) is it this
  // lease_ms, or 30000 (the broker's default out of the box) when this is 0;
  // the local clock is never compared with lease_expires_at_ms for it.
  // Leases are renewed every length / 3 from receipt until the job is
  // settled, also while it waits for a free handler thread.
  // REQUIRES: >= 0 (Run returns INVALID_ARGUMENT otherwise).
  int64_t lease_ms = 0;
  // Empty means "cpp-<host>-<pid>".
  std::string worker_id;
  // How long Run waits for running handlers after Stop.
  absl::Duration grace = absl::Seconds(25);
  // Deadline of every unary call (ExtendLease: at most length / 3).
  absl::Duration timeout = absl::Seconds(10);
  // Bearer token and TLS settings, as in ClientOptions.
  std::string token;
  bool tls = false;
  std::string tls_root_ca;
  std::string tls_client_cert;
  std::string tls_client_key;
  // Called once per settled job with its final outcome; not for jobs
  // abandoned after the grace. Optional.
  std::function<void(const Job&, const Outcome&)> on_outcome;
  // Where the worker logs (unknown job types, lost leases, reconnects).
  // Empty means one line on stderr.
  std::function<void(const std::string&)> log;
};

class Worker {
 public:
  explicit Worker(WorkerOptions options);
  // Stops the worker and joins its threads (at worst after one ExtendLease
  // in flight), except threads still inside a handler abandoned after the
  // grace: those are detached and never block the destructor. A detached handler runs to its end on state the worker
  // keeps alive for it (options, handlers, client); its result is discarded.
  // Anything else it uses must outlive it.
  // REQUIRES: Run is not running (never called, or returned).
  ~Worker();

  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // REQUIRES: called before Run.
  void Register(std::string type, Handler handler);

  // Adds a middleware around every handler (those registered before and
  // after this call). The first added is the outermost.
  // REQUIRES: called before Run.
  void Use(Middleware middleware);

  // Consumes jobs until Stop, then waits up to `grace` for running handlers
  // (and their Ack / Fail) and returns OK. Jobs still running (or delivered
  // and not started) after `grace` are abandoned: their leases are no longer
  // renewed, they are neither Acked nor Failed and on_outcome is not called,
  // so the broker retries them once their leases expire. Its Claim streams
  // take only the job types registered (ClaimRequest.types), so a job of
  // another type is never delivered to it: it waits for a worker that has a
  // handler for it. Returns FAILED_PRECONDITION at once when no handler is
  // registered, INVALID_ARGUMENT when lease_ms is negative, handlers for more
  // than 64 types are registered, or the broker rejects the Claim request.
  // REQUIRES: called once.
  absl::Status Run();

  // Ends the Claim stream (no new jobs) and makes Run return after the drain.
  void Stop();

  const std::string& worker_id() const;

  // The worker's counters. May be called from any thread, at any time.
  WorkerStats stats() const;

 private:
  // Everything the worker's threads use, shared with them so that a detached
  // handler thread never outlives it (defined in worker.cc).
  class Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_WORKER_H_
