// StateChecker: the invariant every job stored in Redis must keep, checked
// from outside the broker by one read-only Lua script:
//   - every job hash has a `state` among pending / active / completed / dead;
//   - a pending job sits in exactly one of `ready` and `scheduled`, any other
//     job in exactly the zset named after its state, and in no other zset;
//   - every member of those zsets is a job hash in the matching state (a
//     completed member may have outlived its hash, which expires by
//     retention).
#ifndef JOBWIRE_FUZZ_STATE_CHECKER_H_
#define JOBWIRE_FUZZ_STATE_CHECKER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/test_harness.h"

namespace jobwire::fuzz {

// Returns one line per violation under `key_prefix` (empty: all is well) and
// sets `*job_hashes` to the number of job hashes seen, or returns the error
// when Redis cannot be asked. Thread-compatible.
absl::StatusOr<std::vector<std::string>> CheckStoredState(testing::RedisServer& redis,
                                                          const std::string& key_prefix,
                                                          int64_t* job_hashes);

}  // namespace jobwire::fuzz

#endif  // JOBWIRE_FUZZ_STATE_CHECKER_H_
