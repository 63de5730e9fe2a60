// Dispatcher's fill path (dispatcher.h): a stream with free slots claims
// from its queues in order (or by weight), hands the jobs to its sink,
// takes the hand-off that rides along an enqueue, and waits or fills again.
// The class and the rest of its methods are in dispatcher.cc.
#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "broker/base/logging.h"
#include "broker/core/dispatcher.h"
#include "broker/store/keys.h"

namespace jobwire::core {
namespace {

// How long a stream waits before claiming again after Redis refused
// claim.lua for being over its maxmemory.
constexpr int64_t kClaimRetryAfterOomMs = 1000;

}  // namespace

void Dispatcher::Fill(SessionId id) {
  Session* s = Find(id);
  if (s == nullptr || shutting_down_ || s->queues.empty()) return;  // not resolved yet
  if (s->filling) {
    s->refill = true;
    return;
  }
  if (static_cast<int>(s->in_flight.size()) >= s->spec.max_in_flight) return;
  Unwait(*s);
  s->filling = true;
  s->refill = false;
  s->drained.clear();
  s->start_generation.clear();
  for (const std::string& queue : s->queues.names()) {
    s->start_generation.push_back(queues_[queue].generation);
  }
  s->order = s->queues.Order(s->start_generation);
  if (s->order.empty()) return FinishFill(id, *s);
  if (s->fair) StartShares(*s, s->spec.max_in_flight - static_cast<int>(s->in_flight.size()));
  ClaimFrom(id, 0);
}

void Dispatcher::StartShares(Session& s, int free, std::optional<size_t> only) {
  s.shares.assign(s.spec.queues.size(), Session::Share{});
  if (only) {
    s.shares[*only].slots = free;
    return;
  }
  // s.order lists each queue's partitions together, in the stream's order.
  std::vector<size_t> active;
  for (size_t index : s.order) {
    const size_t queue = s.queues.group_of(index);
    if (active.empty() || active.back() != queue) active.push_back(queue);
  }
  std::vector<int> slots = s.fair->Split(free, active);
  for (size_t queue = 0; queue < slots.size(); ++queue) s.shares[queue].slots = slots[queue];
}

void Dispatcher::SettleShares(Session& s) {
  for (size_t queue = 0; queue < s.shares.size(); ++queue) {
    const Session::Share& share = s.shares[queue];
    if (share.claimed) s.fair->Settle(queue, share.slots, /*drained=*/!share.more);
  }
  s.shares.clear();
}

void Dispatcher::ClaimFrom(SessionId id, size_t pos) {
  Session* s = Find(id);
  if (s == nullptr) return;
  if (shutting_down_) {
    s->filling = false;
    return;
  }
  int free = s->spec.max_in_flight - static_cast<int>(s->in_flight.size());
  if (s->fair) {
    // A queue whose share of this fill is used up (or was none) is not
    // claimed from; if slots stay free, the fill runs again.
    while (pos < s->order.size() && s->shares[s->queues.group_of(s->order[pos])].slots <= 0) {
      s->refill = true;
      ++pos;
    }
    if (pos == s->order.size()) return FinishFill(id, *s);
    free = std::min(free, s->shares[s->queues.group_of(s->order[pos])].slots);
  }
  const size_t index = s->order[pos];
  const std::string& queue = s->queues.names()[index];
  s->queues.Claimed(index);
  std::string claim_id = store::JobStore::NewClaimId();
  store_->Claim(queue, free, s->spec.lease_ms, s->spec.worker_id, claim_id, s->spec.types,
                [this, id, queue, pos, claim_id](absl::StatusOr<store::ClaimOutcome> outcome) {
                  OnClaimAnswered(id, queue, pos, claim_id, std::move(outcome));
                });
}

void Dispatcher::OnClaimAnswered(SessionId id, const std::string& queue, size_t pos,
                                 const std::string& claim_id,
                                 absl::StatusOr<store::ClaimOutcome> outcome) {
  if (!outcome.ok() && outcome.status().code() == absl::StatusCode::kUnavailable) {
    // The script may have run with its reply lost.
    lost_claims_.emplace_back(queue, claim_id);
  }
  OnClaimed(id, queue, pos, std::move(outcome));
}

void Dispatcher::OfferHandOff(const std::string& queue, std::vector<std::string> types,
                              std::function<void(std::optional<store::HandOff>)> send) {
  loop_->RunInLoop([this, queue, types = std::move(types), send = std::move(send)] {
    send(TakeHandOff(queue, types));
  });
}

bool Dispatcher::Takes(const Session& s, const std::vector<std::string>& types) {
  if (s.types.empty() || types.empty()) return true;
  for (const std::string& type : types) {
    if (s.types.contains(type)) return true;
  }
  return false;
}

std::optional<store::HandOff> Dispatcher::TakeHandOff(const std::string& queue,
                                                      const std::vector<std::string>& types) {
  auto found = queues_.find(queue);
  if (shutting_down_ || found == queues_.end()) return std::nullopt;
  Session* s = nullptr;
  SessionId id = 0;
  for (SessionId waiter : found->second.waiters) {
    Session* candidate = Find(waiter);
    if (candidate != nullptr && Takes(*candidate, types)) {
      s = candidate;
      id = waiter;
      break;
    }
  }
  const int free = s ? s->spec.max_in_flight - static_cast<int>(s->in_flight.size()) : 0;
  if (s == nullptr || s->filling || free <= 0) return std::nullopt;
  const std::vector<std::string>& names = s->queues.names();
  const size_t index = std::find(names.begin(), names.end(), queue) - names.begin();
  if (index == names.size()) return std::nullopt;
  // As Fill, with one claim: from this partition, riding along the enqueue.
  // The stream's other partitions were found short with no announcement
  // since (it was waiting); one announced meanwhile changes its generation,
  // and FinishFill then fills again.
  Unwait(*s);
  s->filling = true;
  s->refill = false;
  s->drained.clear();
  s->start_generation.clear();
  for (const std::string& name : names) s->start_generation.push_back(queues_[name].generation);
  s->order = {index};
  s->queues.Claimed(index);
  // Every other queue of the stream is short: this one may take every slot.
  if (s->fair) StartShares(*s, free, s->queues.group_of(index));
  store::HandOff hand_off;
  hand_off.max_jobs = free;
  hand_off.types = s->spec.types;
  hand_off.lease_ms = s->spec.lease_ms;
  hand_off.worker_id = s->spec.worker_id;
  hand_off.claim_id = store::JobStore::NewClaimId();
  hand_off.claimed = [this, id, queue,
                      claim_id = hand_off.claim_id](absl::StatusOr<store::ClaimOutcome> outcome) {
    OnClaimAnswered(id, queue, 0, claim_id, std::move(outcome));
  };
  return hand_off;
}

void Dispatcher::GiveBack(const std::string& queue, const std::string& job_id,
                          const std::string& lease_token) {
  ReleaseLease(LeaseKey(queue, job_id));
  store_->Release(queue, job_id, lease_token, [queue, job_id](absl::StatusOr<bool> released) {
    // Not released (Redis unreachable): the lease expires instead.
    if (!released.ok()) {
      base::Log(base::LogLevel::kWarning, "undelivered job not released",
                {{"queue", queue}, {"job_id", job_id}, {"error", released.status().ToString()}});
    }
  });
}

void Dispatcher::OnClaimed(SessionId id, const std::string& queue, size_t pos,
                           absl::StatusOr<store::ClaimOutcome> outcome) {
  Session* s = Find(id);
  if (s == nullptr) {
    // The stream ended while the claim ran: nobody will receive these jobs.
    if (!outcome.ok()) return;
    for (const v1::ClaimedJob& job : outcome->jobs) {
      GiveBack(queue, job.job().id(), job.lease_token());
    }
    return;
  }
  if (!outcome.ok()) {
    // UNAVAILABLE: OnRedisReconnected wakes the session. RESOURCE_EXHAUSTED:
    // Redis is over its maxmemory and refuses claim.lua; no event says when
    // memory is freed, so the queue's timer tries again. Anything else is a
    // bug worth a log line; the next event retries.
    const absl::StatusCode code = outcome.status().code();
    base::Log(code == absl::StatusCode::kUnavailable         ? base::LogLevel::kDebug
              : code == absl::StatusCode::kResourceExhausted ? base::LogLevel::kWarning
                                                             : base::LogLevel::kError,
              "claim failed", {{"queue", queue}, {"error", outcome.status().ToString()}});
    s->filling = false;
    Wait(id, *s);
    if (code == absl::StatusCode::kResourceExhausted) ArmQueueTimer(queue, kClaimRetryAfterOomMs);
    return;
  }
  const size_t claimed = outcome->jobs.size();
  if (claimed > 0 && !GrantAndDeliver(id, *s, queue, std::move(outcome->jobs))) {
    s->filling = false;  // the stream ended (its close is already posted)
    return;
  }
  const size_t index = s->order[pos];
  if (s->fair) {
    Session::Share& share = s->shares[s->queues.group_of(index)];
    share.slots -= static_cast<int>(claimed);
    share.claimed = true;
    share.more = share.more || outcome->more;
  }
  if (outcome->more) {
    s->queues.SetNotDrained(index);
    WakeOne(queue, s->spec.types);  // the queue holds more for the next waiter
  } else {
    s->drained.insert(queue);
    s->queues.SetDrained(index, s->start_generation[index]);
    if (outcome->next_due_in_ms >= 0) ArmQueueTimer(queue, outcome->next_due_in_ms);
  }
  // Due jobs of types this stream does not take: for a waiter that does.
  if (!outcome->other_types.empty()) WakeOne(queue, outcome->other_types);
  bool full = static_cast<int>(s->in_flight.size()) >= s->spec.max_in_flight;
  if (!full && pos + 1 < s->order.size()) {
    ClaimFrom(id, pos + 1);
    return;
  }
  FinishFill(id, *s);
}

bool Dispatcher::GrantAndDeliver(SessionId id, Session& s, const std::string& queue,
                                 std::vector<v1::ClaimedJob> jobs) {
  const absl::Time now = absl::Now();
  absl::Time latest = now;
  std::vector<std::pair<std::string, std::string>> granted;  // (job id, lease token)
  std::vector<absl::Duration> waits;
  granted.reserve(jobs.size());
  waits.reserve(jobs.size());
  for (const v1::ClaimedJob& job : jobs) {
    // The lease granted: the stream's, or shorter for a run with a timeout.
    const absl::Time deadline = now + absl::Milliseconds(job.lease_ms());
    latest = std::max(latest, deadline);
    std::string key = LeaseKey(queue, job.job().id());
    leases_.Grant(key, LeaseTable::Lease{id, job.lease_token(), deadline, now});
    s.in_flight.insert(key);
    granted.emplace_back(job.job().id(), job.lease_token());
    // Claimed at lease expiry minus lease, by the Redis clock like available_at.
    waits.push_back(absl::Milliseconds(job.lease_expires_at_ms() - job.lease_ms() -
                                       job.job().available_at_ms()));
  }
  ArmExpiryTimer();
  if (on_lease_granted_) on_lease_granted_(latest);
  const std::string name(store::QueueOfPartition(queue));
  for (v1::ClaimedJob& job : jobs) job.mutable_job()->set_queue(name);
  if (!s.sink->Deliver(std::move(jobs))) {
    for (const auto& [job_id, lease_token] : granted) GiveBack(queue, job_id, lease_token);
    return false;
  }
  for (const absl::Duration& wait : waits) metrics_->JobClaimed(name, wait);
  return true;
}

void Dispatcher::FinishFill(SessionId id, Session& s) {
  s.filling = false;
  if (s.fair) SettleShares(s);
  // Wake-ups for queues this fill did not drain go to the next waiter.
  std::vector<std::string> pass_on;
  for (const std::string& queue : s.woken_for) {
    if (!s.drained.contains(queue)) pass_on.push_back(queue);
  }
  s.woken_for.clear();
  bool full = static_cast<int>(s.in_flight.size()) >= s.spec.max_in_flight;
  if (!full) {
    bool changed = s.refill;
    const std::vector<std::string>& names = s.queues.names();
    for (size_t i = 0; i < names.size(); ++i) {
      // A partition added during the fill was not claimed from.
      if (i >= s.start_generation.size() ||
          queues_[names[i]].generation != s.start_generation[i]) {
        changed = true;
      }
    }
    if (changed) {
      loop_->Post([this, id] { Fill(id); });
    } else {
      Wait(id, s);
    }
  }
  for (const std::string& queue : pass_on) WakeOne(queue);
}

}  // namespace jobwire::core
