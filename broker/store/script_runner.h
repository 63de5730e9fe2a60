// ScriptRunner: runs the lua/ scripts by SHA (EVALSHA) and falls back to
// EVAL with the full text when Redis answers NOSCRIPT (after a restart or a
// SCRIPT FLUSH), which also loads the script again.
#ifndef JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_
#define JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_

#include <map>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "broker/store/redis_client.h"

namespace jobwire::store {

struct Script {
  std::string name;  // lua file stem
  std::string text;  // lua/_lib.lua followed by the script
  std::string sha1;  // hex SHA1 of text, as Redis computes it
};

// Thread safety: Eval may be called from any thread.
class ScriptRunner {
 public:
  // Loads every embedded script. `client` must outlive the runner.
  explicit ScriptRunner(RedisClient* client);

  // The script built from lua/<name>.lua. REQUIRES: such a file exists.
  const Script& Get(absl::string_view name) const;

  // Runs `script` with `keys` and `args`; `callback` gets the script's reply,
  // or UNAVAILABLE / INTERNAL as RedisClient::Command documents.
  void Eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
            RedisClient::ReplyCallback callback) const;

 private:
  RedisClient* const client_;
  std::map<std::string, Script, std::less<>> scripts_;
};

}  // namespace jobwire::store

#endif  // JOBWIRE_BROKER_STORE_SCRIPT_RUNNER_H_
