// Every script declares every key it touches (docs/redis-layout.md,
// "Declared keys"): a lint over lua/*.lua, the runtime check that every store
// test runs its scripts with (lua/_check_keys.lua) shown to fire, and the
// tests' record field list against the scripts'.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "broker/store/job_store_test_util.h"
#include "broker/store/script_sources.h"
#include "gtest/gtest.h"

namespace jobwire::store {
namespace {

class ScriptKeysTest : public JobStoreTest {};

// A lint next to the runtime check: in lua/*.lua, the key argument of a
// redis.call / redis.pcall is never built in place (no "..") nor taken from
// ARGV (PUBLISH's channel aside), and no expression appends to a declared
// key (KEYS[i] .. x). Keys passed through a local variable are left to the
// runtime check.
TEST_F(ScriptKeysTest, NoScriptBuildsAKeyName) {
  for (const LuaSource& source : LuaSources()) {
    SCOPED_TRACE(std::string(source.name));
    const std::string text(source.text);
    std::vector<std::string> lines = absl::StrSplit(text, '\n');
    for (const std::string& raw : lines) {
      const std::string line = raw.substr(0, raw.find("--"));  // code only
      EXPECT_FALSE(line.find("KEYS[") != std::string::npos &&
                   (line.find("] ..") != std::string::npos))
          << "appends to a declared key: " << raw;
    }
    for (const char* call : {"redis.call(", "redis.pcall("}) {
      for (size_t at = text.find(call); at != std::string::npos; at = text.find(call, at + 1)) {
        // The argument after the command name, up to the next ',' or ')'.
        const size_t comma = text.find(',', at);
        const size_t close = text.find(')', at);
        if (comma == std::string::npos || (close != std::string::npos && close < comma)) continue;
        const std::string command = text.substr(at + strlen(call), comma - at - strlen(call));
        if (command == "'SPUBLISH'") continue;  // a shard channel, not a key
        size_t end = comma + 1;
        int depth = 0;
        for (; end < text.size(); ++end) {
          const char c = text[end];
          if (c == '(' || c == '[' || c == '{') ++depth;
          if (c == ')' || c == ']' || c == '}') {
            if (depth == 0) break;
            --depth;
          }
          if (c == ',' && depth == 0) break;
        }
        const std::string key = text.substr(comma + 1, end - comma - 1);
        EXPECT_EQ(key.find(".."), std::string::npos) << "a key built in place: " << key;
        EXPECT_EQ(key.find("ARGV"), std::string::npos) << "a key from ARGV: " << key;
      }
    }
  }
}

// Every store test runs its scripts with the declared-keys check
// (job_store_test_util.h); this shows that the check does fail a script on
// a key missing from KEYS, and passes one whose keys are all declared.
TEST_F(ScriptKeysTest, TheDeclaredKeysCheckFailsAnUndeclaredKey) {
  // Functions of a library built by a runner with the check, as the store
  // tests' runner is built.
  const std::vector<LuaSource> functions = {
      {"declared", "return redis.call('HSET', KEYS[1], 'f', 'v')"},
      {"undeclared", "return redis.call('HGET', KEYS[1] .. ':x', 'f')"},
      {"unknown", "return redis.call('GETDEL', KEYS[1])"},
  };
  ScriptRunner runner(client_.get(), /*check_declared_keys=*/true, functions);
  auto call = [&](const std::string& function) {
    return Sync<RedisReply>([&](auto cb) {
      runner.Eval(runner.Get(function), {"jw:{q}:jobs"}, {}, cb);
    });
  };
  JW_EXPECT_OK(call("declared").status());
  absl::StatusOr<RedisReply> undeclared = call("undeclared");
  EXPECT_EQ(undeclared.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(undeclared.status().message(), "undeclared key jw:{q}:jobs:x"))
      << undeclared.status();
  absl::StatusOr<RedisReply> unknown = call("unknown");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(unknown.status().message(), "no rule for command GETDEL"))
      << unknown.status();
  // A call after a failed one checks its own keys (the check's state is
  // the library's, kept between calls).
  JW_EXPECT_OK(call("declared").status());
}

// tests/job_record.h reads and damages records by field number: its field
// list is lua/_lib.lua's JOB_FIELDS.
TEST_F(ScriptKeysTest, TheTestsJobRecordFieldsAreTheScriptsFields) {
  std::string lib;
  for (const LuaSource& source : LuaSources()) {
    if (source.name == "_lib") lib = std::string(source.text);
  }
  const size_t from = lib.find("local JOB_FIELDS = {");
  ASSERT_NE(from, std::string::npos);
  const std::string list = lib.substr(from, lib.find('}', from) - from);
  std::vector<std::string> fields;
  for (size_t at = list.find('\''); at != std::string::npos; at = list.find('\'', at + 1)) {
    const size_t end = list.find('\'', at + 1);
    fields.push_back(list.substr(at + 1, end - at - 1));
    at = end;
  }
  ASSERT_EQ(fields.size(), testing::kJobRecordFields.size());
  for (size_t i = 0; i < fields.size(); ++i) EXPECT_EQ(fields[i], testing::kJobRecordFields[i]);
}

}  // namespace
}  // namespace jobwire::store
