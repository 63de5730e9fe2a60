// DependencyStore: the Redis side of parents in other queues or partitions
// (EnqueueRequest.depends_on refs "<queue>/<id>"; docs/semantics.md,
// "Parents in other queues"; lua/_lib_deps.lua). A parent and its child live
// in different Redis slots, so each step is one script in one slot, and the
// broker (core::DependencyLinks) carries what one slot says to the other:
// Peek before the child is stored, Link and Resolve after, ReadOutbox,
// Resolve and RemoveOutbox when a parent ended, StaleUnlinked for recovery.
// Every step may run twice (two replicas, a retry): each is idempotent.
//
// Every method is asynchronous: the callback runs on the Redis event loop
// thread and must not block. Errors: UNAVAILABLE when Redis cannot be
// reached (the call may or may not have run), INTERNAL for an unexpected
// reply. Thread safety: methods may be called from any thread.
#ifndef JOBWIRE_BROKER_STORE_DEPENDENCY_STORE_H_
#define JOBWIRE_BROKER_STORE_DEPENDENCY_STORE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/job_store.h"
#include "broker/store/keys.h"
#include "broker/store/redis_commands.h"
#include "broker/store/script_runner.h"

namespace jobwire::store {

// A child's link to one parent elsewhere: the child (its store queue and
// id) and the ref it named the parent by ("<queue>/<parent id>").
struct DependencyLink {
  std::string child_queue;  // store name (partition)
  std::string child_id;
  std::string ref;
};

// The store name of the partition holding the parent `ref` names
// ("<queue>/<id>": the id's partition of the queue), and that id.
// REQUIRES: `ref` holds a '/'.
std::pair<std::string, std::string> ParentOfRef(absl::string_view ref);

class DependencyStore {
 public:
  // `client` and `scripts` must outlive the store.
  DependencyStore(RedisCommands* client, const ScriptRunner* scripts, std::string key_prefix);

  // deps_peek.lua: the ids of `ids` (jobs of store queue `queue`) that name
  // no job.
  void Peek(const std::string& queue, const std::vector<std::string>& ids,
            Callback<std::vector<std::string>> done) const;

  // deps_link.lua: links `links` (children elsewhere) to their parents in
  // store queue `queue`; returns, per link in order, the news for the
  // child's slot ("<child queue> <child id> <ref> <kind> <result>",
  // deps_resolve.lua's form).
  void Link(const std::string& queue, const std::vector<DependencyLink>& links,
            Callback<std::vector<std::string>> done) const;

  // deps_resolve.lua: tells children of store queue `queue` the `news`
  // (Link's answers, outbox entries, or "<queue> <id> - confirm" once every
  // link of child <id> is made); returns how many news changed a child.
  void Resolve(const std::string& queue, const std::vector<std::string>& news,
               Callback<int64_t> done) const;

  // The first `max` news of store queue `queue`'s outbox (LRANGE).
  void ReadOutbox(const std::string& queue, int max,
                  Callback<std::vector<std::string>> done) const;
  // deps_outbox.lua: removes delivered `news` from the outbox.
  void RemoveOutbox(const std::string& queue, const std::vector<std::string>& news,
                    Callback<int64_t> done) const;

  // deps_unlinked.lua: up to `max` children of store queue `queue` whose
  // links were not confirmed within `grace_ms` of being stored, each with
  // the refs it still waits for.
  void StaleUnlinked(const std::string& queue, int64_t grace_ms, int max,
                     Callback<std::vector<DependencyLink>> done) const;

 private:
  Keys KeysFor(const std::string& queue) const { return Keys(key_prefix_, queue); }

  RedisCommands* const client_;  // ReadOutbox only
  const ScriptRunner* const scripts_;
  const std::string key_prefix_;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_DEPENDENCY_STORE_H_
