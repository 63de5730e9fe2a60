#include "broker/store/script_runner.h"

#include <openssl/sha.h>

#include <cstdlib>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "broker/base/error_reason.h"
#include "broker/store/script_sources.h"

namespace jobwire::store {
namespace {

// The helper libraries every script gets, in this order: each may use the
// local functions of those before it.
constexpr absl::string_view kLibNames[] = {"_lib", "_lib_deps", "_lib_settle", "_lib_key_rate",
                                         "_lib_claim"};
constexpr absl::string_view kCheckKeysName = "_check_keys";

// A script's first line when it is a Redis 7 shebang ("#!lua flags=..."),
// without its newline; empty otherwise.
absl::string_view Shebang(absl::string_view source) {
  if (!absl::StartsWith(source, "#!")) return {};
  return source.substr(0, source.find('\n'));
}

// Redis refuses a script without allow-oom while over its maxmemory (with
// noeviction) with an error reply starting "OOM", which arrives from
// RedisCommands as INTERNAL "redis: OOM ...".
bool IsOomRefusal(const absl::StatusOr<RedisReply>& reply) {
  if (reply.ok()) return reply->is_error() && absl::StartsWith(reply->str, "OOM ");
  if (reply.status().code() != absl::StatusCode::kInternal) return false;
  absl::string_view message = reply.status().message();
  absl::ConsumePrefix(&message, "redis: ");
  return absl::StartsWith(message, "OOM ");
}

std::string Sha1Hex(absl::string_view text) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

// The Lua list of the flags of shebang `shebang` ("#!lua flags=a,b"):
// "'a', 'b'"; empty for none.
std::string FlagList(absl::string_view shebang) {
  const size_t at = shebang.find("flags=");
  if (at == absl::string_view::npos) return "";
  std::vector<std::string> quoted;
  for (absl::string_view flag : absl::StrSplit(shebang.substr(at + 6), ',', absl::SkipEmpty())) {
    quoted.push_back(absl::StrCat("'", absl::StripAsciiWhitespace(flag), "'"));
  }
  return absl::StrJoin(quoted, ", ");
}

// Whether `reply` says that the node has no such function: the library is
// not loaded there.
bool IsMissingFunction(const absl::StatusOr<RedisReply>& reply) {
  return reply.ok() && reply->is_error() && absl::StartsWith(reply->str, "ERR Function not found");
}

}  // namespace

ScriptRunner::ScriptRunner(RedisCommands* client, bool check_declared_keys,
                           const std::vector<LuaSource>& extra_functions)
    : client_(client) {
  std::string lib;
  if (check_declared_keys) {
    for (const LuaSource& source : LuaSources()) {
      if (source.name == kCheckKeysName) absl::StrAppend(&lib, source.text, "\n");
    }
  }
  for (absl::string_view name : kLibNames) {
    for (const LuaSource& source : LuaSources()) {
      if (source.name == name) absl::StrAppend(&lib, source.text, "\n");
    }
  }
  // One function per script, its body as the function's body.
  std::vector<LuaSource> sources;
  for (const LuaSource& source : LuaSources()) {
    if (!absl::StartsWith(source.name, "_")) sources.push_back(source);
  }
  sources.insert(sources.end(), extra_functions.begin(), extra_functions.end());
  std::string functions;
  for (const LuaSource& source : sources) {
    Script script;
    script.name = std::string(source.name);
    script.flags = std::string(Shebang(source.text));
    absl::StrAppend(&functions, "register{function_name='jw_@_", script.name, "', flags={",
                    FlagList(script.flags), "}, callback=function(KEYS, ARGV)\n",
                    check_declared_keys ? "begin_checked_call(KEYS)\n" : "", "begin_call()\n",
                    source.text.substr(script.flags.size()), "\nend}\n");
    scripts_.emplace(script.name, std::move(script));
  }
  // `register` is taken before _check_keys.lua hides `redis`.
  std::string text = absl::StrCat("local register = redis.register_function\n", lib, functions);
  const std::string hash = Sha1Hex(text).substr(0, 16);
  absl::StrReplaceAll({{"'jw_@_", absl::StrCat("'jw_", hash, "_")}}, &text);
  library_name_ = absl::StrCat("jobwire_", hash);
  library_ = absl::StrCat("#!lua name=", library_name_, "\n", text);
  for (auto& [name, script] : scripts_) script.function = absl::StrCat("jw_", hash, "_", name);
}

const Script& ScriptRunner::Get(absl::string_view name) const {
  auto it = scripts_.find(name);
  if (it == scripts_.end()) std::abort();  // a build error: lua/<name>.lua is missing
  return it->second;
}

void ScriptRunner::Eval(const Script& script, std::vector<std::string> keys,
                        std::vector<std::string> args, RedisCommands::ReplyCallback callback) const {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("FCALL");
  argv.push_back(script.function);
  argv.push_back(absl::StrCat(keys.size()));
  for (auto& k : keys) argv.push_back(std::move(k));
  for (auto& a : args) argv.push_back(std::move(a));

  RedisCommands::ReplyCallback done = [&script, callback = std::move(callback)](
                                        absl::StatusOr<RedisReply> reply) mutable {
    if (IsOomRefusal(reply)) {
      const std::string redis_error = reply.ok() ? reply->str : std::string(reply.status().message());
      reply = base::WithRetryDelay(
          base::WithReason(absl::ResourceExhaustedError(absl::StrCat(
                               "redis is over its maxmemory limit (noeviction): ", script.name,
                               " refused; retry once memory is freed (", redis_error, ")")),
                           base::reason::kRedisOutOfMemory),
          absl::Seconds(1));
    }
    callback(std::move(reply));
  };
  Send(std::make_shared<const std::vector<std::string>>(std::move(argv)), std::move(done),
       /*loads=*/0);
}

void ScriptRunner::Send(RedisCommands::Args argv, RedisCommands::ReplyCallback done,
                        int loads) const {
  client_->Command(argv, [this, argv, loads, done = std::move(done)](
                                           absl::StatusOr<RedisReply> reply) mutable {
    if (!IsMissingFunction(reply)) return done(std::move(reply));
    if (loads >= 2) {
      return done(absl::InternalError(absl::StrCat("redis: ", reply->str, " (library ",
                                                   library_name_, " loaded twice)")));
    }
    const std::string key = argv->size() > 3 && (*argv)[2] != "0" ? (*argv)[3] : "";
    Load(key, [this, argv, loads, done = std::move(done)](absl::Status loaded) mutable {
      if (!loaded.ok()) return done(loaded);
      Send(std::move(argv), std::move(done), loads + 1);
    });
  });
}

void ScriptRunner::Load(const std::string& key, std::function<void(absl::Status)> then) const {
  {
    absl::MutexLock lock(&mu_);
    if (loading_) {
      waiting_.push_back([then = std::move(then)] { then(absl::OkStatus()); });
      return;
    }
    loading_ = true;
  }
  client_->CommandAt(key, {"FUNCTION", "LOAD", "REPLACE", library_},
                     [this, then = std::move(then)](absl::StatusOr<RedisReply> reply) {
                       std::vector<std::function<void()>> waiting;
                       {
                         absl::MutexLock lock(&mu_);
                         loading_ = false;
                         waiting.swap(waiting_);
                       }
                       if (reply.ok() && reply->is_error()) {
                         reply = absl::InternalError(absl::StrCat("redis: ", reply->str));
                       }
                       then(reply.status());
                       // A failed load leaves them to load again themselves.
                       for (auto& resume : waiting) resume();
                     });
}

}  // namespace jobwire::store
