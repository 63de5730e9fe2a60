// jobwire C++ worker: runs registered handlers on jobs pushed over a Claim
// stream, with the behaviour every client shares (docs/clients.md):
// max_in_flight = free handler slots, lease renewal every lease_ms / 3 while a
// handler runs, Ack / Fail retried on UNAVAILABLE until the lease ends, stream
// reconnect with jittered backoff, graceful Stop.
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
// `concurrency` at once, so they must be thread-safe.
#ifndef JOBWIRE_CLIENT_CPP_WORKER_H_
#define JOBWIRE_CLIENT_CPP_WORKER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "client/cpp/job.h"

namespace jobwire::client {

// A handler returns the result bytes to Ack with, or an error to Fail with
// (text "<CODE>: <message>"). A thrown exception fails the job with
// "<exception type>: <what()>".
using Handler = std::function<absl::StatusOr<std::string>(const Job&)>;

// Marks `status` so that the job fails straight to DEAD (non_retryable).
absl::Status NonRetryable(absl::Status status);
bool IsNonRetryable(const absl::Status& status);

// The final outcome of one delivered job, as reported to on_outcome.
struct Outcome {
  // "ack_ok", "ack_error", "fail_ok" or "fail_error".
  std::string kind;
  // For *_error the status code name (e.g. "FAILED_PRECONDITION"); for
  // fail_ok "RETRY_SCHEDULED" or "DEAD"; empty for ack_ok.
  std::string detail;
};

struct WorkerOptions {
  // host:port; empty means $JOBWIRE_ADDR, else localhost:50051.
  std::string address;
  // Queues to consume, earlier first. REQUIRES: not empty.
  std::vector<std::string> queues;
  // Handlers running at once. REQUIRES: >= 1.
  int concurrency = 1;
  // Lease per job; renewed every lease_ms / 3 while its handler runs.
  int64_t lease_ms = 30000;
  // Empty means "cpp-<host>-<pid>".
  std::string worker_id;
  // How long Run waits for running handlers after Stop.
  absl::Duration grace = absl::Seconds(25);
  // Deadline of every unary call.
  absl::Duration timeout = absl::Seconds(10);
  // Called once per delivered job with its final outcome. Optional.
  std::function<void(const Job&, const Outcome&)> on_outcome;
  // Where the worker logs (unknown job types, lost leases, reconnects).
  // Empty means one line on stderr.
  std::function<void(const std::string&)> log;
};

class Worker {
 public:
  explicit Worker(WorkerOptions options);
  // Stops the worker and waits for handlers still running.
  ~Worker();

  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // REQUIRES: called before Run.
  void Register(std::string type, Handler handler);

  // Consumes jobs until Stop, then waits up to `grace` for running handlers
  // (and their Ack / Fail) and returns OK. Returns INVALID_ARGUMENT at once
  // when the broker rejects the Claim request. Handlers still running after
  // `grace` keep running; the destructor waits for them.
  // REQUIRES: called once.
  absl::Status Run();

  // Ends the Claim stream (no new jobs) and makes Run return after the drain.
  void Stop();

  const std::string& worker_id() const { return worker_id_; }

 private:
  // A delivered job waiting for, or running on, a handler thread.
  struct Task {
    Job job;
    std::string lease_token;
  };
  // Lease bookkeeping of a running job, for renewal and the Ack retry limit.
  struct Lease {
    const Job* job;
    std::string lease_token;
    absl::Time expires;     // local estimate
    absl::Time next_renew;  // expires - 2/3 of the lease
    bool lost = false;
  };

  // Claim streams, one after another, until Stop. Returns the fatal error.
  absl::Status StreamLoop();
  void HandlerThread();
  void RenewThread();
  void Process(const Task& task);
  // Runs the handler; returns the result or the failure text in the status.
  absl::StatusOr<std::string> RunHandler(const Job& job);
  void Settle(const Task& task, const absl::StatusOr<std::string>& result);
  // Repeats `call` while it answers UNAVAILABLE / DEADLINE_EXCEEDED and the
  // lease under `lease_key` lasts.
  absl::Status Retry(const std::string& lease_key, const std::function<absl::Status()>& call);
  void Log(const std::string& line);

  const WorkerOptions options_;
  const std::string worker_id_;
  Client client_;
  absl::flat_hash_map<std::string, Handler> handlers_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;  // handler threads may exit
  int running_ ABSL_GUARDED_BY(mu_) = 0;        // delivered, not yet settled
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Lease> leases_ ABSL_GUARDED_BY(mu_);  // by LeaseKey
  grpc::ClientContext* stream_context_ ABSL_GUARDED_BY(mu_) = nullptr;

  std::vector<std::thread> threads_;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_WORKER_H_
