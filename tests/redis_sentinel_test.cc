// The Sentinel test harness (tests/redis_sentinel.h) against real
// redis-server and sentinel processes: the group comes up ready, and a
// killed master is replaced by its replica with the data it had replicated.
#include "tests/redis_sentinel.h"

#include "gtest/gtest.h"

namespace jobwire::testing {
namespace {

TEST(RedisSentinelGroupTest, EverySentinelNamesTheMaster) {
  RedisSentinelGroup group;
  JW_ASSERT_OK(group.Start());
  ASSERT_EQ(group.sentinel_ports().size(), 3u);
  for (int s : group.sentinel_ports()) {
    absl::StatusOr<int> master = group.MasterPort(s);
    JW_ASSERT_OK(master.status());
    EXPECT_EQ(*master, group.data_ports()[0]);
  }
}

TEST(RedisSentinelGroupTest, AKilledMasterIsReplacedByItsReplica) {
  RedisSentinelGroup group;
  JW_ASSERT_OK(group.Start());
  const int old_master = group.data_ports()[0];
  // WAIT on the SET's own connection: on the replica before the kill.
  absl::StatusOr<std::vector<RedisReply>> set =
      RedisCommandsAt(old_master, "", {{"SET", "k", "v"}, {"WAIT", "1", "5000"}});
  JW_ASSERT_OK(set.status());
  EXPECT_EQ((*set)[0].str, "OK");
  ASSERT_EQ((*set)[1].integer, 1);

  group.Kill(old_master);
  absl::StatusOr<int> promoted = group.WaitMaster(old_master, absl::Seconds(30));
  JW_ASSERT_OK(promoted.status());
  EXPECT_EQ(*promoted, group.data_ports()[1]);
  absl::StatusOr<RedisReply> get = group.CommandAt(*promoted, {"GET", "k"});
  JW_ASSERT_OK(get.status());
  EXPECT_EQ(get->str, "v");
}

}  // namespace
}  // namespace jobwire::testing
