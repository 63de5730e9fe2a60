// The Redis Cluster test harness (tests/redis_cluster.h) against real
// redis-server nodes, and store::KeySlot against the cluster's own
// CLUSTER KEYSLOT.
#include "tests/redis_cluster.h"

#include <string>
#include <vector>

#include "broker/store/key_slot.h"
#include "gtest/gtest.h"

namespace jobwire::testing {
namespace {

class RedisClusterTest : public ::testing::Test {
 protected:
  void SetUp() override { JW_ASSERT_OK(cluster_.Start()); }

  // The reply of `argv` on `port`, which must not fail to arrive.
  RedisReply At(int port, const std::vector<std::string>& argv) {
    absl::StatusOr<RedisReply> r = cluster_.CommandAt(port, argv);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RedisReply{};
  }

  RedisCluster cluster_;
};

TEST_F(RedisClusterTest, KeySlotMatchesTheCluster) {
  const int port = cluster_.ports()[0];
  const std::vector<std::string> keys = {
      "",        "a",           "foo",         "123456789", "{user1000}.following",
      "{}x",     "x{}",         "{a}{b}",      "a{b}c{d}",  "{jobwire}:{emails}:pending",
      "{",       "}{",          "{ab",         "é",         std::string("\0\xff\x01", 3),
      "jobwire:{emails#7}:job:42"};
  for (const std::string& key : keys) {
    RedisReply slot = At(port, {"CLUSTER", "KEYSLOT", key});
    EXPECT_EQ(store::KeySlot(key), slot.integer) << "key '" << key << "'";
  }
  EXPECT_EQ(store::Crc16("123456789"), 0x31C3);  // the XMODEM check value
}

TEST_F(RedisClusterTest, StartsThreeMastersServingEverySlot) {
  absl::StatusOr<std::vector<int>> masters = cluster_.MasterPorts();
  JW_ASSERT_OK(masters.status());
  EXPECT_EQ(masters->size(), 3u);
  EXPECT_EQ(cluster_.ports().size(), 6u);
  RedisReply info = At(cluster_.ports()[5], {"CLUSTER", "INFO"});
  EXPECT_NE(info.str.find("cluster_known_nodes:6"), std::string::npos) << info.str;
}

TEST_F(RedisClusterTest, MoveSlotMovesTheKeysAndRedirects) {
  const std::string key = "{moving}k";
  const int slot = store::KeySlot(key);
  absl::StatusOr<int> from = cluster_.MasterOfSlot(slot);
  JW_ASSERT_OK(from.status());
  EXPECT_EQ(At(*from, {"SET", key, "v"}).str, "OK");
  absl::StatusOr<std::vector<int>> masters = cluster_.MasterPorts();
  JW_ASSERT_OK(masters.status());
  const int to = (*masters)[0] != *from ? (*masters)[0] : (*masters)[1];

  JW_ASSERT_OK(cluster_.MoveSlot(slot, to));
  absl::StatusOr<int> now = cluster_.MasterOfSlot(slot);
  JW_ASSERT_OK(now.status());
  EXPECT_EQ(*now, to);
  EXPECT_EQ(At(to, {"GET", key}).str, "v");
  RedisReply moved = At(*from, {"GET", key});
  EXPECT_TRUE(moved.is_error());
  EXPECT_EQ(moved.str, absl::StrCat("MOVED ", slot, " 127.0.0.1:", to));
}

TEST_F(RedisClusterTest, AKilledMasterIsReplacedByItsReplica) {
  const std::string key = "{failover}k";
  const int slot = store::KeySlot(key);
  absl::StatusOr<int> master = cluster_.MasterOfSlot(slot);
  JW_ASSERT_OK(master.status());
  // WAIT on the SET's own connection: on the replica before the kill.
  absl::StatusOr<std::vector<RedisReply>> set =
      RedisCommandsAt(*master, "", {{"SET", key, "v"}, {"WAIT", "1", "5000"}});
  JW_ASSERT_OK(set.status());
  EXPECT_EQ((*set)[0].str, "OK");
  ASSERT_EQ((*set)[1].integer, 1);

  cluster_.Kill(*master);
  JW_ASSERT_OK(cluster_.WaitHealthy(absl::Seconds(30)));
  absl::StatusOr<int> promoted = cluster_.MasterOfSlot(slot);
  JW_ASSERT_OK(promoted.status());
  EXPECT_NE(*promoted, *master);
  EXPECT_EQ(At(*promoted, {"GET", key}).str, "v");
}

}  // namespace
}  // namespace jobwire::testing
