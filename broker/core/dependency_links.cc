#include "broker/core/dependency_links.h"

#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/base/logging.h"
#include "broker/store/keys.h"

namespace jobwire::core {
namespace {

// News read from an outbox per call, at most.
constexpr int kDrainBatch = 100;
// Children a recovery pass links again per queue, at most.
constexpr int kRelinkBatch = 100;

// Runs `done` once `count` parts have called Done(); collects what they
// hand over under a mutex.
template <typename T>
class Gather {
 public:
  Gather(size_t count, std::function<void(std::vector<T>)> done)
      : remaining_(count), done_(std::move(done)) {}
  void Done(std::vector<T> part) {
    std::vector<T> all;
    {
      absl::MutexLock lock(&mu_);
      for (T& item : part) items_.push_back(std::move(item));
      if (--remaining_ > 0) return;
      all = std::move(items_);
    }
    done_(std::move(all));
  }

 private:
  absl::Mutex mu_;
  std::vector<T> items_ ABSL_GUARDED_BY(mu_);
  size_t remaining_ ABSL_GUARDED_BY(mu_);
  std::function<void(std::vector<T>)> done_;
};

// The child store queue a news entry is for: its first word.
std::string ChildQueueOf(const std::string& news) { return news.substr(0, news.find(' ')); }

void LogFailure(absl::string_view what, const std::string& queue, const absl::Status& status) {
  base::Log(base::LogLevel::kWarning, "dependency step failed; the recovery pass retries it",
            {{"step", std::string(what)}, {"queue", queue}, {"error", status.ToString()}});
}

}  // namespace

bool IsParentRef(const std::string& entry) { return entry.find('/') != std::string::npos; }

bool HasParentRefs(const std::vector<v1::EnqueueRequest>& jobs) {
  for (const v1::EnqueueRequest& job : jobs) {
    for (const std::string& entry : job.depends_on()) {
      if (IsParentRef(entry)) return true;
    }
  }
  return false;
}

DependencyLinks::DependencyLinks(const store::DependencyStore* store) : store_(store) {}

void DependencyLinks::Check(std::vector<v1::EnqueueRequest> jobs,
                            store::Callback<std::vector<v1::EnqueueRequest>> done) {
  // parent store queue -> its ids named (distinct)
  std::map<std::string, std::set<std::string>> named;
  for (const v1::EnqueueRequest& job : jobs) {
    for (const std::string& entry : job.depends_on()) {
      if (!IsParentRef(entry)) continue;
      auto [queue, id] = store::ParentOfRef(entry);
      named[queue].insert(std::move(id));
    }
  }
  struct State {
    absl::Mutex mu;
    size_t remaining;
    absl::Status error;
    std::set<std::pair<std::string, std::string>> missing;  // (store queue, id)
    std::vector<v1::EnqueueRequest> jobs;
    store::Callback<std::vector<v1::EnqueueRequest>> done;
  };
  auto state = std::make_shared<State>();
  state->remaining = named.size();
  state->jobs = std::move(jobs);
  state->done = std::move(done);
  if (named.empty()) return state->done(std::move(state->jobs));
  for (const auto& [queue, ids] : named) {
    store_->Peek(queue, std::vector<std::string>(ids.begin(), ids.end()),
                 [state, queue = queue](absl::StatusOr<std::vector<std::string>> missing) {
                   {
                     absl::MutexLock lock(&state->mu);
                     if (!missing.ok()) {
                       state->error = missing.status();
                     } else {
                       for (std::string& id : *missing) state->missing.emplace(queue, std::move(id));
                     }
                     if (--state->remaining > 0) return;
                   }
                   if (!state->error.ok()) return state->done(state->error);
                   for (v1::EnqueueRequest& job : state->jobs) {
                     for (std::string& entry : *job.mutable_depends_on()) {
                       if (!IsParentRef(entry)) continue;
                       if (state->missing.count(store::ParentOfRef(entry)) > 0) {
                         entry = absl::StrCat("!", entry);
                         break;  // enqueue.lua names the first
                       }
                     }
                   }
                   state->done(std::move(state->jobs));
                 });
  }
}

void DependencyLinks::LinkStored(const std::string& queue,
                                 const std::vector<v1::EnqueueRequest>& jobs,
                                 const std::vector<store::EnqueueOutcome>& outcomes,
                                 std::function<void()> done) {
  std::vector<store::DependencyLink> links;
  for (size_t i = 0; i < jobs.size() && i < outcomes.size(); ++i) {
    const store::EnqueueOutcome& out = outcomes[i];
    if (!out.status.ok() || out.duplicate) continue;
    const std::string child_queue =
        store::PartitionQueue(queue, store::PartitionOfJobId(out.job_id));
    for (const std::string& entry : jobs[i].depends_on()) {
      if (IsParentRef(entry)) links.push_back(store::DependencyLink{child_queue, out.job_id, entry});
    }
  }
  Link(std::move(links), std::move(done));
}

void DependencyLinks::Link(std::vector<store::DependencyLink> links, std::function<void()> done) {
  if (links.empty()) return done();
  // parent store queue -> its links
  std::map<std::string, std::vector<store::DependencyLink>> by_parent;
  // child (store queue, id) -> links not made yet
  auto unmade = std::make_shared<std::map<std::pair<std::string, std::string>, int>>();
  for (store::DependencyLink& link : links) {
    ++(*unmade)[{link.child_queue, link.child_id}];
    std::string parent = store::ParentOfRef(link.ref).first;
    by_parent[std::move(parent)].push_back(std::move(link));
  }
  struct Answer {
    std::vector<store::DependencyLink> links;
    std::vector<std::string> news;  // empty when the call failed
  };
  auto resolve = [this, unmade, done = std::move(done)](std::vector<Answer> answers) {
    // child store queue -> the news for it, then the confirms
    std::map<std::string, std::vector<std::string>> by_child;
    for (Answer& answer : answers) {
      if (answer.news.empty()) continue;
      for (size_t i = 0; i < answer.links.size(); ++i) {
        const store::DependencyLink& link = answer.links[i];
        by_child[link.child_queue].push_back(std::move(answer.news[i]));
        --(*unmade)[{link.child_queue, link.child_id}];
      }
    }
    for (const auto& [child, left] : *unmade) {
      if (left == 0) by_child[child.first].push_back(absl::StrCat(child.first, " ", child.second,
                                                                 " - confirm"));
    }
    if (by_child.empty()) return done();
    auto gather = std::make_shared<Gather<int>>(by_child.size(), [done](std::vector<int>) {
      done();
    });
    for (auto& [queue, news] : by_child) {
      store_->Resolve(queue, news, [gather, queue = queue](absl::StatusOr<int64_t> applied) {
        if (!applied.ok()) LogFailure("resolve", queue, applied.status());
        gather->Done({});
      });
    }
  };
  auto gather = std::make_shared<Gather<Answer>>(by_parent.size(), std::move(resolve));
  for (auto& [queue, group] : by_parent) {
    store_->Link(queue, group,
                 [gather, queue = queue, group = group](absl::StatusOr<std::vector<std::string>> news) {
                   Answer answer{group, {}};
                   if (news.ok()) {
                     answer.news = std::move(*news);
                   } else {
                     LogFailure("link", queue, news.status());
                   }
                   std::vector<Answer> part;
                   part.push_back(std::move(answer));
                   gather->Done(std::move(part));
                 });
  }
}

void DependencyLinks::Drain(const std::string& queue, std::function<void()> done) {
  {
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = draining_.try_emplace(queue);
    if (done) it->second.done.push_back(std::move(done));
    if (!inserted) {
      it->second.again = true;  // the drain running reads again
      return;
    }
  }
  DrainOnce(queue);
}

void DependencyLinks::DrainDone(const std::string& queue, bool more) {
  std::vector<std::function<void()>> waiting;
  {
    absl::MutexLock lock(&mu_);
    auto it = draining_.find(queue);
    if (it == draining_.end()) return;
    if (more || it->second.again) {
      it->second.again = false;
      more = true;
    } else {
      waiting = std::move(it->second.done);
      draining_.erase(it);
    }
  }
  if (more) return DrainOnce(queue);
  for (std::function<void()>& done : waiting) done();
}

void DependencyLinks::DrainOnce(const std::string& queue) {
  store_->ReadOutbox(queue, kDrainBatch, [this, queue](
                                             absl::StatusOr<std::vector<std::string>> news) {
    if (!news.ok()) {
      LogFailure("read outbox", queue, news.status());
      return DrainDone(queue, false);
    }
    if (news->empty()) return DrainDone(queue, false);
    std::map<std::string, std::vector<std::string>> by_child;
    for (const std::string& entry : *news) by_child[ChildQueueOf(entry)].push_back(entry);
    struct Delivery {
      absl::Mutex mu;
      size_t remaining;
      bool ok = true;
    };
    auto delivery = std::make_shared<Delivery>();
    delivery->remaining = by_child.size();
    auto read = std::make_shared<std::vector<std::string>>(std::move(*news));
    for (auto& [child, entries] : by_child) {
      store_->Resolve(child, entries, [this, queue, child = child, delivery,
                                       read](absl::StatusOr<int64_t> applied) {
        {
          absl::MutexLock lock(&delivery->mu);
          if (!applied.ok()) {
            LogFailure("resolve", child, applied.status());
            delivery->ok = false;
          }
          if (--delivery->remaining > 0) return;
        }
        // Removed only once every child's slot has it: what failed is read
        // again by the recovery pass (resolving twice changes nothing).
        if (!delivery->ok) return DrainDone(queue, false);
        store_->RemoveOutbox(queue, *read, [this, queue, read](absl::StatusOr<int64_t> removed) {
          if (!removed.ok()) LogFailure("remove outbox", queue, removed.status());
          DrainDone(queue, removed.ok() && read->size() >= static_cast<size_t>(kDrainBatch));
        });
      });
    }
  });
}

void DependencyLinks::Sweep(const std::string& queue) {
  Drain(queue);
  store_->StaleUnlinked(queue, store::kDependencyLinkGraceMs, kRelinkBatch,
                        [this, queue](absl::StatusOr<std::vector<store::DependencyLink>> links) {
                          if (!links.ok()) return LogFailure("unlinked", queue, links.status());
                          if (links->empty()) return;
                          base::Log(base::LogLevel::kInfo, "linking children left unlinked",
                                    {{"queue", queue}, {"links", static_cast<int64_t>(links->size())}});
                          Link(std::move(*links), [] {});
                        });
}

}  // namespace jobwire::core
