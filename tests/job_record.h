// Job records of Redis layout 3, for tests that look into Redis or damage it
// on purpose: a job is one field of <p>:{<q>}:jobs (job id -> its fields
// packed with cmsgpack as a table indexed by field number; lua/_lib.lua,
// docs/redis-layout.md "Job records"). These build EVAL commands that read or
// change one field by name; run them with RedisServer::CommandArgv.
#ifndef JOBWIRE_TESTS_JOB_RECORD_H_
#define JOBWIRE_TESTS_JOB_RECORD_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace jobwire::testing {

// The record's fields in order: field i is number i + 1. The same list as
// JOB_FIELDS in lua/_lib.lua (script_safety_test checks that they agree).
inline constexpr std::array<absl::string_view, 34> kJobRecordFields = {
    "state",      "type",         "priority",    "attempts",     "max_attempts",
    "available_at", "lease_token", "lease_expires_at", "worker_id", "error",
    "idempotency_key", "created_at", "finished_at", "backoff_base", "backoff_max",
    "completed_retention", "failed_token", "fail_outcome", "fail_next_at",
    "timeout", "run_deadline", "cancel_requested", "progress_percent", "progress_data",
    "headers", "concurrency_key", "errors", "depends_on", "deps_left", "dep_policy",
    "dep_results", "has_dependents", "payload_bytes", "deps_remote"};

// The number of field `name`; 0 when there is no such field.
inline int JobFieldNumber(absl::string_view name) {
  for (size_t i = 0; i < kJobRecordFields.size(); ++i) {
    if (kJobRecordFields[i] == name) return static_cast<int>(i + 1);
  }
  return 0;
}

// <p>:{<q>}:jobs.
inline std::string JobsKey(absl::string_view prefix, absl::string_view queue) {
  return absl::StrCat(prefix, ":{", queue, "}:jobs");
}

// EVAL answering field `name` of job `id`'s record as a string (numbers in
// decimal), '' when the record lacks it, nil when there is no record.
inline std::vector<std::string> ReadJobFieldArgv(const std::string& jobs_key,
                                                 const std::string& id, absl::string_view name) {
  return {"EVAL",
          "local p = redis.call('HGET', KEYS[1], ARGV[1]) "
          "if not p then return false end "
          "local v = cmsgpack.unpack(p)[tonumber(ARGV[2])] "
          "if v == nil then return '' end "
          "if type(v) == 'number' then return string.format('%d', v) end "
          "return tostring(v)",
          "1", jobs_key, id, absl::StrCat(JobFieldNumber(name))};
}

// EVAL setting field `name` of job `id`'s record to `value` (a string), or
// removing the field when `value` is nullopt. Answers 1, or 0 when there is
// no record (nothing written).
inline std::vector<std::string> WriteJobFieldArgv(const std::string& jobs_key,
                                                  const std::string& id, absl::string_view name,
                                                  const std::optional<std::string>& value) {
  return {"EVAL",
          "local p = redis.call('HGET', KEYS[1], ARGV[1]) "
          "if not p then return 0 end "
          "local r = cmsgpack.unpack(p) "
          "if ARGV[3] == 'set' then r[tonumber(ARGV[2])] = ARGV[4] "
          "else r[tonumber(ARGV[2])] = nil end "
          "redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack(r)) "
          "return 1",
          "1", jobs_key, id, absl::StrCat(JobFieldNumber(name)), value ? "set" : "remove",
          value.value_or("")};
}

}  // namespace jobwire::testing

#endif  // JOBWIRE_TESTS_JOB_RECORD_H_
