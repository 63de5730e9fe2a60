// LeaseTable: the leases this broker granted to its Claim streams, by lease
// key (queue and job id), with their deadlines by the broker's clock kept in
// order, so that one timer at the earliest deadline serves them all (the
// Dispatcher's). A lease leaves when its job is settled through this broker,
// its stream closes, or its deadline passes.
//
// Thread safety: none (the Dispatcher's loop thread).
#ifndef JOBWIRE_BROKER_CORE_LEASE_TABLE_H_
#define JOBWIRE_BROKER_CORE_LEASE_TABLE_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"

namespace jobwire::core {

class LeaseTable {
 public:
  struct Lease {
    uint64_t session = 0;
    std::string token;
    absl::Time deadline;  // by the broker's clock
    absl::Time claimed_at;
  };

  // Records `lease` under `key` (replacing one held there).
  void Grant(const std::string& key, Lease lease);
  // The lease under `key` if its token is `token`, else null. Valid until
  // the table next changes.
  const Lease* Find(const std::string& key, const std::string& token) const;
  // Moves the deadline of the lease under `key` to `deadline`, if later.
  void Extend(const std::string& key, absl::Time deadline);
  // Removes the lease under `key`; its session, or nullopt when none.
  std::optional<uint64_t> Remove(const std::string& key);
  // Removes every lease whose deadline is at or before `now`; (key,
  // session) of each, earliest first.
  std::vector<std::pair<std::string, uint64_t>> TakeExpired(absl::Time now);
  // The earliest deadline; InfiniteFuture when there is no lease.
  absl::Time earliest() const;
  size_t size() const { return leases_.size(); }
  // Calls `fn(key, lease)` for every lease, in no order; `fn` must not
  // change the table.
  void ForEach(absl::FunctionRef<void(const std::string&, const Lease&)> fn) const {
    for (const auto& [key, lease] : leases_) fn(key, lease);
  }

 private:
  absl::flat_hash_map<std::string, Lease> leases_;
  std::set<std::pair<absl::Time, std::string>> deadlines_;  // mirrors leases_
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_LEASE_TABLE_H_
