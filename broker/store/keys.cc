#include "broker/store/keys.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "broker/base/error_reason.h"

namespace jobwire::store {

Keys::Keys(absl::string_view prefix, absl::string_view queue)
    : base_(absl::StrCat(prefix, ":{", queue, "}:")) {}

std::string PartitionQueue(absl::string_view queue, int partition) {
  if (partition == 0) return std::string(queue);
  return absl::StrCat(queue, "#", partition);
}

absl::string_view QueueOfPartition(absl::string_view name) {
  const size_t hash = name.rfind('#');
  return hash == absl::string_view::npos ? name : name.substr(0, hash);
}

int PartitionOfName(absl::string_view name) {
  const size_t hash = name.rfind('#');
  int partition = 0;
  if (hash == absl::string_view::npos || !absl::SimpleAtoi(name.substr(hash + 1), &partition)) {
    return 0;
  }
  return partition;
}

int PartitionOfJobId(absl::string_view job_id) {
  const size_t dot = job_id.rfind(".p");
  int partition = 0;
  if (dot == absl::string_view::npos || !absl::SimpleAtoi(job_id.substr(dot + 2), &partition) ||
      partition < 0 || partition >= kMaxPartitions) {
    return 0;
  }
  return partition;
}

std::string JobIdSuffix(int partition) {
  return partition == 0 ? std::string() : absl::StrCat(".p", partition);
}

std::string JobRef(absl::string_view queue, absl::string_view job_id) {
  const int partition = PartitionOfName(queue);
  if (partition == 0) return absl::StrCat("job ", job_id, " in queue ", queue);
  return absl::StrCat("job ", job_id, " in queue ", QueueOfPartition(queue), " (partition ",
                      partition, ")");
}

absl::Status JobNotFound(absl::string_view queue, absl::string_view job_id) {
  return base::WithReason(absl::NotFoundError(absl::StrCat(JobRef(queue, job_id), " not found")),
                          base::reason::kJobNotFound);
}

absl::Status DependencyNotFound(absl::string_view queue, absl::string_view parent_id) {
  // A ref "<queue>/<id>" names its own queue.
  const size_t slash = parent_id.find('/');
  const std::string job =
      slash == absl::string_view::npos
          ? JobRef(queue, parent_id)
          : JobRef(PartitionQueue(parent_id.substr(0, slash),
                                  PartitionOfJobId(parent_id.substr(slash + 1))),
                   parent_id.substr(slash + 1));
  absl::Status status = absl::NotFoundError(
      absl::StrCat("depends_on: ", job,
                   " not found (never enqueued, or deleted, or past its retention)"));
  status = base::WithReason(std::move(status), base::reason::kDependencyNotFound);
  return base::WithMetadata(std::move(status), "job_id", parent_id);
}

absl::Status BatchParentNotStored() {
  return base::WithReason(
      absl::NotFoundError("depends_on_batch_index: a parent of this batch was not stored (its "
                          "own result says why)"),
      base::reason::kDependencyNotFound);
}

std::string Keys::Registry(absl::string_view prefix) { return absl::StrCat(prefix, ":queues"); }

std::string Keys::WorkerReports(absl::string_view prefix) {
  return absl::StrCat(prefix, ":{workers}:reports");
}

std::string Keys::Layout(absl::string_view prefix) { return absl::StrCat(prefix, ":layout"); }

std::string Keys::ScheduleDefs(absl::string_view prefix) {
  return absl::StrCat(prefix, ":{schedules}:defs");
}

std::string Keys::ScheduleNext(absl::string_view prefix) {
  return absl::StrCat(prefix, ":{schedules}:next");
}

std::string Keys::ScheduleLast(absl::string_view prefix) {
  return absl::StrCat(prefix, ":{schedules}:last");
}

std::string Keys::ScheduleChannel(absl::string_view prefix) {
  return absl::StrCat(prefix, ":{schedules}:changed");
}

}  // namespace jobwire::store
