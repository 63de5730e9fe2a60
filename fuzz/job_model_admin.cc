// JobModel, the Admin answers: ListJobs, stats and ListQueues (compared with
// the jobs the model holds), RetryDead, DeleteJob, PurgeDead and
// Pause/Resume (see job_model.h).
#include <set>

#include "absl/strings/str_cat.h"
#include "fuzz/job_model.h"
#include "fuzz/job_view.h"

namespace jobwire::fuzz {
namespace {

std::string Name(const JobRef& ref) { return absl::StrCat(ref.first, "/", ref.second); }

}  // namespace

void JobModel::OnListJobs(const std::string& queue, v1::JobState state, const std::string& type,
                          const std::vector<v1::Job>& jobs) {
  for (const v1::Job& j : jobs) {
    JobRef ref(queue, j.id());
    Job* job = Find(queue, j.id());
    if (job == nullptr) {
      Note("read-job", Name(ref), "ListJobs returned a job the model does not hold");
    } else if (static_cast<int>(job->state) + 1 != static_cast<int>(state)) {  // v1 enum order
      Note("read-job", Name(ref),
           absl::StrCat("ListJobs of state ", v1::JobState_Name(state), " returned a job the model holds ",
                        StateName(job->state)));
    } else if (!type.empty() && job->type != type) {
      Note("read-job", Name(ref), absl::StrCat("ListJobs of type \"", type, "\" returned type \"",
                                               job->type, "\""));
    } else {
      Compare("read-job", ref, *job, ViewOfJob(j));
    }
  }
}

void JobModel::OnStats(const v1::QueueStats& stats) {
  const std::string& queue = stats.queue();
  int64_t count[4] = {0, 0, 0, 0};
  for (auto it = jobs_.lower_bound({queue, ""}); it != jobs_.end() && it->first.first == queue;
       ++it) {
    ++count[static_cast<int>(it->second.state)];
  }
  int64_t got[4] = {stats.pending_due() + stats.pending_scheduled(), stats.active(),
                    stats.completed(), stats.dead()};
  for (int s = 0; s < 4; ++s) {
    if (got[s] != count[s]) {
      return Note("stats", queue,
                  absl::StrCat("stats count ", got[s], " ", StateName(static_cast<State>(s)),
                               " jobs, the model holds ", count[s]));
    }
  }
  if (stats.paused() != paused_[queue]) {
    Note("stats", queue, absl::StrCat("stats say paused=", stats.paused()));
  }
}

void JobModel::OnListQueues(const std::vector<v1::QueueStats>& queues) {
  std::set<std::string> listed;
  for (const v1::QueueStats& q : queues) {
    listed.insert(q.queue());
    OnStats(q);
  }
  for (const auto& [ref, job] : jobs_) {
    if (!listed.count(ref.first)) {
      return Note("list-queues", ref.first, "ListQueues leaves out a queue that has jobs");
    }
  }
}

void JobModel::OnRetryDead(const std::string& queue, const std::vector<std::string>& ids,
                           bool all, const std::string& type,
                           const absl::StatusOr<int64_t>& answer) {
  if (!answer.ok()) return OnUnexpected(queue, answer.status());
  std::vector<std::string> moved;
  auto movable = [&](const Job& j) {
    return j.state == State::kDead && (type.empty() || j.type == type);
  };
  if (all) {
    for (auto it = jobs_.lower_bound({queue, ""}); it != jobs_.end() && it->first.first == queue;
         ++it) {
      if (movable(it->second)) moved.push_back(it->first.second);
    }
  } else {
    for (const std::string& id : ids) {
      Job* job = Find(queue, id);
      if (job == nullptr) continue;
      Touch(queue, id);  // left alone unless it moves
      if (movable(*job) && std::find(moved.begin(), moved.end(), id) == moved.end()) {
        moved.push_back(id);
      }
    }
  }
  if (*answer != static_cast<int64_t>(moved.size())) {
    Note("retry-count", queue,
         absl::StrCat("RetryDead answered moved=", *answer, ", the model holds ", moved.size(),
                      " dead job(s) it should move"));
  }
  counts_["retried dead"] += static_cast<int64_t>(moved.size());
  for (const std::string& id : moved) {
    Job& job = *Find(queue, id);
    job.state = State::kPending;
    job.attempts = 0;
    job.token.clear();
    job.due_at.reset();
    job.lease_expires_at = 0;
    job.settled = Job::Settled::kNone;
    Touch(queue, id);
  }
}

void JobModel::FreeIdempotencyKey(const JobRef& ref, const Job& job) {
  if (job.idempotency_key.empty()) return;
  auto it = idem_.find({ref.first, job.idempotency_key});
  if (it != idem_.end() && it->second == ref.second) idem_.erase(it);
}

void JobModel::OnDeleteJob(const std::string& queue, const std::string& id,
                           const absl::Status& answer) {
  JobRef ref(queue, id);
  Job* job = Find(queue, id);
  absl::StatusCode want = job == nullptr ? absl::StatusCode::kNotFound : absl::StatusCode::kOk;
  if (!JudgeCode("DeleteJob", ref, job, nullptr, want, answer) || !answer.ok()) return;
  FreeIdempotencyKey(ref, *job);
  jobs_.erase(ref);
  removed_.push_back(ref);
}

void JobModel::OnPurgeDead(const std::string& queue, int64_t older_than_ms, TimeWindow window,
                           const absl::StatusOr<int64_t>& answer) {
  if (!answer.ok()) return OnUnexpected(queue, answer.status());
  purge_ = Pending{queue, *answer};
  for (auto it = jobs_.lower_bound({queue, ""}); it != jobs_.end() && it->first.first == queue;
       ++it) {
    if (it->second.state != State::kDead) continue;
    it->second.purge_window = window;
    it->second.purge_older_than = older_than_ms;
    Touch(queue, it->first.second);
  }
}

void JobModel::OnSetPaused(const std::string& queue, bool paused,
                           const absl::StatusOr<bool>& answer) {
  if (!answer.ok()) return OnUnexpected(queue, answer.status());
  bool& was = paused_[queue];
  if (*answer != (was != paused)) {
    Note("pause-answer", queue,
         absl::StrCat(paused ? "Pause" : "Resume", " answered changed=", *answer,
                      ", the model has paused=", was));
  }
  was = paused;
}

}  // namespace jobwire::fuzz
