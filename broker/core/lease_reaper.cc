#include "broker/core/lease_reaper.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "broker/base/logging.h"
#include "broker/store/keys.h"

namespace jobwire::core {
namespace {

// The shared state of one pass over every queue.
struct Pass {
  size_t remaining = 0;
  absl::Duration next;
};

}  // namespace

LeaseReaper::LeaseReaper(LeaseReaperParams params) : params_(params) {}

void LeaseReaper::Start() {
  params_.loop->Post([this] { Schedule(absl::ZeroDuration()); });
}

void LeaseReaper::Stop() { stopped_ = true; }

void LeaseReaper::Schedule(absl::Duration delay) {
  delay = std::max(delay, absl::ZeroDuration());
  next_pass_ = absl::Now() + delay;
  params_.loop->Cancel(timer_);
  timer_ = params_.loop->RunAfter(delay, [this] {
    timer_ = 0;
    if (stopped_) return;
    next_pass_ = absl::InfiniteFuture();
    Exec();
  });
}

void LeaseReaper::OnLeaseGranted(absl::Time expiry) {
  // 1 ms past the expiry: reap.lua compares with the Redis clock.
  expiry += absl::Milliseconds(1);
  if (in_pass_) {
    granted_during_pass_ = std::min(granted_during_pass_, expiry);
  } else if (expiry < next_pass_) {
    Schedule(expiry - absl::Now());
  }
}

void LeaseReaper::DropIdle(const std::string& queue) {
  params_.admin->DropIfEmpty(queue, [queue](absl::StatusOr<bool> dropped) {
    if (dropped.ok() && *dropped) {
      base::Log(base::LogLevel::kInfo, "idle queue dropped from the registry", {{"queue", queue}});
    }
  });
}

bool LeaseReaper::TakeIdleCheck(const store::StoreOptions& options) {
  const absl::Time now = absl::Now();
  if (now < next_idle_check_) return false;
  // Without a TTL (0: queues are never dropped) the check still runs once
  // per interval, for the dependency recovery it carries.
  absl::Duration interval = params_.idle_check_interval;
  if (options.idle_queue_ttl_ms > 0) {
    interval = std::min(interval, absl::Milliseconds(options.idle_queue_ttl_ms) / 10);
  }
  next_idle_check_ = now + interval;
  return true;
}

void LeaseReaper::Exec() {
  in_pass_ = true;
  // Ends the pass: the next one at `next`, or earlier for a lease granted
  // while this one ran.
  auto finish = [this](absl::Duration next) {
    in_pass_ = false;
    next = std::min(next, granted_during_pass_ - absl::Now());
    granted_during_pass_ = absl::InfiniteFuture();
    Schedule(next);
  };
  params_.store->ListQueues([this, finish](absl::StatusOr<std::vector<std::string>> queues) {
    if (!queues.ok() || queues->empty()) {
      finish(params_.max_interval);
      return;
    }
    const store::StoreOptions& options = params_.store->options();
    const bool trim_dead = options.dead_retention_ms > 0 || options.dead_max_per_queue > 0;
    const bool check_idle = TakeIdleCheck(options);
    auto pass = std::make_shared<Pass>(
        Pass{queues->size() * (trim_dead ? 2 : 1), params_.max_interval});
    for (const std::string& queue : *queues) {
      if (trim_dead) {
        params_.store->TrimDead(queue, params_.batch,
                                [this, pass, queue, finish](absl::StatusOr<int64_t> removed) {
                                  if (removed.ok() && *removed > 0) {
                                    base::Log(base::LogLevel::kInfo, "dead jobs removed",
                                              {{"queue", queue}, {"jobs", *removed}});
                                    if (*removed >= params_.batch) pass->next = absl::ZeroDuration();
                                  }
                                  if (--pass->remaining == 0) finish(pass->next);
                                });
      }
      params_.store->Reap(queue, params_.batch,
                          [this, pass, queue, finish](absl::StatusOr<store::ReapOutcome> outcome) {
                            if (outcome.ok()) {
                              if (outcome->idle && params_.admin != nullptr) DropIdle(queue);
                              if (outcome->dependency_work && params_.dependency_links != nullptr) {
                                params_.dependency_links->Sweep(queue);
                              }
                              if (outcome->reaped > 0) {
                                // Metrics name the queue, not the partition.
                                params_.metrics->LeasesExpired(
                                    std::string(store::QueueOfPartition(queue)), outcome->reaped,
                                    outcome->dead);
                                for (const store::ReapedJob& job : outcome->settled) {
                                  base::LogJob(job.dead ? "lease expired, job dead"
                                                  : "lease expired, retry scheduled",
                                         queue, job.id, job.trace_id);
                                }
                              }
                              if (outcome->reaped >= params_.batch) {
                                pass->next = absl::ZeroDuration();
                              } else if (outcome->next_expiry_in_ms >= 0) {
                                pass->next = std::min(
                                    pass->next, absl::Milliseconds(outcome->next_expiry_in_ms + 1));
                              }
                            }
                            if (--pass->remaining == 0) finish(pass->next);
                          },
                          check_idle);
    }
  });
}

}  // namespace jobwire::core
