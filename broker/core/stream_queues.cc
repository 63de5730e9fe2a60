#include "broker/core/stream_queues.h"

#include <algorithm>

#include "broker/store/keys.h"

namespace jobwire::core {

std::vector<std::string> StreamQueues::Add(const std::string& queue, int partitions,
                                           size_t start) {
  groups_.push_back(Group{queue, {}, 0});
  std::vector<std::string> added = AddPartitions(groups_.size() - 1, partitions);
  groups_.back().cursor = start % groups_.back().members.size();
  return added;
}

std::vector<std::string> StreamQueues::Grow(const std::string& queue, int count) {
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].queue == queue) return AddPartitions(g, count);
  }
  return {};
}

std::vector<std::string> StreamQueues::AddPartitions(size_t group, int count) {
  std::vector<std::string> added;
  Group& g = groups_[group];
  for (int p = static_cast<int>(g.members.size()); p < count; ++p) {
    g.members.push_back(names_.size());
    member_of_.emplace_back(group, p);
    names_.push_back(store::PartitionQueue(g.queue, p));
    drained_at_.push_back(kNotDrained);
    added.push_back(names_.back());
  }
  return added;
}

std::vector<std::string> StreamQueues::queues() const {
  std::vector<std::string> out;
  for (const Group& g : groups_) out.push_back(g.queue);
  return out;
}

std::vector<size_t> StreamQueues::Order(const std::vector<uint64_t>& generations) const {
  std::vector<size_t> order;
  for (const Group& g : groups_) {
    for (size_t m = 0; m < g.members.size(); ++m) {
      const size_t index = g.members[(g.cursor + m) % g.members.size()];
      if (drained_at_[index] == generations[index]) continue;
      order.push_back(index);
    }
  }
  return order;
}

void StreamQueues::Claimed(size_t index) {
  const auto [group, member] = member_of_[index];
  groups_[group].cursor = (member + 1) % groups_[group].members.size();
}

void StreamQueues::ForgetDrained() {
  std::fill(drained_at_.begin(), drained_at_.end(), kNotDrained);
}

}  // namespace jobwire::core
