#include "broker/core/lease_reaper.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "broker/base/logging.h"

namespace jobwire::core {
namespace {

// The shared state of one pass over every queue.
struct Pass {
  size_t remaining = 0;
  absl::Duration next;
};

}  // namespace

LeaseReaper::LeaseReaper(LeaseReaperParams params) : params_(params) {}

void LeaseReaper::Start() { Schedule(absl::ZeroDuration()); }

void LeaseReaper::Stop() { stopped_ = true; }

void LeaseReaper::Schedule(absl::Duration delay) {
  params_.loop->RunAfter(delay, [this] {
    if (!stopped_) Exec();
  });
}

void LeaseReaper::Exec() {
  params_.store->ListQueues([this](absl::StatusOr<std::vector<std::string>> queues) {
    if (!queues.ok() || queues->empty()) {
      Schedule(params_.max_interval);
      return;
    }
    auto pass = std::make_shared<Pass>(Pass{queues->size(), params_.max_interval});
    for (const std::string& queue : *queues) {
      params_.store->Reap(queue, params_.batch,
                          [this, pass, queue](absl::StatusOr<store::ReapOutcome> outcome) {
                            if (outcome.ok()) {
                              if (outcome->reaped > 0) {
                                params_.metrics->LeasesExpired(queue, outcome->reaped, outcome->dead);
                                base::Log(base::LogLevel::kInfo, "expired leases settled",
                                          {{"queue", queue},
                                           {"jobs", absl::StrCat(outcome->reaped)}});
                              }
                              if (outcome->reaped >= params_.batch) {
                                pass->next = absl::ZeroDuration();
                              } else if (outcome->next_expiry_in_ms >= 0) {
                                pass->next = std::min(
                                    pass->next, absl::Milliseconds(outcome->next_expiry_in_ms + 1));
                              }
                            }
                            if (--pass->remaining == 0) Schedule(pass->next);
                          });
    }
  });
}

}  // namespace jobwire::core
