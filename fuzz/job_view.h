// JobView: what one answer of the store says about one job, in one shape
// whether it came from a job record read back from Redis or
// from a Job message (Claim deliveries, GetJob, ListJobs), so that the
// request fuzzer's oracle (fuzz/job_model.h) compares both the same way.
// Also the read-only function that fetches job records in one round trip.
#ifndef JOBWIRE_FUZZ_JOB_VIEW_H_
#define JOBWIRE_FUZZ_JOB_VIEW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/redis_reply.h"
#include "broker/store/script_sources.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::fuzz {

struct JobView {
  bool exists = false;
  std::string state;  // pending / active / completed / dead (or what was stored)
  int64_t attempts = 0;
  int64_t max_attempts = 0;
  int64_t priority = 0;
  int64_t available_at = 0;
  int64_t lease_expires_at = 0;
  int64_t finished_at = 0;
  int64_t created_at = 0;
  int64_t backoff_base = 0;
  int64_t backoff_max = 0;
  std::string type, payload, result, error, idempotency_key, worker_id;
  // Only in stored records (a Job message carries neither): the stored lease
  // token ("" when the field is absent) and the ms left of a completed job's
  // retention (its completed-index score - now; -1 for another state).
  std::optional<std::string> lease_token;
  std::optional<int64_t> pttl;
};

// The view of a Job message. Absent fields read as 0 / "".
JobView ViewOfJob(const v1::Job& job);

// A job: its queue and id.
using JobRef = std::pair<std::string, std::string>;

// A read-only function (named kReadJobsFunction) for the fuzzer's
// ScriptRunner (its extra_functions): it reads job records with their
// payloads, results and retention in one round trip, and changes nothing.
inline constexpr char kReadJobsFunction[] = "fuzz_read_jobs";
store::LuaSource ReadJobsFunction();

// That function's KEYS and ARGV for `jobs` under `key_prefix`.
// REQUIRES: jobs is not empty.
struct ReadJobsArguments {
  std::vector<std::string> keys, ids;
};
ReadJobsArguments ReadJobsArgumentsFor(const std::string& key_prefix,
                                       const std::vector<JobRef>& jobs);

// The views in `reply` of that function, one per job in order (exists is
// false for a job without a record, or completed past its retention);
// nullopt when the reply has another shape.
std::optional<std::vector<JobView>> ParseReadJobsReply(const store::RedisReply& reply,
                                                       size_t keys);

}  // namespace jobwire::fuzz

#endif  // JOBWIRE_FUZZ_JOB_VIEW_H_
