// ScriptRunner: runs the lua/ scripts by SHA (EVALSHA) and falls back to
// EVAL with the full text when Redis answers NOSCRIPT (after a restart, a
// failover to a node that never ran the script, or a SCRIPT FLUSH), which
// also loads the script again. One call per script sends the text: calls
// that meet NOSCRIPT while that EVAL is on its way wait for its answer and
// then retry by SHA (a script's text is about 50 KB with its helpers; a
// broker with thousands of calls in flight would otherwise queue that much
// per call). A retry that meets NOSCRIPT again (another cluster node, or
// another flush) sends the text itself.
//
// A script's first line may be a Redis 7 shebang ("#!lua flags=allow-oom"):
// Redis reads the flags only from the first line of the text it receives,
// so the shebang goes first and the helper libraries after it, each after
// those whose helpers it uses: lua/_lib.lua, _lib_deps.lua (dependencies),
// _lib_settle.lua (settle_failure), _lib_key_rate.lua (rate limits per
// concurrency key), _lib_claim.lua. Which scripts run
// above Redis' maxmemory is in docs/guarantees.md ("Redis memory limit").
#ifndef JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_
#define JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

#include "broker/store/redis_commands.h"

namespace jobwire::store {

struct Script {
  std::string name;  // lua file stem
  std::string flags;  // the script's shebang line ("#!lua flags=..."); empty: none
  std::string text;   // the shebang line, then the helper libraries, then the script
  std::string sha1;   // hex SHA1 of text, as Redis computes it
};

// Thread safety: Eval may be called from any thread.
class ScriptRunner {
 public:
  // Loads every embedded script (lua/*.lua but those whose name starts with
  // "_", which are helpers). `client` must outlive the runner. With
  // `check_declared_keys` (tests only), lua/_check_keys.lua goes before each
  // script: a command on a key the script did not declare in KEYS fails the
  // script with an error naming the key (docs/redis-layout.md).
  explicit ScriptRunner(RedisCommands* client, bool check_declared_keys = false);

  // The script built from lua/<name>.lua. REQUIRES: such a file exists.
  const Script& Get(absl::string_view name) const;

  // Runs `script` with `keys` and `args`; `callback` gets the script's reply,
  // or UNAVAILABLE / INTERNAL as RedisCommands documents, or
  // RESOURCE_EXHAUSTED when Redis refused the script because it is over its
  // maxmemory (a script without allow-oom; nothing was written). The
  // message names the script ("... enqueue refused ...").
  void Eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
            RedisCommands::ReplyCallback callback) const;

 private:
  using Argv = std::shared_ptr<std::vector<std::string>>;

  // Sends `argv` (EVALSHA of `script`) and answers `done`; on NOSCRIPT,
  // loads the script as the class comment says (`retry`: this call already
  // waited for one reload).
  void Send(const Script& script, Argv argv, RedisCommands::ReplyCallback done,
            bool retry) const;

  RedisCommands* const client_;
  std::map<std::string, Script, std::less<>> scripts_;
  mutable absl::Mutex mu_;
  // The scripts whose text one call is sending (EVAL after NOSCRIPT), each
  // with the calls waiting for its answer to retry by SHA.
  mutable absl::flat_hash_map<const Script*, std::vector<std::function<void()>>> reloading_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_
