#include "broker/core/dependency_links.h"

#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/base/logging.h"
#include "broker/core/fan_in.h"
#include "broker/store/keys.h"

namespace jobwire::core {
namespace {

// News read from an outbox per call, at most.
constexpr int kDrainBatch = 100;
// Children a recovery pass links again per queue, at most.
constexpr int kRelinkBatch = 100;

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
  if (named.empty()) return done(std::move(jobs));
  // Shared by the peeks and the answer: slot i is the i-th queue of the map.
  auto queues = std::make_shared<const decltype(named)>(std::move(named));
  auto fan_in = std::make_shared<FanIn<std::vector<std::string>>>(
      queues->size(), queues->size(),
      [queues, jobs = std::move(jobs), done = std::move(done)](
          absl::StatusOr<std::vector<std::vector<std::string>>> missing) mutable {
        if (!missing.ok()) return done(missing.status());
        std::set<std::pair<std::string, std::string>> gone;  // (store queue, id)
        size_t slot = 0;
        for (const auto& [queue, ids] : *queues) {
          for (std::string& id : (*missing)[slot++]) gone.emplace(queue, std::move(id));
        }
        for (v1::EnqueueRequest& job : jobs) {
          for (std::string& entry : *job.mutable_depends_on()) {
            if (IsParentRef(entry) && gone.count(store::ParentOfRef(entry)) > 0) {
              entry = absl::StrCat("!", entry);
              break;  // enqueue.lua names the first
            }
          }
        }
        done(std::move(jobs));
      });
  size_t slot = 0;
  for (const auto& [queue, ids] : *queues) {
    store_->Peek(queue, std::vector<std::string>(ids.begin(), ids.end()),
                 [fan_in, slot](absl::StatusOr<std::vector<std::string>> missing) {
                   fan_in->Add(slot, std::move(missing));
                 });
    ++slot;
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
  for (store::DependencyLink& link : links) {
    std::string parent = store::ParentOfRef(link.ref).first;
    by_parent[std::move(parent)].push_back(std::move(link));
  }
  // A failed call is logged and answers no news, so the fan-in never fails.
  auto fan_in = std::make_shared<FanIn<LinkAnswer>>(
      by_parent.size(), by_parent.size(),
      [this, done = std::move(done)](absl::StatusOr<std::vector<LinkAnswer>> answers) {
        ResolveLinked(answers.ok() ? *std::move(answers) : std::vector<LinkAnswer>{}, done);
      });
  size_t slot = 0;
  for (auto& [queue, group] : by_parent) {
    store_->Link(queue, group,
                 [fan_in, slot, queue = queue,
                  group = group](absl::StatusOr<std::vector<std::string>> news) mutable {
                   LinkAnswer answer{std::move(group), {}};
                   if (news.ok()) {
                     answer.news = *std::move(news);
                   } else {
                     LogFailure("link", queue, news.status());
                   }
                   fan_in->Add(slot, std::move(answer));
                 });
    ++slot;
  }
}

void DependencyLinks::ResolveLinked(std::vector<LinkAnswer> answers, std::function<void()> done) {
  // child (store queue, id) -> its links not made
  std::map<std::pair<std::string, std::string>, int> unmade;
  // child store queue -> the news for it, then the confirms
  std::map<std::string, std::vector<std::string>> by_child;
  for (LinkAnswer& answer : answers) {
    for (size_t i = 0; i < answer.links.size(); ++i) {
      const store::DependencyLink& link = answer.links[i];
      int& left = unmade[{link.child_queue, link.child_id}];
      if (i >= answer.news.size()) {
        ++left;
        continue;
      }
      by_child[link.child_queue].push_back(std::move(answer.news[i]));
    }
  }
  for (const auto& [child, left] : unmade) {
    if (left == 0) {
      by_child[child.first].push_back(absl::StrCat(child.first, " ", child.second, " - confirm"));
    }
  }
  if (by_child.empty()) return done();
  auto fan_in = std::make_shared<FanIn<int64_t>>(
      by_child.size(), by_child.size(),
      [done = std::move(done)](absl::StatusOr<std::vector<int64_t>>) { done(); });
  size_t slot = 0;
  for (auto& [queue, news] : by_child) {
    store_->Resolve(queue, news, [fan_in, slot, queue = queue](absl::StatusOr<int64_t> applied) {
      if (!applied.ok()) LogFailure("resolve", queue, applied.status());
      fan_in->Add(slot, std::move(applied));
    });
    ++slot;
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
    auto read = std::make_shared<std::vector<std::string>>(std::move(*news));
    // Removed only once every child's slot has it: what failed is read
    // again by the recovery pass (resolving twice changes nothing).
    auto fan_in = std::make_shared<FanIn<int64_t>>(
        by_child.size(), by_child.size(),
        [this, queue, read](absl::StatusOr<std::vector<int64_t>> applied) {
          if (!applied.ok()) return DrainDone(queue, false);
          store_->RemoveOutbox(queue, *read, [this, queue, read](absl::StatusOr<int64_t> removed) {
            if (!removed.ok()) LogFailure("remove outbox", queue, removed.status());
            DrainDone(queue, removed.ok() && read->size() >= static_cast<size_t>(kDrainBatch));
          });
        });
    size_t slot = 0;
    for (auto& [child, entries] : by_child) {
      store_->Resolve(child, entries,
                      [fan_in, slot, child = child](absl::StatusOr<int64_t> applied) {
                        if (!applied.ok()) LogFailure("resolve", child, applied.status());
                        fan_in->Add(slot, std::move(applied));
                      });
      ++slot;
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
