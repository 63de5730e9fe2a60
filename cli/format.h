// Text forms shared by the CLI's commands (cli/admin_cli*.cc): ages,
// times, states, byte strings, and gRPC statuses as absl ones.
#ifndef JOBWIRE_CLI_FORMAT_H_
#define JOBWIRE_CLI_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "jobwire/v1/admin.pb.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::cli {

// The same code and message.
absl::Status FromGrpc(const grpc::Status& status);
// "1.5s", "3m20s", "-" for zero.
std::string Age(int64_t ms);
// A job timeout setting: "no limit" for 0, "-1" (removed) as "the broker's",
// else "5000 ms".
std::string TimeoutText(int64_t ms);
// A rate limit: "5 per 1000 ms, burst 5".
std::string RateLimitText(const v1::RateLimit& limit);
// `limit` with burst 0 as count (RateLimit.burst's default).
v1::RateLimit ResolvedBurst(v1::RateLimit limit);
// Epoch ms as UTC time, "-" for zero.
std::string Time(int64_t ms);
// "pending", "active", ...
std::string StateName(v1::JobState state);
// Printable text as it is, anything else as base64.
std::string Bytes(const std::string& bytes);
// `text` cut to `max` characters (ending "..." when cut). REQUIRES: max >= 3.
std::string Truncate(const std::string& text, size_t max);

}  // namespace jobwire::cli

#endif  // JOBWIRE_CLI_FORMAT_H_
