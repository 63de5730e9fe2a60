// ScriptRunner: runs the lua/ scripts as the functions of one Redis
// function library (FCALL). The library holds the helper libraries once,
// then each script's body as a function: lua/_lib.lua, _lib_deps.lua
// (dependencies), _lib_settle.lua (settle_failure), _lib_key_rate.lua (rate
// limits per concurrency key), _lib_claim.lua, each after those whose
// helpers it uses. A call so pays for its own work only: an EVAL'd script
// would define every helper again on each call (about 15 us of Redis CPU
// per call with hot caches, several times that at a low rate).
//
// The library is named after a hash of its text (jobwire_<hash>), its
// functions jw_<hash>_<script>, so brokers of different versions share a
// Redis without replacing each other's scripts. A call whose node does not
// have the library (a fresh or restarted Redis, a failover to a node that
// never had it, FUNCTION FLUSH) loads it there (FUNCTION LOAD, on the node
// of the call's first key) and calls again. One load is in flight at a time:
// calls that meet the missing library meanwhile wait for it, then call
// again; a call that still meets it (another cluster node) loads it itself,
// once. FUNCTION LOAD is refused while Redis is over its maxmemory
// (noeviction); Redis keeps a library in its RDB and AOF and replicates it,
// so that only matters for a Redis that lost its library while full.
//
// A script's first line may be a Redis 7 shebang ("#!lua flags=allow-oom"):
// its flags become its function's flags, with the same meaning. Which
// scripts run above Redis' maxmemory is in docs/guarantees.md ("Redis memory
// limit").
#ifndef JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_
#define JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

#include "broker/store/redis_commands.h"
#include "broker/store/script_sources.h"

namespace jobwire::store {

struct Script {
  std::string name;      // lua file stem
  std::string flags;     // the script's shebang line ("#!lua flags=..."); empty: none
  std::string function;  // its function's name in the library: jw_<hash>_<name>
};

// Thread safety: Eval may be called from any thread.
class ScriptRunner {
 public:
  // Builds the library from every embedded script (lua/*.lua but those
  // whose name starts with "_", which are helpers). `client` must outlive
  // the runner. With `check_declared_keys` (tests only), lua/_check_keys.lua
  // goes first and every function starts with its check: a command on a key
  // the script did not declare in KEYS fails the script with an error naming
  // the key (docs/redis-layout.md). `extra_functions` (tests and the
  // fuzzer only) are built as more scripts, after the embedded ones.
  explicit ScriptRunner(RedisCommands* client, bool check_declared_keys = false,
                        const std::vector<LuaSource>& extra_functions = {});

  // The library's name and its text, as FUNCTION LOAD takes it.
  const std::string& library_name() const { return library_name_; }
  const std::string& library() const { return library_; }

  // The script built from lua/<name>.lua (or from the extra function
  // `name`). REQUIRES: it exists.
  const Script& Get(absl::string_view name) const;

  // Runs `script` with `keys` and `args`; `callback` gets the script's reply,
  // or UNAVAILABLE / INTERNAL as RedisCommands documents, or
  // RESOURCE_EXHAUSTED when Redis refused the script because it is over its
  // maxmemory (a script without allow-oom; nothing was written). The
  // message names the script ("... enqueue refused ...").
  void Eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
            RedisCommands::ReplyCallback callback) const;

 private:
  // Sends `argv` (FCALL) and answers `done`; when the node lacks the
  // library, loads it as the class comment says and calls again (`loads`:
  // the loads this call has waited for or made so far).
  void Send(RedisCommands::Args argv, RedisCommands::ReplyCallback done, int loads) const;
  // Loads the library on the node of `key` (any node for ""), or waits for
  // the load in flight; then runs `then` with the load's error, or OK (also
  // after waiting, whatever that load met).
  void Load(const std::string& key, std::function<void(absl::Status)> then) const;

  RedisCommands* const client_;
  std::string library_name_;
  std::string library_;
  std::map<std::string, Script, std::less<>> scripts_;
  mutable absl::Mutex mu_;
  // While a load is in flight: the calls waiting for it.
  mutable bool loading_ ABSL_GUARDED_BY(mu_) = false;
  mutable std::vector<std::function<void()>> waiting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_
