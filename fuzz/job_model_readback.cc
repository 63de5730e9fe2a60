// JobModel, second half: the read-back. The stored jobs an input touched
// settle what Reap and PurgeDead did, and are compared field by field with
// the model (see job_model.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "fuzz/job_model.h"

namespace jobwire::fuzz {
namespace {

std::string Name(const JobRef& ref) { return absl::StrCat(ref.first, "/", ref.second); }

// Lua's arithmetic on the enqueue arguments (doubles), as lua/enqueue.lua
// computes available_at: max(now + delay_ms, run_at_ms).
int64_t EnqueueDue(int64_t created_at, int64_t delay_ms, int64_t run_at_ms) {
  double at = static_cast<double>(created_at) + static_cast<double>(delay_ms);
  double run_at = static_cast<double>(run_at_ms);
  return static_cast<int64_t>(std::max(at, run_at));
}

}  // namespace

void JobModel::ResolveReap(const JobRef& ref, Job& job, const JobView& v) {
  const TimeWindow w = *job.reap_window;
  job.reap_window.reset();
  if (v.exists && v.state == "active") {  // not taken back
    if (job.lease_expires_at <= w.from_ms) {
      Note("reap-missed", Name(ref),
           absl::StrCat("the lease expired at ", job.lease_expires_at,
                        " but is still held after a reaper pass from ", w.from_ms));
    }
    return;
  }
  if (job.lease_expires_at > w.to_ms) {
    Note("reap-early", Name(ref),
         absl::StrCat("the lease, valid until ", job.lease_expires_at,
                      ", was taken back by a reaper pass that ended at ", w.to_ms));
  }
  const bool dead = job.attempts >= job.max_attempts || job.cancel_requested;
  ++counts_["reaped"];
  ++reap_->seen;
  if (dead) ++reap_->seen_dead;
  job.state = dead ? State::kDead : State::kPending;
  job.token.clear();
  job.error = job.cancel_requested ? "cancelled" : "lease expired";
  job.lease_expires_at = 0;
  job.finished_at.reset();
  job.settled = Job::Settled::kNone;
  job.fail_token.clear();  // reap.lua records an untokened failed run
  if (!dead) {
    ExpectBackoff("reap-outcome", ref, job, v.available_at, w, 0);
    job.due_at = v.available_at;
  }
}

void JobModel::ResolvePurge(const JobRef& ref, Job& job, const JobView& v) {
  const TimeWindow w = *job.purge_window;
  job.purge_window.reset();
  const int64_t finished = job.finished_at.value_or(0);
  if (v.exists) {
    if (finished <= w.from_ms - job.purge_older_than) {
      Note("purge-missed", Name(ref),
           absl::StrCat("died at ", finished, ", kept by a PurgeDead of jobs older than ",
                        job.purge_older_than, " ms that started at ", w.from_ms));
    }
    return;
  }
  if (finished > w.to_ms - job.purge_older_than) {
    Note("purge-early", Name(ref),
         absl::StrCat("died at ", finished, ", removed by a PurgeDead of jobs older than ",
                      job.purge_older_than, " ms that ended at ", w.to_ms));
  }
  ++counts_["purged"];
  ++purge_->seen;
  FreeIdempotencyKey(ref, job);
  jobs_.erase(ref);
}

void JobModel::OnStored(const JobRef& ref, const JobView& stored) {
  Job* job = Find(ref.first, ref.second);
  if (job != nullptr && job->purge_window) {
    ResolvePurge(ref, *job, stored);
    job = Find(ref.first, ref.second);
  }
  if (job == nullptr) {
    if (stored.exists) Note("stored.exists", Name(ref), "the job should be gone, it is stored");
    return;
  }
  if (job->reap_window) ResolveReap(ref, *job, stored);
  if (!stored.exists) return Note("stored.missing", Name(ref), "the model holds it, Redis not");
  ++counts_["read back"];
  Compare("stored", ref, *job, stored);
}

void JobModel::Compare(const char* source, const JobRef& ref, Job& job, const JobView& v) {
  const bool hash = v.pttl.has_value();  // a stored hash: learn what the model lacks
  auto bad = [&](const char* field, const auto& got, const auto& want) {
    Note(absl::StrCat(source, ".", field), Name(ref),
         absl::StrCat(field, " is \"", got, "\", the model expects \"", want, "\" (",
                      StateName(job.state), ", attempts ", job.attempts, ")"));
  };
  if (v.state != StateName(job.state)) return bad("state", v.state, StateName(job.state));
  if (v.attempts != job.attempts) return bad("attempts", v.attempts, job.attempts);
  if (v.type != job.type) return bad("type", v.type, job.type);
  if (v.payload != job.payload) return bad("payload", v.payload, job.payload);
  if (v.priority != job.priority) return bad("priority", v.priority, job.priority);
  if (v.max_attempts != job.max_attempts) return bad("max_attempts", v.max_attempts, job.max_attempts);
  if (v.backoff_base != job.backoff_base) return bad("backoff_base", v.backoff_base, job.backoff_base);
  if (v.backoff_max != job.backoff_max) return bad("backoff_max", v.backoff_max, job.backoff_max);
  if (v.idempotency_key != job.idempotency_key) {
    return bad("idempotency_key", v.idempotency_key, job.idempotency_key);
  }
  if (v.result != job.result) return bad("result", v.result, job.result);
  if (v.error != job.error) return bad("error", v.error, job.error);
  if (v.worker_id != job.worker_id) return bad("worker_id", v.worker_id, job.worker_id);
  if (job.created_at) {
    if (v.created_at != *job.created_at) return bad("created_at", v.created_at, *job.created_at);
  } else if (hash) {
    if (v.created_at <= 0) return bad("created_at", v.created_at, "> 0");
    job.created_at = v.created_at;
  }
  if (job.due_at) {
    if (v.available_at != *job.due_at) return bad("available_at", v.available_at, *job.due_at);
  } else if (hash && job.created_at) {
    if (job.fresh) {  // as enqueued
      int64_t due = EnqueueDue(*job.created_at, job.delay_ms, job.run_at_ms);
      if (v.available_at != due) return bad("available_at", v.available_at, due);
      job.fresh = false;
    }
    job.due_at = v.available_at;
  }
  if (job.state == State::kActive) {
    if (v.lease_expires_at != job.lease_expires_at) {
      return bad("lease_expires_at", v.lease_expires_at, job.lease_expires_at);
    }
    if (v.lease_token && *v.lease_token != job.token) {
      return bad("lease_token", *v.lease_token, job.token);
    }
  } else if (v.lease_expires_at != 0) {
    return bad("lease_expires_at", v.lease_expires_at, 0);
  }
  const bool finished = job.state == State::kCompleted || job.state == State::kDead;
  if (!finished) {
    if (v.finished_at != 0) return bad("finished_at", v.finished_at, 0);
  } else if (job.finished_at) {
    if (v.finished_at != *job.finished_at) return bad("finished_at", v.finished_at, *job.finished_at);
  } else if (hash) {
    if (v.finished_at <= 0) return bad("finished_at", v.finished_at, "> 0");
    job.finished_at = v.finished_at;
  }
  if (hash) {
    if (job.state == State::kCompleted) {
      if (*v.pttl <= 0 || *v.pttl > job.retention) {
        return bad("pttl", *v.pttl, absl::StrCat("1..", job.retention));
      }
    } else if (*v.pttl != -1) {
      return bad("pttl", *v.pttl, -1);
    }
  }
}

void JobModel::EndInput() {
  if (reap_ && (reap_->seen != reap_->expected || reap_->seen_dead != reap_->expected_dead)) {
    Note("reap-count", reap_->queue,
         absl::StrCat("Reap reported ", reap_->expected, " taken back (", reap_->expected_dead,
                      " dead); the read-back shows ", reap_->seen, " (", reap_->seen_dead, ")"));
  }
  if (purge_ && purge_->seen != purge_->expected) {
    Note("purge-count", purge_->queue,
         absl::StrCat("PurgeDead answered ", purge_->expected, " purged; the read-back shows ",
                      purge_->seen));
  }
  reap_.reset();
  purge_.reset();
}

void JobModel::OnStoredJobCount(int64_t stored) {
  if (stored != static_cast<int64_t>(jobs_.size())) {
    Note("stored.count", "",
         absl::StrCat("Redis holds ", stored, " job hashes, the model ", jobs_.size()));
  }
}

}  // namespace jobwire::fuzz
