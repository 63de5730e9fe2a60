// ScriptRunner: runs the lua/ scripts by SHA (EVALSHA) and falls back to
// EVAL with the full text when Redis answers NOSCRIPT (after a restart or a
// SCRIPT FLUSH), which also loads the script again.
//
// A script's first line may be a Redis 7 shebang ("#!lua flags=allow-oom"):
// Redis reads the flags only from the first line of the text it receives,
// so the shebang goes first and the helper libraries (lua/_lib.lua, then
// lua/_lib_claim.lua, which uses it) after it. Which scripts run
// above Redis' maxmemory is in docs/guarantees.md ("Redis memory limit").
#ifndef JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_
#define JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_

#include <map>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

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
  RedisCommands* const client_;
  std::map<std::string, Script, std::less<>> scripts_;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_
