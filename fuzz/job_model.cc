#include "fuzz/job_model.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "broker/base/error_reason.h"

namespace jobwire::fuzz {
namespace {

std::string Name(const JobRef& ref) { return absl::StrCat(ref.first, "/", ref.second); }

bool IsDocumented(absl::StatusCode c) {
  return c == absl::StatusCode::kOk || c == absl::StatusCode::kNotFound ||
         c == absl::StatusCode::kFailedPrecondition;
}

}  // namespace

const char* StateName(JobModel::State s) {
  switch (s) {
    case JobModel::State::kPending:
      return "pending";
    case JobModel::State::kActive:
      return "active";
    case JobModel::State::kCompleted:
      return "completed";
    case JobModel::State::kDead:
      return "dead";
  }
  return "?";
}

void JobModel::Note(const std::string& rule, const std::string& job, const std::string& detail) {
  if (!finding_) finding_ = Finding{rule, job, detail};
}

JobModel::Job* JobModel::Find(const std::string& queue, const std::string& id) {
  auto it = jobs_.find(JobRef(queue, id));
  return it == jobs_.end() ? nullptr : &it->second;
}

void JobModel::Touch(const std::string& queue, const std::string& id) {
  touched_.emplace_back(queue, id);
}

void JobModel::OnUnexpected(const std::string& job, const absl::Status& answer) {
  Note("unexpected-error", job, absl::StrCat("answered ", answer.ToString()));
}

absl::StatusCode JobModel::ExpectSettle(const Job* job, const std::string& token, bool fail) const {
  if (job == nullptr) return absl::StatusCode::kNotFound;
  if (job->state == State::kActive && token == job->token) return absl::StatusCode::kOk;
  if (token.empty()) return absl::StatusCode::kFailedPrecondition;
  // A Fail repeated with the token of the last failed run answers its outcome
  // again, whatever moved the job since; an Ack repeated while the job stays
  // completed answers OK.
  if (fail && job->fail_token == token) return absl::StatusCode::kOk;
  if (!fail && job->settled == Job::Settled::kAck && job->settled_token == token &&
      job->state == State::kCompleted) {
    return absl::StatusCode::kOk;
  }
  return absl::StatusCode::kFailedPrecondition;
}

bool JobModel::JudgeCode(const char* what, const JobRef& ref, const Job* job,
                         const std::string* token, absl::StatusCode want, const absl::Status& got) {
  if (got.code() == want) {
    ++counts_[absl::StrCat(what, " ", absl::StatusCodeToString(want))];
    return true;
  }
  std::string held = "holds no such job";
  if (job != nullptr) {
    const char* settle =
        token != nullptr && !token->empty() && *token == job->fail_token ? "a Fail with this token"
        : job->settled == Job::Settled::kAck && token != nullptr && *token == job->settled_token
            ? "an Ack with this token"
            : "something else: claim, Cancel, RetryDead or the reaper";
    held = absl::StrCat("holds it ", StateName(job->state), " (attempts ", job->attempts,
                        "; last settled by ", settle, ")");
  }
  std::string says = absl::StrCat(what, " answered ", got.ok() ? "OK" : got.ToString(),
                                  "; the model ", held, " and expects ",
                                  absl::StatusCodeToString(want));
  if (!IsDocumented(got.code())) {
    Note("unexpected-error", Name(ref), says);
  } else if (want == absl::StatusCode::kNotFound || got.code() == absl::StatusCode::kNotFound) {
    Note("not-found", Name(ref), says);
  } else if (got.ok()) {
    if (token != nullptr && *token != job->token) {
      Note("stale-token", Name(ref),
           absl::StrCat(says, " (token \"", *token, "\", current \"", job->token, "\")"));
    } else {
      Note("wrong-state", Name(ref), says);
    }
  } else {
    Note("refused", Name(ref), says);
  }
  return false;
}

void JobModel::OnEnqueue(const std::string& queue, const std::vector<v1::EnqueueRequest>& jobs,
                         const std::vector<store::EnqueueOutcome>& out) {
  if (out.size() != jobs.size()) {
    return Note("unexpected-error", queue,
                absl::StrCat("Enqueue of ", jobs.size(), " jobs answered ", out.size()));
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const v1::EnqueueRequest& e = jobs[i];
    const store::EnqueueOutcome& o = out[i];
    JobRef ref(queue, o.job_id);
    auto holder = e.idempotency_key().empty() ? idem_.end()
                                              : idem_.find({queue, e.idempotency_key()});
    if (o.duplicate) {
      if (holder == idem_.end()) {
        Note("enqueue-duplicate", Name(ref),
             absl::StrCat("duplicate = true, but no job the model holds has idempotency key \"",
                          e.idempotency_key(), "\""));
      } else if (holder->second != o.job_id) {
        Note("enqueue-duplicate", Name(ref),
             absl::StrCat("duplicate of key \"", e.idempotency_key(), "\" answered id ",
                          o.job_id, ", the key names ", holder->second));
      }
      if (Find(queue, o.job_id) != nullptr) Touch(queue, o.job_id);
      continue;
    }
    if (e.depends_on_size() > 0) {
      // The fuzzer names only parents that cannot exist (request_fuzzer.cc,
      // NoSuchParents): the job is refused, nothing stored, no key taken.
      const std::string& parent = e.depends_on(0);
      const auto metadata = base::MetadataOf(o.status);
      if (!o.job_id.empty() || o.status.code() != absl::StatusCode::kNotFound ||
          base::ReasonOf(o.status) != base::reason::kDependencyNotFound ||
          metadata.empty() || metadata[0] != std::make_pair(std::string("job_id"), parent)) {
        Note("enqueue-dependency", Name(ref),
             absl::StrCat("a job naming the missing parent \"", parent, "\" answered id \"",
                          o.job_id, "\", ", o.status.ToString()));
      }
      ++counts_["enqueue DEPENDENCY_NOT_FOUND"];
      continue;
    }
    if (!o.status.ok()) {
      Note("unexpected-error", Name(ref), absl::StrCat("answered ", o.status.ToString()));
      continue;
    }
    if (holder != idem_.end()) {
      Note("enqueue-duplicate", Name(ref),
           absl::StrCat("stored a new job though idempotency key \"", e.idempotency_key(),
                        "\" names job ", holder->second));
    }
    if (o.job_id.empty() || Find(queue, o.job_id) != nullptr) {
      Note("enqueue-id", Name(ref), "a new job got an id that is empty or already held");
    }
    ++counts_["enqueued"];
    last_enqueued_[queue] = o.job_id;
    Job& job = jobs_[ref];
    job = Job();
    job.type = e.type();
    job.payload = e.payload();
    job.idempotency_key = e.idempotency_key();
    job.priority = e.priority();
    job.max_attempts = e.max_attempts();
    job.backoff_base = e.backoff_base_ms();
    job.backoff_max = e.backoff_max_ms();
    job.delay_ms = e.delay_ms();
    job.run_at_ms = e.run_at_ms();
    job.retention = e.has_completed_retention_ms() ? e.completed_retention_ms() : retention_ms_;
    job.fresh = true;
    if (!e.idempotency_key().empty()) idem_[{queue, e.idempotency_key()}] = o.job_id;
    Touch(queue, o.job_id);
  }
}

void JobModel::OnClaim(const std::string& queue, int want, int64_t lease_ms,
                       const std::string& worker_id, const std::vector<std::string>& types,
                       TimeWindow window, const std::vector<v1::ClaimedJob>& jobs) {
  auto wanted = [&types](const std::string& type) {
    return types.empty() || std::find(types.begin(), types.end(), type) != types.end();
  };
  const bool paused = paused_[queue];
  if (paused && !jobs.empty()) {
    return Note("claim-paused", queue,
                absl::StrCat("Claim delivered ", jobs.size(), " job(s) of a paused queue"));
  }
  // The claim's Redis time: every lease of one claim expires lease_ms after it.
  const int64_t now = jobs.empty() ? window.from_ms : jobs[0].lease_expires_at_ms() - lease_ms;
  using Key = std::tuple<int64_t, int64_t, std::string>;  // claim order
  auto key = [](const Job& j, const std::string& id) {
    return Key(-j.priority, j.due_at.value_or(0), id);
  };
  std::optional<Key> last;
  std::set<std::string> seen;
  for (const v1::ClaimedJob& c : jobs) {
    const std::string& id = c.job().id();
    JobRef ref(queue, id);
    Job* job = Find(queue, id);
    if (job == nullptr || !seen.insert(id).second) {
      Note("claim-state", Name(ref), "Claim delivered a job the model does not hold, or twice");
      continue;
    }
    if (job->state != State::kPending) {
      Note("claim-state", Name(ref),
           absl::StrCat("Claim delivered a job the model holds ", StateName(job->state)));
    }
    if (!wanted(job->type)) {
      Note("claim-type", Name(ref),
           absl::StrCat("Claim of some types delivered a job of type \"", job->type, "\""));
    }
    if (c.lease_expires_at_ms() - lease_ms != now) {
      Note("claim-job", Name(ref), "the leases of one claim do not share one claim time");
    }
    if (job->due_at && *job->due_at > now) {
      Note("claim-early", Name(ref),
           absl::StrCat("claimed at ", now, ", due only at ", *job->due_at));
    }
    if (c.job().attempts() != job->attempts + 1) {
      Note("claim-attempts", Name(ref),
           absl::StrCat("claimed with attempts ", c.job().attempts(), ", the model expects ",
                        job->attempts + 1));
    }
    if (c.lease_token().empty() || c.lease_token() == job->last_claimed) {
      Note("claim-token", Name(ref),
           absl::StrCat("lease token \"", c.lease_token(), "\" is empty or not new"));
    }
    Key k = key(*job, id);
    if (!last || k > *last) last = k;
    ++counts_["claimed"];
    last_claimed_[queue] = id;
    job->state = State::kActive;
    job->cancel_requested = false;
    job->attempts += 1;
    job->token = job->last_claimed = c.lease_token();
    job->claimed_at = now;
    job->lease_expires_at = c.lease_expires_at_ms();
    job->worker_id = worker_id;
    job->settled = Job::Settled::kNone;
    Compare("claim-job", ref, *job, ViewOfJob(c.job()));
    Touch(queue, id);
  }
  if (paused) return;
  // Due jobs of its types left behind: none when the claim took fewer than
  // it could, and none ahead of a claimed job. Claim promotes at most 1000
  // scheduled jobs per call, so a queue with more pending jobs is not
  // judged.
  int pending = 0;
  std::optional<JobRef> behind, ahead;
  for (auto it = jobs_.lower_bound({queue, ""}); it != jobs_.end() && it->first.first == queue;
       ++it) {
    const Job& j = it->second;
    if (j.state != State::kPending) continue;
    ++pending;
    if (!j.due_at || *j.due_at > now || !wanted(j.type)) continue;
    if (!behind) behind = it->first;
    if (last && key(j, it->first.second) < *last && !ahead) ahead = it->first;
  }
  if (pending > 1000 || !behind) return;
  if (static_cast<int>(jobs.size()) < want) {
    Note("claim-missed", Name(*behind),
         absl::StrCat("Claim of up to ", want, " job(s) at ", now, " delivered ", jobs.size(),
                      " and left this due job pending"));
  } else if (ahead) {
    Note("claim-order", Name(*ahead),
         "Claim left this due job pending but delivered one that comes after it (priority, "
         "due time, id)");
  }
}

void JobModel::OnAck(const v1::AckRequest& r, const absl::Status& answer) {
  JobRef ref(r.queue(), r.job_id());
  Job* job = Find(r.queue(), r.job_id());
  if (job == nullptr && tombstones_.count(ref)) return OnAckOfDeleted(r, answer);
  absl::StatusCode want = ExpectSettle(job, r.lease_token(), /*fail=*/false);
  if (!JudgeCode("Ack", ref, job, &r.lease_token(), want, answer) || job == nullptr) return;
  Touch(ref.first, ref.second);
  if (!answer.ok() || job->state != State::kActive) return;  // refused, or a repeat
  if (job->retention == 0) {  // deleted on Ack; its idempotency key stays
    ++counts_["Ack deleted"];
    tombstones_[ref] = Tombstone{r.lease_token(), absl::Now()};
    jobs_.erase(ref);
    removed_.push_back(ref);
    return;
  }
  job->state = State::kCompleted;
  job->result = r.result();
  job->lease_expires_at = 0;
  job->finished_at.reset();
  job->settled = Job::Settled::kAck;
  job->settled_token = r.lease_token();
}

void JobModel::OnAckOfDeleted(const v1::AckRequest& r, const absl::Status& answer) {
  JobRef ref(r.queue(), r.job_id());
  const Tombstone& t = tombstones_[ref];
  // The tombstone lasts at least the grace after the Ack (plus what was left
  // of the lease); once past the grace it may be gone (NOT_FOUND).
  const bool may_be_gone =
      absl::Now() - t.acked_at >= absl::Milliseconds(store::kAckTombstoneGraceMs);
  const absl::StatusCode want = r.lease_token() == t.token ? absl::StatusCode::kOk
                                                           : absl::StatusCode::kFailedPrecondition;
  if (may_be_gone && answer.code() == absl::StatusCode::kNotFound) return;
  if (answer.code() == want) {
    ++counts_[absl::StrCat("Ack of deleted ", absl::StatusCodeToString(want))];
    return;
  }
  Note(answer.code() == absl::StatusCode::kNotFound ? "not-found" : "ack-deleted", Name(ref),
       absl::StrCat("Ack of a job deleted on Ack (retention 0) answered ", answer.ToString(),
                    "; the model expects ", absl::StatusCodeToString(want),
                    r.lease_token() == t.token ? " (a repeat)" : " (another token)"));
}

void JobModel::ExpectBackoff(const char* rule, const JobRef& ref, const Job& job, int64_t due,
                             TimeWindow w, int64_t retry_after_ms) {
  int64_t lo = retry_after_ms, hi = retry_after_ms;
  if (retry_after_ms <= 0) {  // lua/_lib.lua backoff_ms: d plus up to 10% jitter
    double d = static_cast<double>(job.backoff_base) * std::pow(2.0, job.attempts - 1);
    d = std::min(d, static_cast<double>(job.backoff_max));
    lo = static_cast<int64_t>(std::floor(d));
    hi = static_cast<int64_t>(std::floor(d * 1.1)) + 1;
  }
  if (due < w.from_ms + lo || due > w.to_ms + hi) {
    Note(rule, Name(ref),
         absl::StrCat("retry due at ", due, ", outside [", w.from_ms + lo, ", ", w.to_ms + hi,
                      "] (delay ", lo, "..", hi, " ms after a call within [", w.from_ms, ", ",
                      w.to_ms, "], attempts ", job.attempts, ")"));
  }
}

void JobModel::OnFail(const v1::FailRequest& r, TimeWindow window,
                      const absl::StatusOr<store::FailOutcome>& answer) {
  JobRef ref(r.queue(), r.job_id());
  Job* job = Find(r.queue(), r.job_id());
  absl::StatusCode want = ExpectSettle(job, r.lease_token(), /*fail=*/true);
  if (!JudgeCode("Fail", ref, job, &r.lease_token(), want, answer.status()) || job == nullptr) {
    return;
  }
  Touch(ref.first, ref.second);
  if (!answer.ok()) return;
  if (r.lease_token() == job->fail_token) {  // a repeat: the same answer again
    if (answer->dead != job->fail_outcome.dead ||
        answer->next_attempt_at_ms != job->fail_outcome.next_attempt_at_ms || !answer->repeat) {
      Note("repeat-outcome", Name(ref),
           absl::StrCat("repeated Fail answered dead=", answer->dead, " at ",
                        answer->next_attempt_at_ms, " repeat=", answer->repeat,
                        ", the first answered dead=", job->fail_outcome.dead, " at ",
                        job->fail_outcome.next_attempt_at_ms));
    }
    return;
  }
  if (answer->repeat) {
    Note("repeat-outcome", Name(ref), "a first Fail answered as a repeat");
  }
  // keep_attempt (valid only with retry_after_ms and without non_retryable)
  // gives the run's attempt back unless Cancel asked the run to stop
  // (lua/_lib.lua, settle_failure; run timeouts are not modelled).
  if (r.keep_attempt() && !job->cancel_requested && job->attempts > 0) job->attempts -= 1;
  const bool dead =
      r.non_retryable() || job->attempts >= job->max_attempts || job->cancel_requested;
  if (answer->dead != dead) {
    Note("fail-outcome", Name(ref),
         absl::StrCat("Fail answered dead=", answer->dead, " for attempts ", job->attempts, "/",
                      job->max_attempts, ", non_retryable=", r.non_retryable()));
  } else if (dead && answer->next_attempt_at_ms != 0) {
    Note("fail-outcome", Name(ref), "a dead outcome with a next attempt time");
  } else if (!dead) {
    ExpectBackoff("fail-outcome", ref, *job, answer->next_attempt_at_ms, window,
                  r.retry_after_ms());
  }
  job->state = dead ? State::kDead : State::kPending;
  if (!dead) job->due_at = answer->next_attempt_at_ms;
  job->error = job->cancel_requested ? "cancelled" : r.error();
  job->lease_expires_at = 0;
  job->finished_at.reset();
  job->settled = Job::Settled::kNone;
  job->fail_token = r.lease_token();
  job->fail_outcome = *answer;
}

void JobModel::OnExtendLease(const v1::ExtendLeaseRequest& r, int64_t lease_ms,
                             const absl::StatusOr<int64_t>& answer) {
  JobRef ref(r.queue(), r.job_id());
  Job* job = Find(r.queue(), r.job_id());
  absl::StatusCode want = job == nullptr ? absl::StatusCode::kNotFound
                          : job->state == State::kActive && job->token == r.lease_token() &&
                                    !job->cancel_requested
                              ? absl::StatusCode::kOk
                              : absl::StatusCode::kFailedPrecondition;
  if (!JudgeCode("ExtendLease", ref, job, &r.lease_token(), want, answer.status()) ||
      job == nullptr) {
    return;
  }
  Touch(ref.first, ref.second);
  if (!answer.ok()) return;
  // The new expiry is lease_ms after a Redis time no earlier than the claim
  // or the previous extension.
  if (*answer - lease_ms < job->claimed_at) {
    Note("lease-expiry", Name(ref),
         absl::StrCat("ExtendLease by ", lease_ms, " ms answered expiry ", *answer,
                      ", before the lease was granted or last renewed (", job->claimed_at, ")"));
  }
  job->claimed_at = std::max(job->claimed_at, *answer - lease_ms);
  job->lease_expires_at = *answer;
}

void JobModel::OnCancel(const v1::CancelRequest& r, const absl::Status& answer) {
  JobRef ref(r.queue(), r.job_id());
  Job* job = Find(r.queue(), r.job_id());
  absl::StatusCode want =
      job == nullptr ? absl::StatusCode::kNotFound
      : job->state == State::kPending || job->state == State::kActive
          ? absl::StatusCode::kOk
          : absl::StatusCode::kFailedPrecondition;
  if (!JudgeCode("Cancel", ref, job, nullptr, want, answer) || job == nullptr) return;
  Touch(ref.first, ref.second);
  if (!answer.ok()) return;
  if (job->state == State::kActive) {  // the run is asked to stop; it stays active
    job->cancel_requested = true;
    return;
  }
  job->state = State::kDead;
  job->error = "cancelled";
  job->finished_at.reset();
  job->settled = Job::Settled::kNone;
}

void JobModel::OnGetJob(const std::string& queue, const std::string& id,
                        const absl::StatusOr<v1::Job>& answer) {
  JobRef ref(queue, id);
  Job* job = Find(queue, id);
  absl::StatusCode want = job == nullptr ? absl::StatusCode::kNotFound : absl::StatusCode::kOk;
  if (!JudgeCode("GetJob", ref, job, nullptr, want, answer.status()) || !answer.ok()) return;
  Compare("read-job", ref, *job, ViewOfJob(*answer));
}

void JobModel::OnReaped(const std::string& queue, TimeWindow window,
                        const store::ReapOutcome& total) {
  reap_ = Pending{queue, total.reaped, 0, total.dead, 0};
  for (auto it = jobs_.lower_bound({queue, ""}); it != jobs_.end() && it->first.first == queue;
       ++it) {
    if (it->second.state != State::kActive) continue;
    it->second.reap_window = window;
    Touch(queue, it->first.second);
  }
}

std::vector<JobRef> JobModel::TakeTouched() {
  std::vector<JobRef> out = std::move(touched_);
  out.insert(out.end(), removed_.begin(), removed_.end());
  touched_.clear();
  removed_.clear();
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void JobModel::Clear() {
  jobs_.clear();
  tombstones_.clear();
  idem_.clear();
  paused_.clear();
  last_claimed_.clear();
  last_enqueued_.clear();
  touched_.clear();
  removed_.clear();
  reap_.reset();
  purge_.reset();
}

bool JobModel::Holds(const std::string& queue, State state) const {
  for (auto it = jobs_.lower_bound({queue, ""}); it != jobs_.end() && it->first.first == queue;
       ++it) {
    if (it->second.state == state) return true;
  }
  return false;
}

std::string JobModel::LatestJob(const std::string& queue, bool claimed) const {
  // The job claimed last may have been deleted by its Ack (retention 0):
  // until the next claim, repeated Acks of it reach its tombstone.
  auto latest = last_claimed_.find(queue);
  if (claimed && latest != last_claimed_.end() &&
      tombstones_.count(JobRef(queue, latest->second))) {
    return latest->second;
  }
  const auto* first = &last_claimed_;
  const auto* second = &last_enqueued_;
  if (!claimed) std::swap(first, second);
  for (const auto* ids : {first, second}) {
    auto it = ids->find(queue);
    if (it != ids->end() && jobs_.count(JobRef(queue, it->second))) return it->second;
  }
  return "";
}

std::string JobModel::LatestToken(const std::string& queue, const std::string& id) const {
  auto it = jobs_.find(JobRef(queue, id));
  if (it != jobs_.end()) return it->second.last_claimed;
  auto gone = tombstones_.find(JobRef(queue, id));
  return gone == tombstones_.end() ? "" : gone->second.token;
}

}  // namespace jobwire::fuzz
