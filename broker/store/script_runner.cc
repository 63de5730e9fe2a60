#include "broker/store/script_runner.h"

#include <openssl/sha.h>

#include <cstdlib>
#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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

}  // namespace

ScriptRunner::ScriptRunner(RedisCommands* client, bool check_declared_keys) : client_(client) {
  std::string lib;
  for (absl::string_view name : kLibNames) {
    for (const LuaSource& source : LuaSources()) {
      if (source.name == name) absl::StrAppend(&lib, source.text, "\n");
    }
  }
  if (check_declared_keys) {
    for (const LuaSource& source : LuaSources()) {
      if (source.name == kCheckKeysName) lib = absl::StrCat(source.text, "\n", lib);
    }
  }
  for (const LuaSource& source : LuaSources()) {
    if (absl::StartsWith(source.name, "_")) continue;
    Script script;
    script.name = std::string(source.name);
    // Redis reads the flags only from the very first line of the text.
    absl::string_view shebang = Shebang(source.text);
    absl::string_view body = source.text.substr(shebang.size());
    script.flags = std::string(shebang);
    script.text = shebang.empty() ? absl::StrCat(lib, "\n", body)
                                  : absl::StrCat(shebang, "\n", lib, body);
    script.sha1 = Sha1Hex(script.text);
    scripts_.emplace(script.name, std::move(script));
  }
}

const Script& ScriptRunner::Get(absl::string_view name) const {
  auto it = scripts_.find(name);
  if (it == scripts_.end()) std::abort();  // a build error: lua/<name>.lua is missing
  return it->second;
}

void ScriptRunner::Eval(const Script& script, std::vector<std::string> keys,
                        std::vector<std::string> args, RedisCommands::ReplyCallback callback) const {
  auto argv = std::make_shared<std::vector<std::string>>();
  argv->reserve(3 + keys.size() + args.size());
  argv->push_back("EVALSHA");
  argv->push_back(script.sha1);
  argv->push_back(absl::StrCat(keys.size()));
  for (auto& k : keys) argv->push_back(std::move(k));
  for (auto& a : args) argv->push_back(std::move(a));

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
  Send(script, std::move(argv), std::move(done), /*retry=*/false);
}

void ScriptRunner::Send(const Script& script, Argv argv, RedisCommands::ReplyCallback done,
                        bool retry) const {
  std::vector<std::string> command = *argv;
  client_->Command(std::move(command), [this, &script, argv, retry, done = std::move(done)](
                                           absl::StatusOr<RedisReply> reply) mutable {
    if (!reply.ok() || !reply->is_error() || !absl::StartsWith(reply->str, "NOSCRIPT")) {
      return done(std::move(reply));
    }
    {
      absl::MutexLock lock(&mu_);
      auto [it, first] = reloading_.try_emplace(&script);
      if (!first && !retry) {
        it->second.push_back([this, &script, argv, done = std::move(done)]() mutable {
          Send(script, std::move(argv), std::move(done), /*retry=*/true);
        });
        return;
      }
      retry = first;  // from here: whether this call wakes the waiters
    }
    (*argv)[0] = "EVAL";
    (*argv)[1] = script.text;
    client_->Command(std::move(*argv), [this, &script, wake = retry, done = std::move(done)](
                                           absl::StatusOr<RedisReply> reply) mutable {
      done(std::move(reply));
      if (!wake) return;
      std::vector<std::function<void()>> waiting;
      {
        absl::MutexLock lock(&mu_);
        auto it = reloading_.find(&script);
        waiting = std::move(it->second);
        reloading_.erase(it);
      }
      for (auto& resume : waiting) resume();
    });
  });
}

}  // namespace jobwire::store
