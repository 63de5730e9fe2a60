// A job as a worker's handler sees it (see docs/clients.md).
#ifndef JOBWIRE_CLIENT_CPP_JOB_H_
#define JOBWIRE_CLIENT_CPP_JOB_H_

#include <cstdint>
#include <string>

#include "nlohmann/json.hpp"

namespace jobwire::client {

struct Job {
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

  // The payload decoded as JSON. Throws nlohmann::json::parse_error when it is
  // not JSON; a handler that lets it escape fails the job with that text.
  nlohmann::json Json() const { return nlohmann::json::parse(payload); }
};

}  // namespace jobwire::client

#endif  // JOBWIRE_CLIENT_CPP_JOB_H_
