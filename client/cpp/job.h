// A job as a worker's handler sees it (see docs/clients.md).
#ifndef JOBWIRE_CLIENT_CPP_JOB_H_
#define JOBWIRE_CLIENT_CPP_JOB_H_

#include <cstdint>
#include <stop_token>
#include <string>
#include <utility>

#include "nlohmann/json.hpp"

namespace jobwire::client {

// Thread safety: the fields are not modified while a handler runs;
// lease_lost() and stop_token() may be used from any thread.
struct Job {
  // A job whose lost-lease signal is its own (never raised by a Worker).
  Job() = default;
  // A job whose lost-lease signal is raised by `lease_lost.request_stop()`.
  // The Worker builds every job this way; a test of a handler can too.
  explicit Job(std::stop_source lease_lost) : lease_lost_(std::move(lease_lost)) {}

  std::string id;
  std::string queue;
  std::string type;
  // The producer's bytes, unchanged.
  std::string payload;
  // 1 for the first run; counts the current run.
  int32_t attempt = 0;
  int32_t max_attempts = 0;
  // Lease expiry on the Redis clock, epoch ms, as of the claim.
  int64_t lease_expires_at_ms = 0;
  // The lease the broker granted, in ms (ClaimedJob.lease_ms: the Worker's
  // lease_ms, or the broker default). 0 from a broker older than that field.
  int64_t lease_ms = 0;

  // True once the Worker learnt that the lease is lost (ExtendLease answered
  // FAILED_PRECONDITION or NOT_FOUND): the job has moved on, and this run's
  // Ack / Fail will be refused. The handler may stop early.
  bool lease_lost() const { return lease_lost_.stop_requested(); }
  // Stop-requested when the lease is lost (and only then), for
  // std::stop_callback or std::condition_variable_any::wait.
  std::stop_token stop_token() const { return lease_lost_.get_token(); }

  // The payload decoded as JSON. Throws nlohmann::json::parse_error when it is
  // not JSON; a handler that lets it escape fails the job with that text.
  nlohmann::json Json() const { return nlohmann::json::parse(payload); }

 private:
  std::stop_source lease_lost_;
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_JOB_H_
