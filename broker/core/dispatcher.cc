#include "broker/core/dispatcher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "broker/base/error_reason.h"
#include "broker/base/logging.h"
#include "broker/store/keys.h"

namespace jobwire::core {
namespace {

// The notify channel's messages about leases settled or renewed through
// another replica than the one that granted them (OnJobsSettled,
// OnLeaseExtended): 'settled:<1 acked|0 failed> <id> <token> [<id> <token>...]'
// and 'extended:<lease ms> <id> <token>'.
constexpr absl::string_view kSettledPrefix = "settled:";
constexpr absl::string_view kExtendedPrefix = "extended:";

}  // namespace

Dispatcher::Dispatcher(base::EventLoop* loop, const store::JobStore* store,
                       store::RedisSubscriptions* subscriber, QueuePartitions* partitions,
                       Metrics* metrics, StreamLimits limits)
    : loop_(loop),
      store_(store),
      subscriber_(subscriber),
      partitions_(partitions),
      metrics_(metrics),
      counts_(limits) {
  partitions_->AddOnGrown([this](const std::string& queue, int count) {
    loop_->Post([this, queue, count] { OnPartitionsGrown(queue, count); });
  });
}

std::string Dispatcher::LeaseKey(const std::string& queue, const std::string& job_id) {
  return absl::StrCat(queue, "\n", job_id);
}

Dispatcher::Session* Dispatcher::Find(SessionId id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

absl::StatusOr<Dispatcher::SessionId> Dispatcher::Open(ClaimSpec spec,
                                                       std::shared_ptr<JobSink> sink) {
  SessionId id = next_id_++;
  if (absl::Status admitted = counts_.Admit(id, spec.peer); !admitted.ok()) return admitted;
  std::vector<std::string> queues = spec.queues;
  loop_->Post([this, id, spec = std::move(spec), sink = std::move(sink)]() mutable {
    DoOpen(id, std::move(spec), std::move(sink));
  });
  // Then the partition counts (cached, or one read per queue): the session
  // claims once it knows which partitions to read.
  partitions_->LookupAll(queues, [this, id](absl::StatusOr<std::vector<int>> counts) {
    loop_->Post([this, id, counts = std::move(counts)] { DoResolve(id, counts); });
  });
  return id;
}

void Dispatcher::Close(SessionId id) {
  if (!counts_.Release(id)) return;
  loop_->Post([this, id] { DoClose(id); });
}

void Dispatcher::OnJobsSettled(const std::string& queue,
                               std::vector<std::pair<std::string, std::string>> jobs,
                               bool acked) {
  // At once on the loop thread (where the store answers), so that the
  // session's claim goes out with no hop between.
  loop_->RunInLoop([this, queue, jobs = std::move(jobs), acked] {
    std::vector<std::pair<std::string, std::string>> elsewhere = FreeSettled(queue, jobs, acked);
    if (elsewhere.empty()) return;
    // Leases another replica granted (the worker's channel balanced its
    // settle here): that replica frees their slots on this message.
    std::string message = absl::StrCat(kSettledPrefix, acked ? "1" : "0");
    for (const auto& [job_id, token] : elsewhere) absl::StrAppend(&message, " ", job_id, " ", token);
    store_->Announce(queue, std::move(message));
  });
}

std::vector<std::pair<std::string, std::string>> Dispatcher::FreeSettled(
    const std::string& queue, const std::vector<std::pair<std::string, std::string>>& jobs,
    bool acked) {
  const absl::Time now = absl::Now();
  absl::flat_hash_set<SessionId> freed;
  std::vector<std::pair<std::string, std::string>> not_held;
  for (const auto& [job_id, token] : jobs) {
    const std::string key = LeaseKey(queue, job_id);
    const LeaseTable::Lease* lease = leases_.Find(key, token);
    if (lease == nullptr) {
      not_held.emplace_back(job_id, token);
      continue;
    }
    if (acked) {
      metrics_->JobRunTime(std::string(store::QueueOfPartition(queue)), now - lease->claimed_at);
    }
    freed.insert(lease->session);
    ReleaseLease(key);
  }
  OnSlotsFreed(freed);
  return not_held;
}

void Dispatcher::ReturnUnsent(std::vector<v1::ClaimedJob> jobs) {
  if (jobs.empty()) return;
  loop_->Post([this, jobs = std::move(jobs)] {
    for (const v1::ClaimedJob& job : jobs) {
      // Delivered jobs name their queue; the id names the partition.
      GiveBack(store::PartitionQueue(job.job().queue(), store::PartitionOfJobId(job.job().id())),
               job.job().id(), job.lease_token());
    }
  });
}

void Dispatcher::OnLeaseExtended(const std::string& queue, const std::string& job_id,
                                 const std::string& token, int64_t lease_ms) {
  loop_->Post([this, queue, job_id, token, lease_ms] {
    if (ExtendHeld(queue, job_id, token, lease_ms)) return;
    store_->Announce(queue, absl::StrCat(kExtendedPrefix, lease_ms, " ", job_id, " ", token));
  });
}

bool Dispatcher::ExtendHeld(const std::string& queue, const std::string& job_id,
                            const std::string& token, int64_t lease_ms) {
  const std::string key = LeaseKey(queue, job_id);
  if (leases_.Find(key, token) == nullptr) return false;
  leases_.Extend(key, absl::Now() + absl::Milliseconds(lease_ms));
  return true;
}

void Dispatcher::ReleaseLostClaims() {
  std::vector<std::pair<std::string, std::string>> lost;
  lost.swap(lost_claims_);
  for (const auto& claim : lost) {
    const std::string& queue = claim.first;
    const std::string& claim_id = claim.second;
    store_->ReleaseClaim(queue, claim_id, [this, queue, claim_id](absl::StatusOr<int64_t> released) {
      if (!released.ok()) {
        if (released.status().code() == absl::StatusCode::kUnavailable) {
          lost_claims_.emplace_back(queue, claim_id);  // the next reconnect tries again
        }
        return;
      }
      if (*released > 0) {
        base::Log(base::LogLevel::kInfo, "jobs of a claim whose reply was lost given back",
                  {{"queue", queue}, {"jobs", *released}});
      }
    });
  }
}

void Dispatcher::OnRedisReconnected() {
  loop_->Post([this] {
    ReleaseLostClaims();
    std::vector<SessionId> ids;
    absl::flat_hash_set<std::string> read;
    for (const auto& [id, s] : sessions_) {
      if (!s->waiting.empty()) ids.push_back(id);
      for (const std::string& queue : s->queues.queues()) read.insert(queue);
      s->queues.ForgetDrained();  // announcements may have been missed
    }
    for (SessionId id : ids) Fill(id);
    for (const std::string& queue : read) partitions_->Refresh(queue);
  });
}

namespace {
absl::Status ShuttingDown() {
  return base::WithReason(
      absl::UnavailableError("broker is shutting down; reconnect to another replica"),
      base::reason::kBrokerShuttingDown);
}
absl::Status TooOld() {
  return base::WithReason(absl::UnavailableError("claim stream reached its maximum age; reconnect"),
                          base::reason::kClaimStreamMaxAge);
}
}  // namespace

void Dispatcher::Shutdown() {
  loop_->Post([this] {
    shutting_down_ = true;
    for (const auto& [id, s] : sessions_) s->sink->Close(ShuttingDown());
  });
}

void Dispatcher::Streams(std::function<void(std::vector<v1::WorkerStream>)> done) {
  loop_->Post([this, done = std::move(done)] {
    std::vector<std::pair<absl::Time, SessionId>> order;
    for (const auto& [id, s] : sessions_) order.emplace_back(s->opened_at, id);
    std::sort(order.begin(), order.end());
    std::vector<v1::WorkerStream> out;
    out.reserve(order.size());
    for (const auto& [opened_at, id] : order) {
      const Session& s = *sessions_.at(id);
      v1::WorkerStream& stream = out.emplace_back();
      stream.set_worker_id(s.spec.worker_id);
      for (const std::string& queue : s.spec.queues) stream.add_queues(queue);
      for (const std::string& type : s.spec.types) stream.add_types(type);
      for (int weight : s.spec.weights) stream.add_weights(weight);
      stream.set_max_in_flight(s.spec.max_in_flight);
      stream.set_in_flight(static_cast<int32_t>(s.in_flight.size()));
      stream.set_opened_at_ms(absl::ToUnixMillis(opened_at));
      stream.set_peer(s.spec.peer);
    }
    done(std::move(out));
  });
}

void Dispatcher::DoOpen(SessionId id, ClaimSpec spec, std::shared_ptr<JobSink> sink) {
  if (shutting_down_) {
    sink->Close(ShuttingDown());
    return;
  }
  auto session = std::make_unique<Session>();
  session->spec = std::move(spec);
  session->opened_at = absl::Now();
  session->types.insert(session->spec.types.begin(), session->spec.types.end());
  if (!session->spec.weights.empty()) {
    session->fair.emplace(session->spec.weights, session->spec.max_in_flight);
  }
  session->sink = std::move(sink);
  if (session->spec.max_age != absl::InfiniteDuration()) {
    session->max_age_timer = loop_->RunAfter(session->spec.max_age, [this, id] {
      if (Session* s = Find(id)) s->sink->Close(TooOld());
    });
  }
  sessions_[id] = std::move(session);
}

void Dispatcher::DoResolve(SessionId id, const absl::StatusOr<std::vector<int>>& partitions) {
  Session* s = Find(id);
  if (s == nullptr || shutting_down_) return;  // closed meanwhile
  if (!partitions.ok()) {
    // Which partitions to read is unknown: the client reconnects.
    s->sink->Close(partitions.status());
    return;
  }
  const size_t start = next_cursor_++;
  for (size_t g = 0; g < s->spec.queues.size(); ++g) {
    Subscribe(s->queues.Add(s->spec.queues[g], (*partitions)[g], start));
  }
  Fill(id);
}

void Dispatcher::Subscribe(const std::vector<std::string>& partitions) {
  for (const std::string& queue : partitions) {
    QueueState& q = queues_[queue];
    if (q.streams++ == 0) {
      subscriber_->Subscribe(store_->NotifyChannel(queue),
                             [this, queue](const std::string&, const std::string& message) {
                               OnNotify(queue, message);
                             });
    }
  }
}

void Dispatcher::OnPartitionsGrown(const std::string& queue, int count) {
  std::vector<SessionId> grown;
  for (auto& [id, s] : sessions_) {
    std::vector<std::string> added = s->queues.Grow(queue, count);
    if (added.empty()) continue;
    Subscribe(added);
    Unwait(*s);  // Wait covers the new partitions once the fill is done
    grown.push_back(id);
  }
  if (!grown.empty()) {
    base::Log(base::LogLevel::kInfo, "claim streams read the new partitions of a queue",
              {{"queue", queue}, {"partitions", count},
               {"streams", grown.size()}});
  }
  for (SessionId id : grown) Fill(id);
}

void Dispatcher::DoClose(SessionId id) {
  Session* s = Find(id);
  if (s == nullptr) return;
  Unwait(*s);
  loop_->Cancel(s->max_age_timer);
  for (const std::string& key : s->in_flight) leases_.Remove(key);
  // Wake-ups this session carried go to the next waiter.
  std::vector<std::string> pass_on(s->woken_for.begin(), s->woken_for.end());
  // A queue no stream reads any more is forgotten: its subscription, timer
  // and state (so they do not grow with every queue ever read).
  for (const std::string& queue : s->queues.names()) {
    auto q = queues_.find(queue);
    if (q == queues_.end() || --q->second.streams > 0) continue;
    subscriber_->Unsubscribe(store_->NotifyChannel(queue));
    loop_->Cancel(q->second.timer);
    queues_.erase(q);
  }
  sessions_.erase(id);
  for (const std::string& queue : pass_on) WakeOne(queue);
}

void Dispatcher::OnSlotsFreed(const absl::flat_hash_set<SessionId>& ids) {
  for (SessionId id : ids) {
    Session* s = Find(id);
    if (s != nullptr && s->waiting.empty()) Fill(id);
  }
}

void Dispatcher::Wait(SessionId id, Session& s) {
  if (!s.waiting.empty()) return;
  for (const std::string& queue : s.queues.names()) {
    auto& waiters = queues_[queue].waiters;
    s.waiting.push_back(waiters.insert(waiters.end(), id));
  }
}

void Dispatcher::Unwait(Session& s) {
  for (size_t i = 0; i < s.waiting.size(); ++i) {
    queues_[s.queues.names()[i]].waiters.erase(s.waiting[i]);
  }
  s.waiting.clear();
}

void Dispatcher::WakeOne(const std::string& queue, const std::vector<std::string>& types) {
  auto found = queues_.find(queue);
  if (found == queues_.end()) return;  // no stream reads it any more
  QueueState& q = found->second;
  ++q.generation;
  auto waiter = q.waiters.begin();
  while (waiter != q.waiters.end()) {
    Session* s = Find(*waiter);
    if (s == nullptr) {
      waiter = q.waiters.erase(waiter);
    } else if (!Takes(*s, types)) {
      ++waiter;
    } else {
      break;
    }
  }
  if (waiter == q.waiters.end()) return;
  SessionId id = *waiter;
  Session* s = Find(id);
  Unwait(*s);
  s->woken_for.insert(queue);
  Fill(id);
}

void Dispatcher::OnNotify(const std::string& queue, const std::string& message) {
  // An empty message means "subscribed": anything published before was
  // missed, so treat it as due now.
  int64_t delay_ms = 0;
  if (absl::StartsWith(message, "partitions:")) {  // set_queue.lua, on partition 0
    int count = 0;
    if (absl::SimpleAtoi(message.substr(11), &count) && count >= 1 &&
        count <= store::kMaxPartitions) {
      partitions_->Set(queue, count);  // reports growth (OnPartitionsGrown)
    }
    return;
  }
  if (message == "outbox") {  // _lib_deps.lua: news for dependents elsewhere
    if (on_dependency_news_) on_dependency_news_(queue);
    return;
  }
  if (absl::StartsWith(message, "stop:")) {  // cancel.lua: 'stop:<id> <lease token>'
    const size_t space = message.find(' ', 5);
    if (space != std::string::npos) {
      StopRun(queue, message.substr(5, space - 5), message.substr(space + 1));
    }
    return;
  }
  if (absl::StartsWith(message, kSettledPrefix) || absl::StartsWith(message, kExtendedPrefix)) {
    OnSettledElsewhere(queue, message);
    return;
  }
  if (message.empty()) {  // (re)subscribed: catch up on what was missed
    CatchUpRuns(queue);
    if (on_dependency_news_) on_dependency_news_(queue);
  }
  if (!message.empty() && !absl::SimpleAtoi(message, &delay_ms)) return;
  if (delay_ms <= 0) {
    WakeOne(queue);
  } else {
    ArmQueueTimer(queue, delay_ms);
  }
}

void Dispatcher::OnSettledElsewhere(const std::string& queue, absl::string_view message) {
  const bool settled = absl::StartsWith(message, kSettledPrefix);
  message.remove_prefix(settled ? kSettledPrefix.size() : kExtendedPrefix.size());
  std::vector<absl::string_view> words = absl::StrSplit(message, ' ');
  if (words.size() < 3 || words.size() % 2 == 0) return;  // '<n> (<id> <token>)+'
  int64_t n = 0;
  if (!absl::SimpleAtoi(words[0], &n)) return;
  if (settled) {
    std::vector<std::pair<std::string, std::string>> jobs;
    for (size_t i = 1; i + 1 < words.size(); i += 2) jobs.emplace_back(words[i], words[i + 1]);
    FreeSettled(queue, jobs, /*acked=*/n == 1);  // leases not held here: another replica's
  } else if (words.size() == 3 && n > 0) {
    ExtendHeld(queue, std::string(words[1]), std::string(words[2]), n);
  }
}

void Dispatcher::StopRun(const std::string& queue, const std::string& job_id,
                         const std::string& token) {
  const LeaseTable::Lease* lease = leases_.Find(LeaseKey(queue, job_id), token);
  if (lease == nullptr) return;  // another replica's run, or its lease is gone here
  Session* s = Find(lease->session);
  if (s == nullptr) return;
  v1::StopRun stop;
  stop.set_queue(std::string(store::QueueOfPartition(queue)));
  stop.set_job_id(job_id);
  stop.set_lease_token(token);
  stop.set_reason(v1::StopRun::REASON_CANCEL_REQUESTED);
  s->sink->Stop(std::move(stop));
}

void Dispatcher::CatchUpRuns(const std::string& queue) {
  const std::string prefix = LeaseKey(queue, "");
  std::vector<std::pair<std::string, std::string>> runs;  // (job id, token)
  leases_.ForEach([&](const std::string& key, const LeaseTable::Lease& lease) {
    if (absl::StartsWith(key, prefix)) runs.emplace_back(key.substr(prefix.size()), lease.token);
  });
  if (runs.empty()) return;
  store_->HeldRuns(queue, runs, [this, queue, runs](
                                    absl::StatusOr<std::vector<store::JobStore::HeldRun>> held) {
    if (!held.ok()) {  // the next confirmation asks again; until then, as before
      base::Log(base::LogLevel::kWarning, "held runs not read",
                {{"queue", queue}, {"error", held.status().ToString()}});
      return;
    }
    using State = store::JobStore::HeldRun::State;
    std::vector<std::pair<std::string, std::string>> ended;
    for (size_t i = 0; i < runs.size(); ++i) {  // held_runs.lua answers in order
      const auto& [job_id, token] = runs[i];
      const store::JobStore::HeldRun& run = (*held)[i];
      if (run.state == State::kEnded) {
        ended.emplace_back(job_id, token);
        continue;
      }
      ExtendHeld(queue, job_id, token, run.lease_ms_left);
      if (run.state == State::kCancelRequested) StopRun(queue, job_id, token);
    }
    FreeSettled(queue, ended, /*acked=*/false);
  });
}

void Dispatcher::ArmQueueTimer(const std::string& queue, int64_t delay_ms) {
  auto found = queues_.find(queue);
  if (found == queues_.end()) return;  // no stream reads it any more
  QueueState& q = found->second;
  absl::Time deadline = absl::Now() + absl::Milliseconds(delay_ms);
  if (q.timer != 0 && q.timer_deadline <= deadline) return;
  loop_->Cancel(q.timer);
  q.timer_deadline = deadline;
  q.timer = loop_->RunAfter(absl::Milliseconds(delay_ms), [this, queue] {
    auto found = queues_.find(queue);
    if (found == queues_.end()) return;
    found->second.timer = 0;
    WakeOne(queue);
  });
}

void Dispatcher::ArmExpiryTimer() {
  const absl::Time earliest = leases_.earliest();
  if (earliest == absl::InfiniteFuture() || expiry_timer_at_ <= earliest) return;
  loop_->Cancel(expiry_timer_);
  expiry_timer_at_ = earliest;
  expiry_timer_ = loop_->RunAfter(earliest - absl::Now(), [this] {
    expiry_timer_ = 0;
    expiry_timer_at_ = absl::InfiniteFuture();
    OnLeasesExpired();
  });
}

void Dispatcher::OnLeasesExpired() {
  absl::flat_hash_set<SessionId> freed;
  for (const auto& [key, id] : leases_.TakeExpired(absl::Now())) {
    if (Session* s = Find(id)) s->in_flight.erase(key);
    freed.insert(id);
  }
  OnSlotsFreed(freed);
  ArmExpiryTimer();
}

void Dispatcher::ReleaseLease(const std::string& key) {
  std::optional<SessionId> session = leases_.Remove(key);
  if (!session) return;
  if (Session* s = Find(*session)) s->in_flight.erase(key);
}

}  // namespace jobwire::core
