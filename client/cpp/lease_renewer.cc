#include "client/cpp/lease_renewer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cpp/error_details.h"
#include "client/cpp/lease_rules.h"

namespace jobwire::client {

LeaseRenewer::LeaseRenewer(Client* client, std::function<void(const std::string&)> log)
    : client_(client), log_(std::move(log)) {}

void LeaseRenewer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void LeaseRenewer::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
}

void LeaseRenewer::Join() {
  Shutdown();
  if (thread_.joinable()) thread_.join();
}

void LeaseRenewer::Add(const std::string& token, Lease lease, absl::Time received) {
  absl::MutexLock lock(&mu_);
  const absl::Duration length = lease.length;
  leases_[token] = Kept{std::move(lease), received + length, received + length / 3};
}

void LeaseRenewer::Remove(const std::string& token) {
  absl::MutexLock lock(&mu_);
  leases_.erase(token);
}

void LeaseRenewer::Stop(const std::string& token, StopReason reason) {
  std::shared_ptr<RunSignal> signal;
  {
    absl::MutexLock lock(&mu_);
    auto it = leases_.find(token);
    if (it == leases_.end() || it->second.abandoned) return;
    if (reason == StopReason::kCancelled) it->second.lost = true;
    signal = it->second.lease.signal;
  }
  signal->Raise(reason);  // outside the lock: it runs the handler's stop callbacks
}

int LeaseRenewer::AbandonAll() {
  absl::MutexLock lock(&mu_);
  int abandoned = 0;
  for (auto& [token, kept] : leases_) {
    if (!kept.abandoned) ++abandoned;
    kept.abandoned = true;
  }
  return abandoned;
}

bool LeaseRenewer::Abandoned(const std::string& token) {
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(token);
  return it != leases_.end() && it->second.abandoned;
}

absl::Time LeaseRenewer::Expiry(const std::string& token) {
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(token);
  if (it == leases_.end() || it->second.abandoned) return absl::InfinitePast();
  return it->second.expires;
}

std::optional<absl::Duration> LeaseRenewer::EndedAgo(const std::string& token, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(token);
  if (it == leases_.end() || it->second.abandoned) return std::nullopt;
  return LeaseEndedAgo(now, it->second.lease.expires_at_ms, it->second.expires);
}

void LeaseRenewer::Loop() {
  while (true) {
    std::vector<Due> due;
    std::vector<std::shared_ptr<RunSignal>> timed_out;
    {
      absl::MutexLock lock(&mu_);
      absl::Time wake = absl::Now() + absl::Milliseconds(200);
      for (const auto& [token, kept] : leases_) {
        if (kept.abandoned) continue;
        if (!kept.lost) wake = std::min(wake, kept.next_renew);
        if (!kept.timed_out) wake = std::min(wake, kept.lease.deadline);
      }
      mu_.AwaitWithDeadline(absl::Condition(&shutdown_), wake);
      if (shutdown_) return;
      absl::Time now = absl::Now();
      for (auto& [token, kept] : leases_) {
        if (kept.abandoned) continue;
        if (!kept.timed_out && kept.lease.deadline <= now) {
          kept.timed_out = true;
          timed_out.push_back(kept.lease.signal);
        }
        if (kept.lost || kept.next_renew > now) continue;
        const Lease& lease = kept.lease;
        due.push_back(Due{token, lease.queue, lease.id, lease.length, lease.renew_ms});
      }
    }
    // Outside the lock: it runs the handlers' stop callbacks.
    for (const auto& signal : timed_out) signal->Raise(StopReason::kTimedOut);
    // Each renewal has a deadline of at most a third of its lease, and they
    // run side by side, so a hung call delays no other lease past its expiry.
    if (due.size() == 1) {
      Renew(due[0]);
    } else {
      std::vector<std::thread> calls;
      calls.reserve(due.size());
      for (const Due& d : due) calls.emplace_back([this, &d] { Renew(d); });
      for (std::thread& call : calls) call.join();
    }
  }
}

void LeaseRenewer::Renew(const Due& due) {
  const absl::Time sent = absl::Now();
  absl::StatusOr<int64_t> renewed =
      client_->ExtendLease(due.queue, due.id, due.token, due.renew_ms, due.length / 3);
  std::shared_ptr<RunSignal> signal;
  StopReason reason = StopReason::kLeaseLost;
  {
    absl::MutexLock lock(&mu_);
    auto it = leases_.find(due.token);
    if (it == leases_.end() || it->second.abandoned) return;
    Kept& kept = it->second;
    if (renewed.ok()) {
      kept.expires = sent + due.length;
      kept.lease.expires_at_ms = *renewed;
      kept.next_renew = sent + due.length / 3;
      return;
    }
    if (!absl::IsFailedPrecondition(renewed.status()) && !absl::IsNotFound(renewed.status())) {
      // Transient: try again soon, while the lease may still be alive.
      kept.next_renew = absl::Now() + std::min(due.length / 6, absl::Seconds(1));
      return;
    }
    kept.lost = true;
    signal = kept.lease.signal;
    const std::string why = ErrorReason(renewed.status());
    if (why == reason::kJobCancelRequested) {
      reason = StopReason::kCancelled;
    } else if (why == reason::kRunTimedOut) {
      reason = StopReason::kTimedOut;
      kept.timed_out = true;
    } else {
      // Under the lock, so that no line is logged once the worker has
      // abandoned the lease (and Run may have returned).
      log_(absl::StrCat("lease of job ", due.queue, "/", due.id, " lost: ",
                        renewed.status().message()));
    }
  }
  // Outside the lock: it runs the handler's stop callbacks.
  signal->Raise(reason);
}

}  // namespace jobwire::client
