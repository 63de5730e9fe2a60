#include "broker/core/enqueue_coalescer.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace jobwire::core {
namespace {

size_t PayloadBytes(const std::vector<v1::EnqueueRequest>& jobs) {
  size_t bytes = 0;
  for (const v1::EnqueueRequest& job : jobs) bytes += job.payload().size();
  return bytes;
}

// The distinct types of the jobs of `jobs` that are due now by this broker's
// clock (Redis' decides; a wrong guess costs a claim that finds nothing, or a
// PUBLISH round trip).
std::vector<std::string> DueNowTypes(const std::vector<v1::EnqueueRequest>& jobs) {
  const int64_t now = absl::ToUnixMillis(absl::Now());
  std::vector<std::string> types;
  absl::flat_hash_set<absl::string_view> seen;
  for (const v1::EnqueueRequest& job : jobs) {
    if (job.delay_ms() == 0 && job.run_at_ms() <= now && seen.insert(job.type()).second) {
      types.push_back(job.type());
    }
  }
  return types;
}

}  // namespace

void EnqueueCoalescer::Enqueue(const std::string& queue, std::vector<v1::EnqueueRequest> jobs,
                               store::Callback<std::vector<store::EnqueueOutcome>> done) {
  Caller caller;
  caller.count = jobs.size();
  caller.bytes = PayloadBytes(jobs);
  caller.jobs = std::move(jobs);
  caller.done = std::move(done);
  {
    absl::MutexLock lock(&mu_);
    QueueState& state = queues_[queue];
    if (state.in_flight) {
      state.waiting.push_back(std::move(caller));
      return;
    }
    state.in_flight = true;
  }
  std::vector<Caller> callers;
  callers.push_back(std::move(caller));
  Send(queue, std::move(callers));
}

std::vector<EnqueueCoalescer::Caller> EnqueueCoalescer::TakeBatch(QueueState& state) {
  std::vector<Caller> batch;
  size_t jobs = 0;
  size_t bytes = 0;
  while (!state.waiting.empty()) {
    Caller& next = state.waiting.front();
    if (!batch.empty() && (jobs + next.count > kMaxJobs || bytes + next.bytes > kMaxBytes)) {
      break;
    }
    jobs += next.count;
    bytes += next.bytes;
    batch.push_back(std::move(next));
    state.waiting.pop_front();
  }
  return batch;
}

void EnqueueCoalescer::Send(const std::string& queue, std::vector<Caller> callers) {
  std::vector<v1::EnqueueRequest> jobs = std::move(callers.front().jobs);
  for (size_t i = 1; i < callers.size(); ++i) {
    // Batch parents are positions in the caller's jobs: shifted to the call's.
    const int offset = static_cast<int>(jobs.size());
    for (v1::EnqueueRequest& job : callers[i].jobs) {
      for (int& parent : *job.mutable_depends_on_batch_index()) parent += offset;
      jobs.push_back(std::move(job));
    }
  }
  for (Caller& caller : callers) caller.jobs = {};  // sent: only count is used from here on
  std::vector<std::string> due_types;
  if (hand_off_ != nullptr) due_types = DueNowTypes(jobs);
  auto send = [this, queue, jobs = std::move(jobs), callers = std::move(callers)](
                  std::optional<store::HandOff> hand_off) mutable {
    store_->Enqueue(
        queue, jobs,
        [this, queue, callers = std::move(callers)](
            absl::StatusOr<std::vector<store::EnqueueOutcome>> result) mutable {
          OnAnswered(queue, std::move(callers), std::move(result));
        },
        std::move(hand_off));
  };
  if (!due_types.empty()) {
    hand_off_(queue, std::move(due_types), std::move(send));
  } else {
    send(std::nullopt);
  }
}

void EnqueueCoalescer::OnAnswered(const std::string& queue, std::vector<Caller> callers,
                                  absl::StatusOr<std::vector<store::EnqueueOutcome>> result) {
  std::vector<Caller> next;
  {
    absl::MutexLock lock(&mu_);
    auto it = queues_.find(queue);
    if (it->second.waiting.empty()) {
      queues_.erase(it);
    } else {
      next = TakeBatch(it->second);
    }
  }
  if (!next.empty()) Send(queue, std::move(next));

  size_t offset = 0;
  for (Caller& caller : callers) {
    if (!result.ok()) {
      caller.done(result.status());
      continue;
    }
    // JobStore answers one outcome per job sent, in order.
    std::vector<store::EnqueueOutcome> mine(
        std::make_move_iterator(result->begin() + offset),
        std::make_move_iterator(result->begin() + offset + caller.count));
    offset += caller.count;
    caller.done(std::move(mine));
  }
}

}  // namespace jobwire::core
