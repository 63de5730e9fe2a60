// StreamQueues: the partitions one Claim stream reads (store names, see
// store::PartitionQueue), and the order in which a fill claims from them
// (docs/semantics.md, "Partitioned queues"):
//   - the stream's queues in its order; the partitions of each starting at
//     the queue's cursor, which moves past every partition claimed from, so
//     that every P claims of a queue visit all its P partitions;
//   - leaving out a partition the stream found drained at its current
//     generation (nothing announced since: the claim would come back empty).
// Partitions get indexes in the order they are added (a queue that grows
// gets new indexes at the end); callers keep per-partition state by index.
//
// Thread safety: none (the Dispatcher's loop thread).
#ifndef JOBWIRE_BROKER_CORE_STREAM_QUEUES_H_
#define JOBWIRE_BROKER_CORE_STREAM_QUEUES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace jobwire::core {

class StreamQueues {
 public:
  // Adds `queue` read as `partitions` partitions, its first claim at
  // partition `start % partitions`. Returns the store names added.
  std::vector<std::string> Add(const std::string& queue, int partitions, size_t start);
  // Reads partitions up to `count` of `queue` (when read with fewer).
  // Returns the store names added (none otherwise).
  std::vector<std::string> Grow(const std::string& queue, int count);

  // Every partition read, by index.
  const std::vector<std::string>& names() const { return names_; }
  // The queues read, in the stream's order.
  std::vector<std::string> queues() const;
  // The position in the stream's order of the queue names()[index] belongs
  // to.
  size_t group_of(size_t index) const { return member_of_[index].first; }
  bool empty() const { return groups_.empty(); }

  // The claims of a fill, as indexes into names(); `generations[i]` is the
  // generation of names()[i] now.
  std::vector<size_t> Order(const std::vector<uint64_t>& generations) const;
  // A claim of names()[index] is sent: its queue's next claim starts at the
  // partition after it.
  void Claimed(size_t index);
  // A claim of names()[index] sent at `generation` found it drained; or
  // did not (more jobs were due).
  void SetDrained(size_t index, uint64_t generation) { drained_at_[index] = generation; }
  void SetNotDrained(size_t index) { drained_at_[index] = kNotDrained; }
  // Announcements may have been missed (Redis reconnected): nothing counts
  // as drained.
  void ForgetDrained();

 private:
  static constexpr uint64_t kNotDrained = ~uint64_t{0};
  struct Group {
    std::string queue;
    std::vector<size_t> members;  // indexes into names_, by partition
    size_t cursor = 0;            // the member the next claim starts at
  };

  std::vector<std::string> AddPartitions(size_t group, int count);

  std::vector<Group> groups_;
  std::vector<std::string> names_;
  std::vector<std::pair<size_t, size_t>> member_of_;  // per names_[i]: (group, member)
  std::vector<uint64_t> drained_at_;                  // per names_[i]
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_STREAM_QUEUES_H_
