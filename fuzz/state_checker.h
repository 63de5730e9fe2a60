// StateChecker: the invariant every job stored in Redis must keep, checked
// from outside the broker by one read-only Lua script:
//   - every job record (a field of `jobs`) unpacks and has a `state` among
//     pending / active / completed / dead;
//   - a pending job sits in exactly one of `ready` and `scheduled`, any other
//     job in exactly the zset named after its state, and in no other zset;
//   - every member of those zsets, and every field of `payloads` and
//     `results`, is a job with a record, in the matching state;
//   - every ack tombstone (`acked`) has an expiry in `acked_expiry` and names
//     no job with a record; every idempotency key (`idem`) has an expiry.
#ifndef JOBWIRE_FUZZ_STATE_CHECKER_H_
#define JOBWIRE_FUZZ_STATE_CHECKER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/test_harness.h"

namespace jobwire::fuzz {

// Returns one line per violation under `key_prefix` (empty: all is well) and
// sets `*job_hashes` to the number of job records seen (a completed job past
// its retention, not trimmed yet, is not counted), or returns the error
// when Redis cannot be asked. Thread-compatible.
absl::StatusOr<std::vector<std::string>> CheckStoredState(testing::RedisServer& redis,
                                                          const std::string& key_prefix,
                                                          int64_t* job_hashes);

}  // namespace jobwire::fuzz

#endif  // JOBWIRE_FUZZ_STATE_CHECKER_H_
