// A job as a worker's handler sees it (see docs/clients.md).
#ifndef JOBWIRE_CLIENT_CPP_JOB_H_
#define JOBWIRE_CLIENT_CPP_JOB_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "run_signal.h"
#include "nlohmann/json.hpp"

namespace jobwire::client {

// Thread safety: the fields are not modified while a handler runs; the
// signal accessors and Progress may be used from any thread.
struct Job {
  // A job whose stop signal is its own (never raised by a Worker).
  Job() : signal_(std::make_shared<RunSignal>()) {}
  // A job whose stop signal is `signal` and whose Progress calls `progress`.
  // The Worker builds every job this way; a test of a handler can too.
  using ProgressFn = std::function<absl::Status(std::optional<int32_t>, std::string)>;
  explicit Job(std::shared_ptr<RunSignal> signal, ProgressFn progress = nullptr)
      : signal_(std::move(signal)), progress_(std::move(progress)) {}

  std::string id;
  std::string queue;
  std::string type;
  // The producer's bytes, unchanged.
  std::string payload;
  // The producer's headers (EnqueueOptions::headers), unchanged.
  std::map<std::string, std::string> headers;
  // EnqueueOptions::concurrency_key; "" when none.
  std::string concurrency_key;
  // EnqueueOptions::depends_on: the parents this job waited for.
  std::vector<std::string> depends_on;
  // Each parent's result by parent id, bytes unchanged (a parent that
  // completed without a result, or failed under run_after_failed_dependency,
  // is absent).
  std::map<std::string, std::string> dependency_results;
  // EnqueueOptions::run_after_failed_dependency: a parent absent from
  // dependency_results may have failed.
  bool run_after_failed_dependency = false;
  // 1 for the first run; counts the current run.
  int32_t attempt = 0;
  int32_t max_attempts = 0;
  // Lease expiry on the Redis clock, epoch ms, as of the claim.
  int64_t lease_expires_at_ms = 0;
  // The lease the broker granted, in ms (ClaimedJob.lease_ms: the Worker's
  // lease_ms, or the broker default, or the job's timeout when shorter). 0
  // from a broker older than that field.
  int64_t lease_ms = 0;
  // The longest this run may take (EnqueueOptions::timeout_ms, or the
  // broker's default); 0: no limit.
  int64_t timeout_ms = 0;
  // This run's deadline by this process's clock: receipt + timeout_ms;
  // InfiniteFuture without a timeout. At the deadline the stop signal is
  // raised (StopReason::kTimedOut) and the broker refuses the run's Ack.
  absl::Time deadline = absl::InfiniteFuture();

  // True once the Worker learnt that the lease is lost (ExtendLease answered
  // FAILED_PRECONDITION or NOT_FOUND): the job has moved on, and this run's
  // Ack / Fail will be refused. The handler may stop early.
  bool lease_lost() const { return signal_->Has(StopReason::kLeaseLost); }
  // True once Cancel asked this run to stop: the handler should give up
  // (return an error, or throw); the job then ends DEAD "cancelled".
  bool cancelled() const { return signal_->Has(StopReason::kCancelled); }
  // True once the run reached its deadline.
  bool timed_out() const { return signal_->Has(StopReason::kTimedOut); }
  // Why the run should stop: the first reason raised, kNone while none was.
  StopReason stop_reason() const { return signal_->first(); }
  // Stop-requested at the first of: lease lost, cancelled, timed out; for
  // std::stop_callback or std::condition_variable_any::wait.
  std::stop_token stop_token() const { return signal_->token(); }

  // Reports this run's progress (ReportProgress): a percentage 0..100
  // and/or up to 4096 bytes of data, which replace what the job showed.
  // FAILED_PRECONDITION with reason JOB_CANCEL_REQUESTED or RUN_TIMED_OUT
  // (ErrorReason) also raises the stop signal. FAILED_PRECONDITION on a Job
  // that no Worker built.
  absl::Status Progress(std::optional<int32_t> percent, std::string data = {}) const {
    if (!progress_) return absl::FailedPreconditionError("this job has no Worker to report to");
    return progress_(percent, std::move(data));
  }

  // The payload decoded as JSON. Throws nlohmann::json::parse_error when it is
  // not JSON; a handler that lets it escape fails the job with that text.
  nlohmann::json Json() const { return nlohmann::json::parse(payload); }

 private:
  std::shared_ptr<RunSignal> signal_;
  ProgressFn progress_;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_JOB_H_
