// ParseRedisUrl, RedisAddress::ToString and RequireSingleHost, table-driven.
#include "broker/store/redis_url.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwire::store {
namespace {

struct Good {
  std::string url;
  std::string host;
  int port;
  std::string user;
  std::string password;
  int db;
  bool tls;
  size_t seeds;
  std::string printed;  // ToString()
};

TEST(ParseRedisUrlTest, Accepts) {
  const std::vector<Good> cases = {
      {"redis://127.0.0.1:6380", "127.0.0.1", 6380, "", "", 0, false, 1,
       "redis://127.0.0.1:6380/0"},
      {"redis://redis.example", "redis.example", 6379, "", "", 0, false, 1,
       "redis://redis.example:6379/0"},
      {"redis://", "127.0.0.1", 6379, "", "", 0, false, 1, "redis://127.0.0.1:6379/0"},
      {"redis://:pw@h:1/3", "h", 1, "", "pw", 3, false, 1, "redis://h:1/3"},
      {"redis://pw@h", "h", 6379, "", "pw", 0, false, 1, "redis://h:6379/0"},
      {"redis://u%40x:p%3Aw%25@h:2/", "h", 2, "u@x", "p:w%", 0, false, 1,
       "redis://u@x@h:2/0"},
      {"rediss://jobwire:s3cret@redis.prod:6380/1", "redis.prod", 6380, "jobwire", "s3cret", 1,
       true, 1, "rediss://jobwire@redis.prod:6380/1"},
      {"rediss://[::1]:6390", "::1", 6390, "", "", 0, true, 1, "rediss://[::1]:6390/0"},
      {"redis://[::1]", "::1", 6379, "", "", 0, false, 1, "redis://[::1]:6379/0"},
      {"redis://:pw@redis-0.redis:6379,redis-1.redis:6379,redis-2.redis", "redis-0.redis", 6379,
       "", "pw", 0, false, 3, "redis://redis-0.redis:6379,redis-1.redis:6379,redis-2.redis:6379/0"},
  };
  for (const Good& c : cases) {
    SCOPED_TRACE(c.url);
    absl::StatusOr<RedisAddress> a = ParseRedisUrl(c.url);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->host, c.host);
    EXPECT_EQ(a->port, c.port);
    EXPECT_EQ(a->user, c.user);
    EXPECT_EQ(a->password, c.password);
    EXPECT_EQ(a->db, c.db);
    EXPECT_EQ(a->tls, c.tls);
    ASSERT_EQ(a->seeds.size(), c.seeds);
    EXPECT_EQ(a->seeds[0].host, c.host);
    EXPECT_EQ(a->seeds[0].port, c.port);
    EXPECT_EQ(a->ToString(), c.printed);
    EXPECT_EQ(RequireSingleHost(*a).ok(), c.seeds == 1);
  }
}

TEST(ParseRedisUrlTest, SeedsKeepTheirOrderAndPorts) {
  absl::StatusOr<RedisAddress> a = ParseRedisUrl("rediss://a:1,[::2]:2,c");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->seeds.size(), 3u);
  EXPECT_EQ(a->seeds[1].host, "::2");
  EXPECT_EQ(a->seeds[1].port, 2);
  EXPECT_EQ(a->seeds[2].host, "c");
  EXPECT_EQ(a->seeds[2].port, 6379);
  absl::Status single = RequireSingleHost(*a);
  EXPECT_EQ(single.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(single.message(), "lists 3 hosts")) << single;
}

TEST(ParseRedisUrlTest, RefusesWithoutLeakingThePassword) {
  const std::string secret = "hunter2-secret";
  for (const std::string& url : std::vector<std::string>{
           "http://h:1",
           "redis:/h",
           "redis://:" + secret + "@h:0",
           "redis://:" + secret + "@h:65536",
           "redis://:" + secret + "@h:port",
           "redis://:" + secret + "@h:",
           "redis://:" + secret + "@h/x",
           "redis://:" + secret + "@h/-1",
           "redis://:" + secret + "%zz@h",
           "redis://:" + secret + "@a:1,,b:2",
           "redis://:" + secret + "@[::1:6379",
           "redis://:" + secret + "@[::1]x",
           "rediss://:" + secret + "@[::1]:",
       }) {
    SCOPED_TRACE(url);
    absl::StatusOr<RedisAddress> a = ParseRedisUrl(url);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_FALSE(absl::StrContains(a.status().message(), secret)) << a.status();
  }
}

}  // namespace
}  // namespace jobwire::store
