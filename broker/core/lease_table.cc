#include "broker/core/lease_table.h"

namespace jobwire::core {

void LeaseTable::Grant(const std::string& key, Lease lease) {
  Remove(key);
  deadlines_.emplace(lease.deadline, key);
  leases_[key] = std::move(lease);
}

const LeaseTable::Lease* LeaseTable::Find(const std::string& key, const std::string& token) const {
  auto it = leases_.find(key);
  if (it == leases_.end() || it->second.token != token) return nullptr;
  return &it->second;
}

void LeaseTable::Extend(const std::string& key, absl::Time deadline) {
  auto it = leases_.find(key);
  if (it == leases_.end() || deadline <= it->second.deadline) return;
  deadlines_.erase({it->second.deadline, key});
  it->second.deadline = deadline;
  deadlines_.emplace(deadline, key);
}

std::optional<uint64_t> LeaseTable::Remove(const std::string& key) {
  auto it = leases_.find(key);
  if (it == leases_.end()) return std::nullopt;
  const uint64_t session = it->second.session;
  deadlines_.erase({it->second.deadline, key});
  leases_.erase(it);
  return session;
}

std::vector<std::pair<std::string, uint64_t>> LeaseTable::TakeExpired(absl::Time now) {
  std::vector<std::pair<std::string, uint64_t>> expired;
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const std::string key = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    auto it = leases_.find(key);
    if (it == leases_.end()) continue;  // not expected: the set mirrors leases_
    expired.emplace_back(key, it->second.session);
    leases_.erase(it);
  }
  return expired;
}

absl::Time LeaseTable::earliest() const {
  return deadlines_.empty() ? absl::InfiniteFuture() : deadlines_.begin()->first;
}

}  // namespace jobwire::core
