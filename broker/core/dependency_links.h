// DependencyLinks: the broker's part in parents in other queues or
// partitions (EnqueueRequest.depends_on refs "<queue>/<id>";
// docs/semantics.md, "Parents in other queues"). A parent and its child
// live in different Redis slots, so this carries what one slot says to the
// other (store::DependencyStore has the scripts):
//   - Enqueue: Check the refs before the children are stored (a ref that
//     names no job refuses its job), then Link each stored child to its
//     parents and confirm the links in the child's slot.
//   - A parent that ended pushed news to its slot's outbox and published
//     'outbox' on its queue's channel: Drain delivers the news to the
//     children's slots, then removes it.
//   - Recovery (the LeaseReaper's idle-check pass, when reap.lua reports
//     work): Sweep drains the outbox and links again the children whose
//     links were not confirmed within store::kDependencyLinkGraceMs (their
//     broker stopped between storing and linking them).
// Every step is idempotent in Redis, so replicas may run them at once.
//
// Thread safety: every method may be called from any thread; callbacks run
// on the Redis event loop thread.
#ifndef JOBWIRE_BROKER_CORE_DEPENDENCY_LINKS_H_
#define JOBWIRE_BROKER_CORE_DEPENDENCY_LINKS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "broker/store/dependency_store.h"
#include "broker/store/job_store.h"
#include "jobwire/v1/broker.pb.h"

namespace jobwire::core {

// Whether a depends_on entry names a parent elsewhere ("<queue>/<id>").
bool IsParentRef(const std::string& entry);
// Whether any of `jobs` names a parent elsewhere.
bool HasParentRefs(const std::vector<v1::EnqueueRequest>& jobs);

class DependencyLinks {
 public:
  // `store` must outlive this object.
  explicit DependencyLinks(const store::DependencyStore* store);

  // Before `jobs` are stored: each ref of a job's depends_on that names no
  // job is written "!<ref>" (enqueue.lua refuses the job, naming the ref).
  // A Redis error fails the call (nothing stored).
  void Check(std::vector<v1::EnqueueRequest> jobs,
             store::Callback<std::vector<v1::EnqueueRequest>> done);

  // After `jobs` of `queue` were stored with `outcomes` (in order): links
  // every stored child with refs to its parents, then tells the children's
  // slots what the parents answered and confirms the links. `done` runs when
  // that is over, whatever it met: a link that failed is made by the
  // recovery pass.
  void LinkStored(const std::string& queue, const std::vector<v1::EnqueueRequest>& jobs,
                  const std::vector<store::EnqueueOutcome>& outcomes, std::function<void()> done);

  // Delivers the news in store queue `queue`'s outbox; `done` (optional)
  // runs once it is over (read to the end, or stopped by an error). A Drain
  // of a queue already draining here makes that one read again when it
  // ends, and its `done` waits for that.
  void Drain(const std::string& queue, std::function<void()> done = nullptr);

  // The recovery pass of store queue `queue`: Drain, and links again the
  // children left unlinked.
  void Sweep(const std::string& queue);

 private:
  // What one parent slot's link script answered for `links`: one news
  // entry per link, or none when the call failed.
  struct LinkAnswer {
    std::vector<store::DependencyLink> links;
    std::vector<std::string> news;
  };
  // Links `links` in their parents' slots, then ResolveLinked; `done` after.
  void Link(std::vector<store::DependencyLink> links, std::function<void()> done);
  // Applies `answers` in the children's slots, with a confirm for each
  // child whose every link was made; `done` after, whatever it met.
  void ResolveLinked(std::vector<LinkAnswer> answers, std::function<void()> done);
  // One read of the outbox of `queue` and its delivery; reads again while
  // a full batch came or another Drain asked.
  void DrainOnce(const std::string& queue);
  // Ends a drain of `queue`: another round when one was asked meanwhile.
  void DrainDone(const std::string& queue, bool more);

  const store::DependencyStore* const store_;
  absl::Mutex mu_;
  struct Draining {
    bool again = false;  // another Drain asked meanwhile
    std::vector<std::function<void()>> done;
  };
  // Queues draining here.
  absl::flat_hash_map<std::string, Draining> draining_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::core

#endif  // JOBWIRE_BROKER_CORE_DEPENDENCY_LINKS_H_
