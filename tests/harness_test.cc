// Checks of the test harness itself (needs redis-server, not the broker).
#include <signal.h>

#include "gtest/gtest.h"
#include "hiredis/hiredis.h"
#include "tests/test_harness.h"

namespace jobwire::testing {
namespace {

TEST(RedisServerTest, CommandsRunAgainstTheRealServer) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  EXPECT_GT(redis.port(), 0);
  EXPECT_EQ(redis.DbSize(), 0);

  absl::StatusOr<RedisReply> set = redis.Command("SET", "k", 42);
  JW_ASSERT_OK(set.status());
  EXPECT_EQ(set->str, "OK");
  absl::StatusOr<RedisReply> get = redis.Command("GET", "k");
  JW_ASSERT_OK(get.status());
  EXPECT_EQ(get->type, REDIS_REPLY_STRING);
  EXPECT_EQ(get->str, "42");
  EXPECT_EQ(redis.DbSize(), 1);

  absl::StatusOr<RedisReply> bad = redis.Command("NOSUCHCOMMAND");
  JW_ASSERT_OK(bad.status());
  EXPECT_TRUE(bad->is_error());
}

TEST(RedisServerTest, RestartKeepsThePortAndLosesTheData) {
  RedisServer redis;
  JW_ASSERT_OK(redis.Start());
  const int port = redis.port();
  JW_ASSERT_OK(redis.Command("SET", "k", "v").status());

  redis.Stop();
  EXPECT_EQ(redis.Command("PING").status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(redis.DbSize(), -1);

  JW_ASSERT_OK(redis.Start());
  EXPECT_EQ(redis.port(), port);
  EXPECT_EQ(redis.DbSize(), 0);

  JW_ASSERT_OK(redis.Command("SET", "k", "v").status());
  JW_ASSERT_OK(redis.Restart());
  EXPECT_EQ(redis.port(), port);
  EXPECT_EQ(redis.DbSize(), 0);
}

TEST(SubprocessTest, TerminateStopsAndReapsTheChild) {
  Subprocess sleeper;
  JW_ASSERT_OK(sleeper.Spawn({"sleep", "30"}));
  EXPECT_TRUE(sleeper.Running());
  const int status = sleeper.Terminate(absl::Seconds(5));
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(sleeper.Running());
}

TEST(SubprocessTest, MissingBinaryExitsAtOnce) {
  Subprocess missing;
  JW_ASSERT_OK(missing.Spawn({"/nonexistent/jobwire-no-such-binary"}));
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (missing.Running() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_FALSE(missing.Running());
}

}  // namespace
}  // namespace jobwire::testing
